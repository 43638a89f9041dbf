package rtb

import (
	"crypto/sha1"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
)

// Google-style encrypted price: iv(16) | enc_price(8) | signature(4).
const (
	priceIVLen  = 16
	priceEncLen = 8
	priceSigLen = 4
	priceLen    = priceIVLen + priceEncLen + priceSigLen // 28 bytes
	// priceB64Len is the unpadded web-safe base64 length of 28 bytes.
	priceB64Len = 38
)

// priceBase64 is unpadded web-safe base64 that rejects non-zero trailing
// bits, so that one price has exactly one accepted token.
var priceBase64 = base64.RawURLEncoding.Strict()

// DecryptPrice decrypts a clearing price encrypted as Google Authorized
// Buyers (and exchanges that copy it) documents: s is web-safe base64
// (unpadded, or padded with "==") of iv(16) | enc_price(8) | signature(4);
// pad = HMAC-SHA1(encKey, iv); price = enc_price XOR pad[:8], a big-endian
// integer of micros; the signature must equal HMAC-SHA1(intKey, price|iv)[:4].
//
// encKey and intKey are the raw key bytes (Google hands them out as web-safe
// base64: decode them once with base64.URLEncoding). The result is in micros
// of the bid currency (1 USD CPM = 1000000).
//
// Errors: ErrPriceLength, ErrPriceBase64, ErrPriceSignature, and
// ErrPriceNegative for a correctly signed negative value. It makes no
// allocation and is safe for concurrent use.
func DecryptPrice(encKey, intKey []byte, s string) (micros int64, err error) {
	if len(s) == priceB64Len+2 && s[priceB64Len:] == "==" {
		s = s[:priceB64Len]
	}
	if len(s) != priceB64Len {
		return 0, ErrPriceLength
	}
	var src [priceB64Len]byte
	copy(src[:], s)
	var raw [priceLen + 2]byte
	n, err := priceBase64.Decode(raw[:], src[:])
	if err != nil {
		return 0, ErrPriceBase64
	}
	if n != priceLen {
		return 0, ErrPriceLength
	}
	iv := raw[:priceIVLen]
	pad := hmacSHA1(encKey, iv, nil)
	var price [priceEncLen]byte
	for i := range price {
		price[i] = raw[priceIVLen+i] ^ pad[i]
	}
	sig := hmacSHA1(intKey, price[:], iv)
	if subtle.ConstantTimeCompare(sig[:priceSigLen], raw[priceIVLen+priceEncLen:priceLen]) != 1 {
		return 0, ErrPriceSignature
	}
	micros = int64(binary.BigEndian.Uint64(price[:]))
	if micros < 0 {
		return 0, ErrPriceNegative
	}
	return micros, nil
}

// EncryptPrice is the inverse of DecryptPrice, for tests and the bench
// harness (which plays the exchange): it returns the unpadded web-safe
// base64 token for micros with the given 16-byte iv. It panics if iv is not
// 16 bytes long, a programming error.
func EncryptPrice(encKey, intKey, iv []byte, micros int64) string {
	if len(iv) != priceIVLen {
		panic("rtb: EncryptPrice: iv must be 16 bytes")
	}
	var raw [priceLen]byte
	copy(raw[:], iv)
	var price [priceEncLen]byte
	binary.BigEndian.PutUint64(price[:], uint64(micros))
	pad := hmacSHA1(encKey, iv, nil)
	for i := range price {
		raw[priceIVLen+i] = price[i] ^ pad[i]
	}
	sig := hmacSHA1(intKey, price[:], iv)
	copy(raw[priceIVLen+priceEncLen:], sig[:priceSigLen])
	return priceBase64.EncodeToString(raw[:])
}

// hmacSHA1 returns HMAC-SHA1(key, m1|m2) (RFC 2104) without allocating;
// len(m1)+len(m2) must be at most 64.
func hmacSHA1(key, m1, m2 []byte) [sha1.Size]byte {
	const block = 64
	var k [block]byte
	if len(key) > block {
		h := sha1.Sum(key)
		copy(k[:], h[:])
	} else {
		copy(k[:], key)
	}
	var in [2 * block]byte
	for i := range block {
		in[i] = k[i] ^ 0x36
	}
	n := block + copy(in[block:], m1)
	n += copy(in[n:], m2)
	inner := sha1.Sum(in[:n])
	var out [block + sha1.Size]byte
	for i := range block {
		out[i] = k[i] ^ 0x5c
	}
	copy(out[block:], inner[:])
	return sha1.Sum(out[:])
}
