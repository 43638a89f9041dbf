package catalog

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/rtbd/rtbd/catalog/catalogpb"
)

// ValidateProductsRequest checks a GetProducts request: at most maxIDs ids
// in all, every product_group_id and product id > 0.
func ValidateProductsRequest(req *catalogpb.ProductsRequest, maxIDs int) error {
	if req == nil {
		return fmt.Errorf("%w: nil request", ErrInvalidArgument)
	}
	n := 0
	for i, g := range req.Groups {
		if g.GetProductGroupId() <= 0 {
			return fmt.Errorf("%w: groups[%d]: product_group_id must be > 0, got %d", ErrInvalidArgument, i, g.GetProductGroupId())
		}
		for j, id := range g.GetProductIds() {
			if id <= 0 {
				return fmt.Errorf("%w: groups[%d] (group %d): product_ids[%d] must be > 0, got %d",
					ErrInvalidArgument, i, g.ProductGroupId, j, id)
			}
		}
		if n += len(g.GetProductIds()); n > maxIDs {
			return fmt.Errorf("%w: more than the maximum %d product ids", ErrInvalidArgument, maxIDs)
		}
	}
	return nil
}

// recordsScratch is one AppendProducts call's working memory.
type recordsScratch struct {
	order []int32
	vals  []byte
	offs  [][2]int32 // per id of a group: its value in vals, or {-1, -1}
	key   [KeyLen]byte
}

var recordsPool = sync.Pool{New: func() any { return new(recordsScratch) }}

// AppendProducts appends to dst the protobuf encoding of the
// ProductsResponse for req (GetProducts): one Record per id asked, group
// by group, in the order asked, with the value stored in the index (empty
// when the group does not hold the id; out-of-stock products included),
// and the version read. Values are copied from Pebble as stored: nothing
// is decoded. It returns the number of records and how many had a value.
func (l *Local) AppendProducts(ctx context.Context, req *catalogpb.ProductsRequest, dst []byte) (out []byte, records, found int, err error) {
	if err := ValidateProductsRequest(req, l.opts.MaxIDs); err != nil {
		return dst, 0, 0, err
	}
	if err := ctx.Err(); err != nil {
		return dst, 0, 0, fmt.Errorf("%w: %w", ErrDeadline, err)
	}
	v, err := l.acquire()
	if err != nil {
		return dst, 0, 0, err
	}
	defer v.release()
	sc := recordsPool.Get().(*recordsScratch)
	defer recordsPool.Put(sc)
	key := &sc.key // in the pooled scratch: a local would escape to the heap through SeekGE
	it, err := v.db.NewIter(nil)
	if err != nil {
		return dst, 0, 0, fmt.Errorf("catalog: %w", err)
	}
	defer it.Close()
	for _, grp := range req.Groups {
		g, ids := grp.ProductGroupId, grp.ProductIds
		if len(ids) == 0 {
			continue
		}
		// Read in key order (each seek forward of the last), answer in
		// the order asked.
		sc.order = sc.order[:0]
		for i := range ids {
			sc.order = append(sc.order, int32(i))
		}
		slices.SortFunc(sc.order, func(a, b int32) int { return cmp.Compare(uint64(ids[a]), uint64(ids[b])) })
		sc.vals = sc.vals[:0]
		sc.offs = slices.Grow(sc.offs[:0], len(ids))[:len(ids)]
		for j, k := range sc.order {
			if j%16 == 15 {
				if err := ctx.Err(); err != nil {
					return dst, 0, 0, fmt.Errorf("%w: %w", ErrDeadline, err)
				}
			}
			if j > 0 && ids[k] == ids[sc.order[j-1]] {
				sc.offs[k] = sc.offs[sc.order[j-1]]
				continue
			}
			putKey(key, g, ids[k])
			sc.offs[k] = [2]int32{-1, -1}
			if it.SeekGE(key[:]) && string(it.Key()) == string(key[:]) {
				val, err := it.ValueAndErr()
				if err != nil {
					return dst, 0, 0, fmt.Errorf("catalog: reading product %d/%d: %w", g, ids[k], err)
				}
				start := len(sc.vals)
				sc.vals = append(sc.vals, val...)
				sc.offs[k] = [2]int32{int32(start), int32(len(sc.vals))}
			} else if err := it.Error(); err != nil {
				return dst, 0, 0, fmt.Errorf("catalog: reading product %d/%d: %w", g, ids[k], err)
			}
		}
		for i, id := range ids {
			var val []byte
			if o := sc.offs[i]; o[0] >= 0 {
				val = sc.vals[o[0]:o[1]]
				found++
			}
			dst = appendRecord(dst, g, id, val)
			records++
		}
	}
	if cap(sc.vals) > 1<<20 { // keep no huge one-off buffer
		sc.vals = nil
	}
	return appendIndexVersion(dst, 2, v.iv.Load()), records, found, nil
}

