package token

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

var (
	key1 = []byte("0123456789abcdef-key-one")
	key2 = []byte("fedcba9876543210-key-two")
)

func mustKeys(t testing.TB, secrets ...[]byte) *Keys {
	t.Helper()
	k, err := NewKeys(secrets...)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func sample() Token {
	now := time.Unix(1_764_460_800, 0)
	return Token{
		Kind: KindWin, Issued: now, Expires: now.Add(time.Hour),
		Campaign: "camp-1", Creative: "camp-1-medium-300x250", Auction: "80ce30c53c16e6ede735f123ef6e32361bfc7b22",
		Imp: "1", User: "u-42", PriceMicros: 1_250_000, Currency: "USD",
	}
}

func TestRoundTrip(t *testing.T) {
	k := mustKeys(t, key1)
	cases := []Token{sample()}
	click := sample()
	click.Kind, click.URL, click.Group, click.Product = KindClick, "https://shop.example.com/item/1?a=b&c=%E2%9C%93", 1122, 103
	cases = append(cases, click)
	empty := Token{Kind: KindBill, Issued: time.Unix(5, 0), Expires: time.Unix(5, 0)}
	cases = append(cases, empty)
	long := sample()
	long.URL = "https://x.example/" + strings.Repeat("a", MaxFieldBytes-18)
	cases = append(cases, long)
	bid := sample() // one click token per bid: the creative's products
	bid.Kind, bid.Group = KindClick, 7
	for i := range 15 {
		bid.Products = append(bid.Products, int64(1_000_003*i))
	}
	cases = append(cases, bid)
	most := sample()
	most.Kind, most.Products = KindClick, make([]int64, MaxProducts)
	most.Products[MaxProducts-1] = 1 << 62
	cases = append(cases, most)
	shaded := sample() // the shading fields at their bounds
	shaded.ValueMicros, shaded.Segment, shaded.Bucket = 1<<62, 1<<32-1, 1<<16-1
	cases = append(cases, shaded)
	for i, want := range cases {
		tok, err := k.Append(nil, &want)
		if err != nil {
			t.Fatalf("%d: Append: %v", i, err)
		}
		for _, c := range tok {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				t.Fatalf("%d: token has %q, not URL-safe: %s", i, c, tok)
			}
		}
		var got Token
		if _, err := k.Parse(&got, tok, want.Kind, want.Issued, nil); err != nil {
			t.Fatalf("%d: Parse: %v", i, err)
		}
		if !got.Issued.Equal(want.Issued) || !got.Expires.Equal(want.Expires) || !got.ClickExpires.Equal(want.Expires) {
			t.Errorf("%d: times %v %v %v, want %v %v", i, got.Issued, got.Expires, got.ClickExpires, want.Issued, want.Expires)
		}
		got.Issued, got.Expires, got.ClickExpires, want.Issued, want.Expires = time.Time{}, time.Time{}, time.Time{}, time.Time{}, time.Time{}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%d: got %+v\nwant %+v", i, got, want)
		}
	}
}

// TestIsHMAC checks the hand-written HMAC against crypto/hmac.
func TestIsHMAC(t *testing.T) {
	long := []byte(strings.Repeat("k", 100)) // > block size: hashed first
	for _, key := range [][]byte{key1, long} {
		k := mustKeys(t, key)
		tt := sample()
		tok, err := k.Append(nil, &tt)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := base64.RawURLEncoding.DecodeString(string(tok))
		if err != nil {
			t.Fatal(err)
		}
		payload, mac := raw[:len(raw)-audienceBytes-MACBytes], raw[len(raw)-MACBytes:]
		if a := raw[len(payload)]; a != byte(AudienceExchange) {
			t.Fatalf("win token of audience %d", a)
		}
		h := hmac.New(sha256.New, key)
		h.Write(payload)
		if want := h.Sum(nil)[:MACBytes]; !hmac.Equal(mac, want) {
			t.Errorf("mac %x, crypto/hmac says %x", mac, want)
		}
	}
}

