package token

import (
	"crypto/subtle"
	"encoding/binary"
	"fmt"
	"time"
)

// uidVersion starts the payload of a signed uid. It is no notice token
// version, so a notice token never parses as a signed uid nor the other
// way round.
const uidVersion = 'U'

// MaxUIDBytes bounds the uid of a signed uid.
const MaxUIDBytes = 128

// AppendUID appends a signed uid for uid, valid until expires (whole
// seconds), to dst: what a server-side integration passes as /event's or
// /match's uid= so that rtbd accepts a uid from the query. Its format is
// that of a token (URL-safe base64 of payload | HMAC-SHA256[:16], signed
// with the first key) with the payload 'U' (1 byte), expires (uvarint,
// unix seconds), then the uid's bytes. uid must be 1 to MaxUIDBytes bytes
// (ErrField; dst is returned unchanged then).
func (k *Keys) AppendUID(dst []byte, uid string, expires time.Time) ([]byte, error) {
	if uid == "" || len(uid) > MaxUIDBytes || expires.Unix() < 0 {
		return dst, fmt.Errorf("%w: uid of %d bytes (want 1-%d), expiry %v", ErrField, len(uid), MaxUIDBytes, expires)
	}
	start := len(dst)
	dst = append(dst, uidVersion)
	dst = binary.AppendUvarint(dst, uint64(expires.Unix()))
	dst = append(dst, uid...)
	e := len(dst)
	dst = k.mac(0, dst, dst[start:e])[:e+MACBytes]
	e += MACBytes
	dst = enc.AppendEncode(dst, dst[start:e])
	n := copy(dst[start:], dst[e:])
	return dst[:start+n], nil
}

// ParseUID checks the signed uid s (see AppendUID) at now and returns its
// uid, which aliases buf (decoded into, grown if too small, and returned):
// it stays valid until buf is reused. Errors: ErrMalformed (not a signed
// uid), ErrSignature (no key verifies it), ErrExpired (authentic but past
// its expiry; the uid is returned all the same). It makes no allocation
// when buf has room for 32 bytes more than the decoded form.
func (k *Keys) ParseUID(s []byte, now time.Time, buf []byte) (uid string, _ []byte, err error) {
	if len(s) < 4 || len(s) > enc.EncodedLen(2+binary.MaxVarintLen64+MaxUIDBytes+MACBytes) {
		return "", buf, ErrMalformed
	}
	need := enc.DecodedLen(len(s)) + 32
	if cap(buf) < need {
		buf = make([]byte, need)
	}
	buf = buf[:need]
	n, err := enc.Decode(buf, s)
	if err != nil || n < 3+MACBytes || buf[0] != uidVersion {
		return "", buf[:0], ErrMalformed
	}
	msg, got := buf[:n-MACBytes], buf[n-MACBytes:n]
	ok := false
	for i := range k.macs {
		mac := k.mac(i, buf[:n], msg)[n:]
		if subtle.ConstantTimeCompare(mac[:MACBytes], got) == 1 {
			ok = true
			break
		}
	}
	if !ok {
		return "", buf[:0], ErrSignature
	}
	exp, w := binary.Uvarint(msg[1:])
	if w <= 0 || exp > 1<<62 || 1+w >= len(msg) {
		return "", buf[:0], ErrMalformed
	}
	uid = str(msg[1+w:])
	if now.Unix() > int64(exp) {
		return uid, buf, ErrExpired
	}
	return uid, buf, nil
}