// appendRecord appends field 1 of ProductsResponse: a Record.
func appendRecord(b []byte, g, id int64, val []byte) []byte {
	n := 1 + protowire.SizeVarint(uint64(g)) + 1 + protowire.SizeVarint(uint64(id))
	if len(val) > 0 {
		n += 1 + protowire.SizeBytes(len(val))
	}
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(n))
	b = protowire.AppendTag(b, 1, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(g))
	b = protowire.AppendTag(b, 2, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(id))
	if len(val) > 0 {
		b = protowire.AppendTag(b, 3, protowire.BytesType)
		b = protowire.AppendBytes(b, val)
	}
	return b
}

// appendIndexVersion appends field num holding iv (as proto.Marshal
// writes it: zero fields omitted, the message itself always present).
func appendIndexVersion(b []byte, num protowire.Number, iv *catalogpb.IndexVersion) []byte {
	if iv == nil {
		return b
	}
	n := 0
	if iv.Generation != 0 {
		n += 1 + protowire.SizeVarint(iv.Generation)
	}
	if iv.ContentHash != 0 {
		n += 1 + 8
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(n))
	if iv.Generation != 0 {
		b = protowire.AppendTag(b, 1, protowire.VarintType)
		b = protowire.AppendVarint(b, iv.Generation)
	}
	if iv.ContentHash != 0 {
		b = protowire.AppendTag(b, 2, protowire.Fixed64Type)
		b = protowire.AppendFixed64(b, iv.ContentHash)
	}
	return b
}

// AppendChanges appends to dst the protobuf encoding of the
// ChangesResponse for c: the keys grouped by product group (one
// ProductKeys per group, ids packed, both in key order).
func AppendChanges(dst []byte, c Changes) []byte {
	dst = appendIndexVersion(dst, 1, &catalogpb.IndexVersion{Generation: c.Version.Generation, ContentHash: c.Version.ContentHash})
	if c.Full {
		dst = protowire.AppendTag(dst, 2, protowire.VarintType)
		dst = protowire.AppendVarint(dst, 1)
		return dst
	}
	keys := c.Keys
	for len(keys) > 0 {
		g := keys[0].Group
		n := 1
		for n < len(keys) && keys[n].Group == g {
			n++
		}
		ids := 0
		for _, k := range keys[:n] {
			ids += protowire.SizeVarint(uint64(k.ID))
		}
		size := 1 + protowire.SizeVarint(uint64(g)) + 1 + protowire.SizeBytes(ids)
		if g == 0 {
			size -= 1 + protowire.SizeVarint(0)
		}
		dst = protowire.AppendTag(dst, 3, protowire.BytesType)
		dst = protowire.AppendVarint(dst, uint64(size))
		if g != 0 {
			dst = protowire.AppendTag(dst, 1, protowire.VarintType)
			dst = protowire.AppendVarint(dst, uint64(g))
		}
		dst = protowire.AppendTag(dst, 2, protowire.BytesType)
		dst = protowire.AppendVarint(dst, uint64(ids))
		for _, k := range keys[:n] {
			dst = protowire.AppendVarint(dst, uint64(k.ID))
		}
		keys = keys[n:]
	}
	return dst
}