func TestAppendKeepsPrefix(t *testing.T) {
	k := mustKeys(t, key1)
	tt := sample()
	dst := []byte("https://bidder.example/win?t=")
	out, err := k.Append(dst, &tt)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(out), "https://bidder.example/win?t=") {
		t.Fatalf("prefix lost: %s", out)
	}
	var got Token
	if _, err := k.Parse(&got, out[len(dst):], KindWin, tt.Issued, nil); err != nil {
		t.Fatal(err)
	}
}

func TestTamperAndForgery(t *testing.T) {
	k := mustKeys(t, key1)
	tt := sample()
	tok, _ := k.Append(nil, &tt)
	raw, _ := base64.RawURLEncoding.DecodeString(string(tok))
	var got Token
	// Flip each bit of the decoded token: never accepted.
	for i := range raw {
		for bit := 0; bit < 8; bit++ {
			m := append([]byte(nil), raw...)
			m[i] ^= 1 << bit
			s := base64.RawURLEncoding.EncodeToString(m)
			if _, err := k.Parse(&got, []byte(s), 0, tt.Issued, nil); err == nil {
				t.Fatalf("byte %d bit %d flipped: accepted", i, bit)
			} else if !errors.Is(err, ErrSignature) && !errors.Is(err, ErrMalformed) {
				t.Fatalf("byte %d bit %d flipped: %v", i, bit, err)
			}
		}
	}
	other := mustKeys(t, key2)
	forged, _ := other.Append(nil, &tt)
	if _, err := k.Parse(&got, forged, 0, tt.Issued, nil); !errors.Is(err, ErrSignature) {
		t.Errorf("token of another key: %v, want ErrSignature", err)
	}
	if !reflect.DeepEqual(got, Token{}) {
		t.Errorf("t not zeroed after a bad signature: %+v", got)
	}
	for _, s := range []string{"", "abc", "!!!!!!!!!!!!", strings.Repeat("A", MaxTokenBytes+1), string(tok[:len(tok)-1]), string(tok) + "A"} {
		if _, err := k.Parse(&got, []byte(s), 0, tt.Issued, nil); err == nil {
			t.Errorf("%.40q accepted", s)
		}
	}
}

func TestRotation(t *testing.T) {
	old := mustKeys(t, key1)
	both := mustKeys(t, key2, key1) // new key signs, old still verifies
	tt := sample()
	oldTok, _ := old.Append(nil, &tt)
	newTok, _ := both.Append(nil, &tt)
	var got Token
	if _, err := both.Parse(&got, oldTok, 0, tt.Issued, nil); err != nil {
		t.Errorf("old token during rotation: %v", err)
	}
	if _, err := both.Parse(&got, newTok, 0, tt.Issued, nil); err != nil {
		t.Errorf("new token: %v", err)
	}
	if _, err := old.Parse(&got, newTok, 0, tt.Issued, nil); !errors.Is(err, ErrSignature) {
		t.Errorf("new token on a bidder without the new key: %v", err)
	}
	onlyNew := mustKeys(t, key2)
	if _, err := onlyNew.Parse(&got, oldTok, 0, tt.Issued, nil); !errors.Is(err, ErrSignature) {
		t.Errorf("old token after the old key was dropped: %v", err)
	}
}

func TestExpiryAndKind(t *testing.T) {
	k := mustKeys(t, key1)
	tt := sample()
	tok, _ := k.Append(nil, &tt)
	var got Token
	if _, err := k.Parse(&got, tok, KindWin, tt.Expires, nil); err != nil {
		t.Errorf("at expiry: %v", err)
	}
	if _, err := k.Parse(&got, tok, KindWin, tt.Expires.Add(time.Second), nil); !errors.Is(err, ErrExpired) {
		t.Errorf("after expiry: %v", err)
	} else if got.Campaign != "camp-1" {
		t.Errorf("expired token not filled: %+v", got)
	}
	if _, err := k.Parse(&got, tok, KindClick, tt.Issued, nil); !errors.Is(err, ErrKind) {
		t.Errorf("win token as click: %v", err)
	}
}

