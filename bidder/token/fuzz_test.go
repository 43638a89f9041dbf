package token

import (
	"errors"
	"testing"
	"time"
)

// FuzzParse feeds arbitrary tokens to Parse: never a panic, only the
// package's errors, and an accepted token re-signs to itself.
func FuzzParse(f *testing.F) {
	k := mustKeys(f, key1)
	tt := sample()
	tok, _ := k.Append(nil, &tt)
	f.Add(string(tok))
	click := sample()
	click.Kind, click.URL = KindClick, "https://shop.example.com/x"
	tok2, _ := k.Append(nil, &click)
	f.Add(string(tok2))
	f.Add("")
	f.Add("AAAA")
	f.Fuzz(func(t *testing.T, s string) {
		var got Token
		_, err := k.Parse(&got, []byte(s), 0, tt.Issued, nil)
		switch {
		case err == nil, errors.Is(err, ErrExpired):
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
		_ = time.Now
	})
}
