package catalog

import "encoding/binary"

// KeyLen is the length of a product key.
const KeyLen = 17

const productKeyPrefix = 'p'

// AppendKey appends the index key of product id in group to dst.
func AppendKey(dst []byte, group, id int64) []byte {
	dst = append(dst, productKeyPrefix)
	dst = binary.BigEndian.AppendUint64(dst, uint64(group))
	return binary.BigEndian.AppendUint64(dst, uint64(id))
}

// putKey writes the key of product id in group into k.
func putKey(k *[KeyLen]byte, group, id int64) {
	k[0] = productKeyPrefix
	binary.BigEndian.PutUint64(k[1:9], uint64(group))
	binary.BigEndian.PutUint64(k[9:17], uint64(id))
}

// ParseKey returns the group and product id of a product key.
func ParseKey(k []byte) (group, id int64, ok bool) {
	if len(k) != KeyLen || k[0] != productKeyPrefix {
		return 0, 0, false
	}
	return int64(binary.BigEndian.Uint64(k[1:9])), int64(binary.BigEndian.Uint64(k[9:17])), true
}