func TestKeyAndFieldErrors(t *testing.T) {
	if _, err := NewKeys(); !errors.Is(err, ErrNoKey) {
		t.Errorf("no key: %v", err)
	}
	if _, err := NewKeys(key1, []byte("short")); !errors.Is(err, ErrShortKey) {
		t.Errorf("short key: %v", err)
	}
	k := mustKeys(t, key1)
	bad := []func(*Token){
		func(t *Token) { t.Kind = 0 },
		func(t *Token) { t.Kind = 9 },
		func(t *Token) { t.PriceMicros = -1 },
		func(t *Token) { t.Currency = "usd" },
		func(t *Token) { t.Currency = "US" },
		func(t *Token) { t.Product = -3 },
		func(t *Token) { t.Products = []int64{1, -2} },
		func(t *Token) { t.Products = make([]int64, MaxProducts+1) },
		func(t *Token) { t.URL = strings.Repeat("x", MaxFieldBytes+1) },
		func(t *Token) { t.Expires = t.Issued.Add(-time.Second) },
	}
	for i, f := range bad {
		tt := sample()
		f(&tt)
		dst := []byte("keep")
		out, err := k.Append(dst, &tt)
		if !errors.Is(err, ErrField) {
			t.Errorf("%d: %v, want ErrField", i, err)
		}
		if string(out) != "keep" {
			t.Errorf("%d: dst changed to %q", i, out)
		}
	}
}

func TestKindString(t *testing.T) {
	for k, want := range map[Kind]string{KindWin: "win", KindBill: "bill", KindClick: "click", KindLoss: "loss", KindImp: "imp", 0: "unknown", 77: "unknown"} {
		if k.String() != want {
			t.Errorf("%d: %q", k, k.String())
		}
	}
}

// payloadV4 is tk's payload in format 4 (one kind, one expiry, no
// shading fields), the format before the current one.
func payloadV4(tk *Token) []byte {
	p := []byte{version4, byte(tk.Kind)}
	p = binary.AppendUvarint(p, uint64(tk.Issued.Unix()))
	p = binary.AppendUvarint(p, uint64(tk.Expires.Unix()-tk.Issued.Unix()))
	p = binary.AppendUvarint(p, uint64(tk.PriceMicros))
	if tk.Currency == "" {
		p = append(p, 0, 0, 0)
	} else {
		p = append(p, tk.Currency...)
	}
	for _, s := range [...]string{tk.Campaign, tk.Creative, tk.Auction, tk.Imp, tk.User, tk.URL} {
		p = binary.AppendUvarint(p, uint64(len(s)))
		p = append(p, s...)
	}
	p = binary.AppendUvarint(p, uint64(tk.Group))
	p = binary.AppendUvarint(p, uint64(tk.Product))
	p = binary.AppendUvarint(p, uint64(len(tk.Products)))
	for _, id := range tk.Products {
		p = binary.AppendUvarint(p, uint64(id))
	}
	p = append(p, tk.Nonce[:]...)
	flags := byte(tk.Billing) << flagBillingShift
	if tk.Test {
		flags |= flagTest
	}
	if tk.Exchange != "" {
		flags |= flagExchange
	}
	p = append(p, flags)
	if tk.Exchange != "" {
		p = binary.AppendUvarint(p, uint64(len(tk.Exchange)))
		p = append(p, tk.Exchange...)
	}
	return p
}

// older returns tk signed (with key1) in format ver (4: one kind, one
// expiry, no shading fields; 3: no flags either; 2: no nonce either; 1:
// no product list either). For ver < 4, tk must have no products, a zero
// nonce and no flags.
func older(t *testing.T, tk Token, ver byte) string {
	t.Helper()
	payload := payloadV4(&tk)
	if ver == version4 {
		return resign(payload)
	}
	if payload[len(payload)-1] != 0 {
		t.Fatalf("unexpected flags %x", payload)
	}
	payload = payload[:len(payload)-1] // drop the flags: version 3
	if ver == version3 {
		payload[0] = ver
		return resign(payload)
	}
	n := len(payload) - 16
	if !bytes.Equal(payload[n:], make([]byte, 16)) || payload[n-1] != 0 {
		t.Fatalf("unexpected layout %x", payload)
	}
	payload = payload[:n] // drop the nonce: version 2
	if ver == version1 {
		payload = payload[:n-1] // and the product count
	}
	payload[0] = ver
	return resign(payload)
}

