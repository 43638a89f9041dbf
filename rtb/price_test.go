package rtb

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// Google's published example keys and encrypted prices (Authorized Buyers
// "Decrypt price confirmations" sample code and the libraries that copy it).
var (
	googleEncKey = mustB64("skU7Ax_NL5pPAFyKdkfZjZz2-VhIN8bjj1rVFOaJ_5o=")
	googleIntKey = mustB64("arO23ykdNqUQ5LEoQ0FVmPkBd7xB5CO89PDZlSjpFxo=")
)

func mustB64(s string) []byte {
	b, err := base64.URLEncoding.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

func TestDecryptPriceGoogleExamples(t *testing.T) {
	for token, want := range map[string]int64{
		"YWJjMTIzZGVmNDU2Z2hpN7fhCuPemCce_6msaw":   100,
		"YWJjMTIzZGVmNDU2Z2hpN7fhCuPemCAWJRxOgA":   1900,
		"YWJjMTIzZGVmNDU2Z2hpN7fhCuPemC32prpWWw":   2700,
		"YWJjMTIzZGVmNDU2Z2hpN7fhCuPemCce_6msaw==": 100, // padded form
	} {
		got, err := DecryptPrice(googleEncKey, googleIntKey, token)
		if err != nil || got != want {
			t.Errorf("DecryptPrice(%s) = %d, %v; want %d", token, got, err, want)
		}
	}
	// The examples' iv is "abc123def456ghi7"; encrypting with it gives the token back.
	if got := EncryptPrice(googleEncKey, googleIntKey, []byte("abc123def456ghi7"), 1900); got != "YWJjMTIzZGVmNDU2Z2hpN7fhCuPemCAWJRxOgA" {
		t.Errorf("EncryptPrice = %s", got)
	}
}

func TestDecryptPriceErrors(t *testing.T) {
	good := "YWJjMTIzZGVmNDU2Z2hpN7fhCuPemCAWJRxOgA"
	cases := map[string]error{
		"":                                       ErrPriceLength,
		"short":                                  ErrPriceLength,
		good + "A":                               ErrPriceLength,
		good + "=":                               ErrPriceLength,
		strings.Repeat("A", 1000):                ErrPriceLength,
		good[:37] + "*":                          ErrPriceBase64,
		good[:37] + "+":                          ErrPriceBase64,    // standard alphabet is not web-safe
		"YWJjMTIzZGVmNDU2Z2hpN7fhCuPemCAWJRxOlA": ErrPriceSignature, // tampered signature
		"YWJjMTIzZGVmNDU2Z2hpN7fhCuPemCAWJRxOgB": ErrPriceBase64,    // non-canonical final symbol
		"YWJjMTIzZGVmNDU2Z2hpN7fhCuPemDAWJRxOgA": ErrPriceSignature, // tampered price
		"ZWJjMTIzZGVmNDU2Z2hpN7fhCuPemCAWJRxOgA": ErrPriceSignature, // tampered iv
	}
	for s, want := range cases {
		if _, err := DecryptPrice(googleEncKey, googleIntKey, s); !errors.Is(err, want) {
			t.Errorf("DecryptPrice(%q): %v, want %v", s, err, want)
		}
	}
	if _, err := DecryptPrice(googleIntKey, googleEncKey, good); !errors.Is(err, ErrPriceSignature) {
		t.Errorf("swapped keys: %v", err)
	}
	neg := EncryptPrice(googleEncKey, googleIntKey, make([]byte, 16), -5)
	if _, err := DecryptPrice(googleEncKey, googleIntKey, neg); !errors.Is(err, ErrPriceNegative) {
		t.Errorf("negative: %v", err)
	}
}

func TestEncryptDecryptRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 500 {
		encKey := make([]byte, 1+rng.IntN(100)) // keys longer than the HMAC block too
		intKey := make([]byte, 32)
		iv := make([]byte, 16)
		for _, b := range [][]byte{encKey, intKey, iv} {
			for j := range b {
				b[j] = byte(rng.Uint32())
			}
		}
		micros := rng.Int64N(math.MaxInt64)
		if i%3 == 0 {
			micros = rng.Int64N(100_000_000)
		}
		tok := EncryptPrice(encKey, intKey, iv, micros)
		got, err := DecryptPrice(encKey, intKey, tok)
		if err != nil || got != micros {
			t.Fatalf("round trip %d: %d, %v", micros, got, err)
		}
		// Flip each byte of the token in turn: never accepted.
		raw, _ := base64.RawURLEncoding.DecodeString(tok)
		for j := range raw {
			bad := append([]byte(nil), raw...)
			bad[j] ^= 1 << (j % 8)
			if _, err := DecryptPrice(encKey, intKey, base64.RawURLEncoding.EncodeToString(bad)); err == nil {
				t.Fatalf("tampered byte %d accepted", j)
			}
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("EncryptPrice with a 15-byte iv did not panic")
		}
	}()
	EncryptPrice(googleEncKey, googleIntKey, make([]byte, 15), 1)
}

func TestHMACSHA1(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 200 {
		key := make([]byte, rng.IntN(150))
		m1 := make([]byte, rng.IntN(33))
		m2 := make([]byte, rng.IntN(32))
		for _, b := range [][]byte{key, m1, m2} {
			for j := range b {
				b[j] = byte(rng.Uint32())
			}
		}
		h := hmac.New(sha1.New, key)
		h.Write(m1)
		h.Write(m2)
		got := hmacSHA1(key, m1, m2)
		if !hmac.Equal(got[:], h.Sum(nil)) {
			t.Fatalf("hmacSHA1 differs from crypto/hmac (key %d bytes, msg %d+%d)", len(key), len(m1), len(m2))
		}
	}
}
