package token

import (
	"errors"
	"testing"
	"time"
)

// FuzzParse feeds arbitrary tokens (seeded with tokens of versions 4 and
// 5, both audiences) to Parse: never a panic, only the package's errors,
// and an accepted token re-signs to a token that parses.
func FuzzParse(f *testing.F) {
	k := mustKeys(f, key1)
	tt := sample()
	tok, _ := k.Append(nil, &tt)
	f.Add(string(tok))
	click := sample()
	click.Kind, click.URL = KindClick, "https://shop.example.com/x"
	tok2, _ := k.Append(nil, &click)
	f.Add(string(tok2))
	bid := sample()
	bid.ClickExpires, bid.Products, bid.ValueMicros, bid.Segment, bid.Bucket, bid.Exchange = bid.Issued.Add(720*time.Hour), []int64{4, 5}, 2_000_000, 9, 300, "x"
	both, mid, _ := k.AppendBid(nil, &bid)
	f.Add(string(both[:mid])) // exchange
	f.Add(string(both[mid:])) // markup
	f.Add(resign(payloadV4(&click)))
	f.Add("")
	f.Add("AAAA")
	f.Fuzz(func(t *testing.T, s string) {
		var got Token
		_, err := k.Parse(&got, []byte(s), 0, tt.Issued, nil)
		switch {
		case err == nil, errors.Is(err, ErrExpired), errors.Is(err, ErrKind):
			again, err := k.Append(nil, &got)
			if err != nil {
				t.Fatalf("accepted token does not re-sign: %v", err)
			}
			var back Token
			if _, err := k.Parse(&back, again, 0, got.Issued, nil); err != nil && !errors.Is(err, ErrExpired) {
				t.Fatalf("re-signed token: %v", err)
			}
		case errors.Is(err, ErrMalformed), errors.Is(err, ErrSignature):
		default:
			t.Fatalf("unexpected error %v", err)
		}
	})
}

// FuzzDecodePayload feeds arbitrary payloads to the decoder behind the
// signature check (what a leaked key, or a bug in a signer, would let
// through): never a panic, bounded product lists, and a decoded payload
// encodes back to a payload that decodes to the same token.
func FuzzDecodePayload(f *testing.F) {
	k := mustKeys(f, key1)
	click := sample()
	click.Kind, click.Group, click.Products = KindClick, 3, []int64{1, 2, 1 << 40}
	shaded := click
	shaded.ValueMicros, shaded.Segment, shaded.Bucket, shaded.Exchange = 1_500_000, 3, 65535, "pbs"
	for _, tt := range []Token{sample(), click, shaded} {
		tok, _ := k.Append(nil, &tt)
		raw, _ := enc.DecodeString(string(tok))
		f.Add(raw[:len(raw)-MACBytes]) // the payload and the audience byte
		f.Add(payloadV4(&tt))
	}
	f.Add([]byte{version, byte(AudienceMarkup)})
	f.Add([]byte{version4, byte(KindClick)})
	f.Add([]byte{version1, byte(KindWin), 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, p []byte) {
		var got Token
		if err := decodePayload(&got, p); err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if len(got.Products) > MaxProducts {
			t.Fatalf("%d products", len(got.Products))
		}
		again, err := k.Append(nil, &got)
		if errors.Is(err, ErrField) {
			return // decodable but out of Append's bounds (e.g. an expiry overflowing)
		}
		if err != nil {
			t.Fatalf("decoded token does not re-sign: %v", err)
		}
		var back Token
		if _, err := k.Parse(&back, again, 0, got.Issued, nil); err != nil && !errors.Is(err, ErrExpired) {
			t.Fatalf("re-signed token: %v", err)
		}
		if back.Campaign != got.Campaign || len(back.Products) != len(got.Products) || back.Group != got.Group ||
			back.ValueMicros != got.ValueMicros || back.Segment != got.Segment || back.Bucket != got.Bucket ||
			!back.Expires.Equal(got.Expires) || !back.ClickExpires.Equal(got.ClickExpires) {
			t.Fatalf("round trip changed the token: %+v -> %+v", got, back)
		}
	})
}