// resign signs a payload of version 1 to 4 with key1.
func resign(payload []byte) string {
	m := hmac.New(sha256.New, key1)
	m.Write(payload)
	return base64.RawURLEncoding.EncodeToString(append(bytes.Clone(payload), m.Sum(nil)[:MACBytes]...))
}

// resign5 signs a version 5 payload (without the audience byte) with key1
// for audience a.
func resign5(payload []byte, a Audience) string {
	m := hmac.New(sha256.New, key1)
	m.Write(payload)
	mac := m.Sum(nil)[int(a)*MACBytes : int(a+1)*MACBytes]
	return base64.RawURLEncoding.EncodeToString(append(append(bytes.Clone(payload), byte(a)), mac...))
}

// payload5 returns the payload of the version 5 token tok (without the
// audience byte and the MAC).
func payload5(tok []byte) []byte {
	raw, _ := base64.RawURLEncoding.DecodeString(string(tok))
	return bytes.Clone(raw[:len(raw)-audienceBytes-MACBytes])
}

// TestVersion1 checks that click tokens of the first format (version 1:
// the landing URL signed in the token, no product list, no nonce), handed
// out before an upgrade, still verify until they expire.
func TestVersion1(t *testing.T) {
	k := mustKeys(t, key1)
	want := sample()
	want.Kind, want.URL, want.Group, want.Product = KindClick, "https://shop.example.com/item/9", 4, 9
	want.Expires = want.Issued.Add(720 * time.Hour) // a click's lifetime
	v1 := older(t, want, version1)
	var got Token
	if _, err := k.Parse(&got, []byte(v1), KindClick, want.Expires, nil); err != nil {
		t.Fatalf("version 1 token at its expiry: %v", err)
	}
	if got.URL != want.URL || got.Product != 9 || got.Group != 4 || len(got.Products) != 0 || got.Nonce != ([16]byte{}) ||
		!got.ClickExpires.Equal(want.Expires) || got.ValueMicros != 0 {
		t.Errorf("got %+v", got)
	}
	if _, err := k.Parse(&got, []byte(v1), KindClick, want.Expires.Add(time.Second), nil); !errors.Is(err, ErrExpired) {
		t.Errorf("version 1 token after its expiry: %v", err)
	}
	if _, err := k.Parse(&got, []byte(v1), KindImp, want.Issued, nil); !errors.Is(err, ErrKind) {
		t.Errorf("version 1 click token as imp: %v, want ErrKind", err)
	}
	// A version 1 payload with trailing bytes (a product list) is not valid.
	raw, _ := base64.RawURLEncoding.DecodeString(v1)
	bad := append(bytes.Clone(raw[:len(raw)-MACBytes]), 1, 5)
	if _, err := k.Parse(&got, []byte(resign(bad)), 0, want.Issued, nil); !errors.Is(err, ErrMalformed) {
		t.Errorf("v1 with a product list: %v, want ErrMalformed", err)
	}
}

// TestVersion2 checks that tokens of the format without a nonce (version
// 2) still verify, with a zero Nonce, and that their NoticeNonce is the
// derived one, the same for every token of one bid.
func TestVersion2(t *testing.T) {
	k := mustKeys(t, key1)
	win := sample()
	bill := sample()
	bill.Kind = KindBill
	var nonces [2][16]byte
	for i, want := range []Token{win, bill} {
		var got Token
		if _, err := k.Parse(&got, []byte(older(t, want, version2)), want.Kind, want.Issued, nil); err != nil {
			t.Fatalf("version 2 token: %v", err)
		}
		if got.Campaign != want.Campaign || got.Nonce != ([16]byte{}) {
			t.Errorf("got %+v", got)
		}
		nonces[i] = got.NoticeNonce()
		if nonces[i] == ([16]byte{}) {
			t.Errorf("derived nonce is zero")
		}
	}
	if nonces[0] != nonces[1] {
		t.Errorf("win and bill of one bid derive different nonces %x, %x", nonces[0], nonces[1])
	}
	other := sample()
	other.Imp = "2"
	if other.NoticeNonce() == nonces[0] {
		t.Errorf("another imp derives the same nonce")
	}
	// A version 2 payload with a nonce after it is not valid.
	payload := payloadV4(&win)
	payload = payload[:len(payload)-1] // the flags
	payload[0] = version2
	var got Token
	if _, err := k.Parse(&got, []byte(resign(payload)), 0, win.Issued, nil); !errors.Is(err, ErrMalformed) {
		t.Errorf("v2 with a nonce: %v, want ErrMalformed", err)
	}
}

