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

// maxPriceLen bounds the text ParsePrice reads.
const maxPriceLen = 32

// ParsePrice parses a plain decimal clearing price such as "1.2345" into
// micros (1234500), exactly, without floating point. It accepts digits with
// an optional fraction ("3", "0.5", "12.000000"); at most 12 significant
// integer digits and 6 fraction digits (more fraction digits only if they
// are zeros); at most 32 bytes. It rejects signs, exponents, spaces, NaN,
// "Inf", ".5" and "5." with ErrPriceSyntax (ErrPriceNegative for a leading
// '-', ErrPriceRange for too many digits). It makes no allocation.
func ParsePrice(s string) (micros int64, err error) {
	if len(s) == 0 {
		return 0, ErrPriceSyntax
	}
	if len(s) > maxPriceLen {
		return 0, ErrPriceRange
	}
	if s[0] == '-' {
		return 0, ErrPriceNegative
	}
	i := 0
	var units int64
	sig := 0
	for i < len(s) && isDigit(s[i]) {
		if units != 0 || s[i] != '0' {
			sig++
		}
		if sig > 12 {
			return 0, ErrPriceRange
		}
		units = units*10 + int64(s[i]-'0')
		i++
	}
	if i == 0 {
		return 0, ErrPriceSyntax
	}
	var frac int64
	nfrac := 0
	if i < len(s) && s[i] == '.' {
		i++
		start := i
		for i < len(s) && isDigit(s[i]) {
			d := int64(s[i] - '0')
			if nfrac < 6 {
				frac = frac*10 + d
				nfrac++
			} else if d != 0 {
				return 0, ErrPriceRange
			}
			i++
		}
		if i == start {
			return 0, ErrPriceSyntax
		}
	}
	if i != len(s) {
		return 0, ErrPriceSyntax
	}
	for ; nfrac < 6; nfrac++ {
		frac *= 10
	}
	return units*1_000_000 + frac, nil
}

// AppendPrice appends micros as a plain decimal in currency units, with no
// trailing fraction zeros: 1234500 -> "1.2345", 2000000 -> "2". Negative
// values get a '-'. ParsePrice(AppendPrice(nil, m)) == m for 0 <= m <=
// 999999999999999999.
func AppendPrice(dst []byte, micros int64) []byte {
	u := uint64(micros)
	if micros < 0 {
		dst = append(dst, '-')
		u = -u
	}
	units, frac := u/1_000_000, u%1_000_000
	dst = appendUint(dst, units)
	if frac == 0 {
		return dst
	}
	var buf [7]byte
	buf[0] = '.'
	for i := 6; i >= 1; i-- {
		buf[i] = byte('0' + frac%10)
		frac /= 10
	}
	n := 7
	for buf[n-1] == '0' {
		n--
	}
	return append(dst, buf[:n]...)
}

func appendUint(dst []byte, u uint64) []byte {
	var buf [20]byte
	i := len(buf)
	for {
		i--
		buf[i] = byte('0' + u%10)
		u /= 10
		if u == 0 {
			break
		}
	}
	return append(dst, buf[i:]...)
}
