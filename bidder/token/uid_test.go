package token

import (
	"errors"
	"testing"
	"time"
)

func TestSignedUID(t *testing.T) {
	k := mustKeys(t, []byte("0123456789abcdef0123456789abcdef"))
	other := mustKeys(t, []byte("fedcba9876543210fedcba9876543210"))
	now := time.Unix(1_800_000_000, 0)
	s, err := k.AppendUID(nil, "user-42", now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	uid, _, err := k.ParseUID(s, now, nil)
	if err != nil || uid != "user-42" {
		t.Fatalf("ParseUID = %q, %v", uid, err)
	}
	if uid, _, err := k.ParseUID(s, now.Add(2*time.Hour), nil); !errors.Is(err, ErrExpired) || uid != "user-42" {
		t.Errorf("expired: %q, %v", uid, err)
	}
	if _, _, err := other.ParseUID(s, now, nil); !errors.Is(err, ErrSignature) {
		t.Errorf("another key: %v, want ErrSignature", err)
	}
	tampered := append([]byte(nil), s...)
	tampered[3] ^= 1
	if _, _, err := k.ParseUID(tampered, now, nil); err == nil {
		t.Error("a tampered signed uid parsed")
	}
	for _, bad := range []string{"", "user-42", "!!!!!!!!", "AAAAAAAAAAAAAAAAAAAAAAAAAAAA"} {
		if _, _, err := k.ParseUID([]byte(bad), now, nil); err == nil {
			t.Errorf("ParseUID(%q) accepted", bad)
		}
	}
	// A notice token is not a signed uid, nor a signed uid a notice token.
	win, err := k.Append(nil, &Token{Kind: KindWin, Issued: now, Expires: now.Add(time.Hour), User: "user-42"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := k.ParseUID(win, now, nil); !errors.Is(err, ErrMalformed) {
		t.Errorf("a win token as a signed uid: %v, want ErrMalformed", err)
	}
	var tok Token
	if _, err := k.Parse(&tok, s, 0, now, nil); !errors.Is(err, ErrMalformed) {
		t.Errorf("a signed uid as a token: %v, want ErrMalformed", err)
	}
	if _, err := k.AppendUID(nil, "", now); !errors.Is(err, ErrField) {
		t.Errorf("empty uid: %v", err)
	}
}

func FuzzParseUID(f *testing.F) {
	k, _ := NewKeys([]byte("0123456789abcdef0123456789abcdef"))
	now := time.Unix(1_800_000_000, 0)
	s, _ := k.AppendUID(nil, "user-42", now.Add(time.Hour))
	f.Add(s)
	f.Add([]byte("VQ"))
	f.Fuzz(func(t *testing.T, s []byte) {
		uid, _, err := k.ParseUID(s, now, nil)
		if err == nil && (uid == "" || len(uid) > MaxUIDBytes) {
			t.Fatalf("accepted uid %q", uid)
		}
	})
}