// TestNonce checks that the nonce round-trips and is what NoticeNonce
// returns, and that a truncated nonce is malformed.
func TestNonce(t *testing.T) {
	k := mustKeys(t, key1)
	want := sample()
	for i := range want.Nonce {
		want.Nonce[i] = byte(i + 1)
	}
	tok, err := k.Append(nil, &want)
	if err != nil {
		t.Fatal(err)
	}
	var got Token
	if _, err := k.Parse(&got, tok, KindWin, want.Issued, nil); err != nil {
		t.Fatal(err)
	}
	if got.Nonce != want.Nonce || got.NoticeNonce() != want.Nonce {
		t.Errorf("nonce %x (notice nonce %x), want %x", got.Nonce, got.NoticeNonce(), want.Nonce)
	}
	v4 := payloadV4(&want)
	short := v4[:len(v4)-2] // no flags, the nonce one byte short
	if _, err := k.Parse(&got, []byte(resign(short)), 0, want.Issued, nil); !errors.Is(err, ErrMalformed) {
		t.Errorf("truncated nonce: %v, want ErrMalformed", err)
	}
	if _, err := k.Parse(&got, []byte(older(t, want, version4)), KindWin, want.Issued, nil); err != nil || got.Nonce != want.Nonce {
		t.Errorf("version 4: nonce %x, %v", got.Nonce, err)
	}
}

func TestHasProduct(t *testing.T) {
	tk := Token{Products: []int64{5, 9, 12}}
	for id, want := range map[int64]bool{5: true, 12: true, 9: true, 0: false, 6: false, -5: false} {
		if tk.HasProduct(id) != want {
			t.Errorf("HasProduct(%d) = %v", id, !want)
		}
	}
}

// TestTestFlag checks that the test bit round-trips, that a version 3
// token (no flags) parses as not a test, and that unknown flag bits are
// refused.
func TestTestFlag(t *testing.T) {
	k, _ := NewKeys(key1)
	now := time.Unix(1700000000, 0)
	for _, test := range []bool{false, true} {
		tok, err := k.Append(nil, &Token{Kind: KindImp, Issued: now, Expires: now.Add(time.Hour), Campaign: "c", Test: test})
		if err != nil {
			t.Fatal(err)
		}
		var got Token
		if _, err := k.Parse(&got, tok, KindImp, now, nil); err != nil || got.Test != test {
			t.Fatalf("test=%v: got %v, %v", test, got.Test, err)
		}
		tk := Token{Kind: KindImp, Issued: now, Expires: now.Add(time.Hour), Campaign: "c", Test: test}
		if _, err := k.Parse(&got, []byte(older(t, tk, version4)), KindImp, now, nil); err != nil || got.Test != test {
			t.Fatalf("version 4, test=%v: got %v, %v", test, got.Test, err)
		}
		if !test {
			if _, err := k.Parse(&got, []byte(older(t, tk, version3)), KindImp, now, nil); err != nil || got.Test {
				t.Fatalf("version 3: got %v, %v", got.Test, err)
			}
		}
	}
	tk := Token{Kind: KindLoss, Issued: now, Expires: now.Add(time.Hour)}
	tok, _ := k.Append(nil, &tk)
	payload := payload5(tok)
	payload[len(payload)-4] = 0x80 // flags, then value, segment, bucket (one byte each)
	var got Token
	if _, err := k.Parse(&got, []byte(resign5(payload, AudienceExchange)), 0, now, nil); !errors.Is(err, ErrMalformed) {
		t.Fatalf("unknown flag: %v", err)
	}
	payload = payloadV4(&tk)
	payload[len(payload)-1] = 0x80
	if _, err := k.Parse(&got, []byte(resign(payload)), 0, now, nil); !errors.Is(err, ErrMalformed) {
		t.Fatalf("unknown flag, version 4: %v", err)
	}
}

// TestBillingAndExchange checks that the billing mode and the exchange
// name round-trip, that a token without them (version 3, or the default
// exchange) parses as billing burl with no exchange, and that a billing
// value out of range is refused by Append and by Parse.
func TestBillingAndExchange(t *testing.T) {
	k, _ := NewKeys(key1)
	now := time.Unix(1700000000, 0)
	for _, c := range []struct {
		billing  Billing
		exchange string
		test     bool
	}{
		{BillingBurl, "", false}, {BillingNurl, "", true}, {BillingRender, "pbs", false}, {BillingBurl, "x-1", true},
	} {
		tok, err := k.Append(nil, &Token{Kind: KindImp, Issued: now, Expires: now.Add(time.Hour), Campaign: "c",
			Billing: c.billing, Exchange: c.exchange, Test: c.test})
		if err != nil {
			t.Fatal(err)
		}
		var got Token
		if _, err := k.Parse(&got, tok, KindImp, now, nil); err != nil || got.Billing != c.billing ||
			got.Exchange != c.exchange || got.Test != c.test || got.Campaign != "c" {
			t.Fatalf("%+v: got %+v, %v", c, got, err)
		}
		tk := Token{Kind: KindImp, Issued: now, Expires: now.Add(time.Hour), Campaign: "c",
			Billing: c.billing, Exchange: c.exchange, Test: c.test}
		if _, err := k.Parse(&got, []byte(older(t, tk, version4)), KindImp, now, nil); err != nil || got.Billing != c.billing ||
			got.Exchange != c.exchange || got.Test != c.test || got.Campaign != "c" {
			t.Fatalf("version 4 %+v: got %+v, %v", c, got, err)
		}
		if c.billing == BillingBurl && c.exchange == "" && !c.test {
			if _, err := k.Parse(&got, []byte(older(t, tk, version3)), KindImp, now, nil); err != nil ||
				got.Billing != BillingBurl || got.Exchange != "" {
				t.Fatalf("version 3: got %+v, %v", got, err)
			}
		}
	}
	if _, err := k.Append(nil, &Token{Kind: KindWin, Issued: now, Expires: now, Billing: 3}); !errors.Is(err, ErrField) {
		t.Fatalf("billing 3: %v, want ErrField", err)
	}
	tok, _ := k.Append(nil, &Token{Kind: KindWin, Issued: now, Expires: now.Add(time.Hour)})
	payload := payload5(tok)
	v4 := payloadV4(&Token{Kind: KindWin, Issued: now, Expires: now.Add(time.Hour)})
	var got Token
	for _, flags := range []byte{flagBilling, flagExchange} { // billing 3; an exchange flag with no name
		payload[len(payload)-4] = flags
		if _, err := k.Parse(&got, []byte(resign5(payload, AudienceExchange)), 0, now, nil); !errors.Is(err, ErrMalformed) {
			t.Fatalf("flags %#x: %v, want ErrMalformed", flags, err)
		}
		v4[len(v4)-1] = flags
		if _, err := k.Parse(&got, []byte(resign(v4)), 0, now, nil); !errors.Is(err, ErrMalformed) {
			t.Fatalf("version 4 flags %#x: %v, want ErrMalformed", flags, err)
		}
	}
	for _, s := range []string{"burl", "nurl", "render"} {
		if b, ok := ParseBilling(s); !ok || b.String() != s {
			t.Errorf("ParseBilling(%q) = %v, %v", s, b, ok)
		}
	}
	if b, ok := ParseBilling(""); !ok || b != BillingBurl {
		t.Errorf(`ParseBilling("") = %v, %v`, b, ok)
	}
	if _, ok := ParseBilling("imp"); ok {
		t.Error(`ParseBilling("imp") accepted`)
	}
}
