package token

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func bidSample() Token {
	tk := sample()
	tk.Kind = 0 // AppendBid signs for both audiences
	tk.ClickExpires = tk.Issued.Add(720 * time.Hour)
	tk.Group, tk.Products = 7, []int64{11, 12, 13}
	tk.ValueMicros, tk.Segment, tk.Bucket = 1_600_000, 42, 17
	tk.Billing, tk.Exchange = BillingNurl, "pbs"
	for i := range tk.Nonce {
		tk.Nonce[i] = byte(100 + i)
	}
	return tk
}

// TestAppendBid checks the two tokens of one bid: the same payload under
// one HMAC, the exchange token good for /win, /bill and /loss only, the
// markup token for /imp and /click only, and neither convertible into the
// other by changing its audience byte.
func TestAppendBid(t *testing.T) {
	k := mustKeys(t, key1, key2)
	want := bidSample()
	prefix := []byte("https://bidder.example/win?t=")
	out, mid, err := k.AppendBid(bytes.Clone(prefix), &want)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(out, prefix) {
		t.Fatalf("prefix lost: %s", out)
	}
	exch, markup := out[len(prefix):mid], out[mid:]
	if bytes.Equal(exch, markup) || len(exch) != len(markup) {
		t.Fatalf("tokens %s and %s", exch, markup)
	}
	if p1, p2 := payload5(exch), payload5(markup); !bytes.Equal(p1, p2) {
		t.Fatalf("payloads differ: %x %x", p1, p2)
	}
	// Append for one kind gives the same token as AppendBid for its audience.
	for _, c := range []struct {
		kind Kind
		tok  []byte
	}{{KindBill, exch}, {KindClick, markup}} {
		one := want
		one.Kind = c.kind
		if tok, _ := k.Append(nil, &one); !bytes.Equal(tok, c.tok) {
			t.Errorf("Append %v: %s, AppendBid: %s", c.kind, tok, c.tok)
		}
	}
	for _, c := range []struct {
		tok  []byte
		aud  Audience
		kind Kind
		ok   bool
	}{
		{exch, AudienceExchange, KindWin, true}, {exch, AudienceExchange, KindBill, true}, {exch, AudienceExchange, KindLoss, true},
		{exch, AudienceExchange, KindImp, false}, {exch, AudienceExchange, KindClick, false},
		{markup, AudienceMarkup, KindImp, true}, {markup, AudienceMarkup, KindClick, true},
		{markup, AudienceMarkup, KindWin, false}, {markup, AudienceMarkup, KindBill, false}, {markup, AudienceMarkup, KindLoss, false},
	} {
		var got Token
		_, err := k.Parse(&got, c.tok, c.kind, want.Issued, nil)
		if !c.ok {
			if !errors.Is(err, ErrKind) {
				t.Errorf("%v token as %v: %v, want ErrKind", c.aud, c.kind, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%v token as %v: %v", c.aud, c.kind, err)
		}
		w := want
		w.Kind = c.kind
		if !reflect.DeepEqual(got, w) {
			t.Errorf("%v token as %v:\n got %+v\nwant %+v", c.aud, c.kind, got, w)
		}
	}
	var got Token
	if _, err := k.Parse(&got, markup, 0, want.Issued, nil); err != nil || got.Kind != KindImp {
		t.Errorf("markup token, any kind: %v, %v", got.Kind, err)
	}
	if _, err := k.Parse(&got, exch, 0, want.Issued, nil); err != nil || got.Kind != KindWin {
		t.Errorf("exchange token, any kind: %v, %v", got.Kind, err)
	}
	// The markup token relabelled for the exchange (or the other way
	// round) does not verify: each shows only its half of the HMAC.
	for _, tok := range [][]byte{exch, markup} {
		raw, _ := base64.RawURLEncoding.DecodeString(string(tok))
		raw[len(raw)-audienceBytes-MACBytes] ^= 1
		if _, err := k.Parse(&got, []byte(base64.RawURLEncoding.EncodeToString(raw)), 0, want.Issued, nil); !errors.Is(err, ErrSignature) {
			t.Errorf("relabelled token: %v, want ErrSignature", err)
		}
	}
	// An audience byte out of range is malformed (the exchange token's
	// MAC still matches: an audience out of range is checked as the first).
	raw, _ := base64.RawURLEncoding.DecodeString(string(exch))
	raw[len(raw)-audienceBytes-MACBytes] = 2
	if _, err := k.Parse(&got, []byte(base64.RawURLEncoding.EncodeToString(raw)), 0, want.Issued, nil); !errors.Is(err, ErrMalformed) {
		t.Errorf("audience 2: %v, want ErrMalformed", err)
	}
}

// TestExpiries checks that a version 5 token carries two expiries: the
// notices' (Expires) and the click links' (ClickExpires), each checked for
// its routes; and that a token without ClickExpires gets Expires for both.
func TestExpiries(t *testing.T) {
	k := mustKeys(t, key1)
	tk := bidSample()
	tk.Expires = tk.Issued.Add(time.Hour)
	_, mid, _ := k.AppendBid(nil, &tk)
	out, _, _ := k.AppendBid(nil, &tk)
	exch, markup := out[:mid], out[mid:]
	late := tk.Issued.Add(2 * time.Hour) // notices expired, clicks not
	var got Token
	for _, c := range []struct {
		tok  []byte
		kind Kind
		at   time.Time
		want error
	}{
		{exch, KindBill, tk.Expires, nil}, {exch, KindBill, late, ErrExpired}, {exch, KindLoss, late, ErrExpired},
		{markup, KindImp, late, ErrExpired}, {markup, KindClick, late, nil},
		{markup, KindClick, tk.ClickExpires, nil}, {markup, KindClick, tk.ClickExpires.Add(time.Second), ErrExpired},
	} {
		if _, err := k.Parse(&got, c.tok, c.kind, c.at, nil); !errors.Is(err, c.want) || (err == nil) != (c.want == nil) {
			t.Errorf("%v at %v: %v, want %v", c.kind, c.at.Sub(tk.Issued), err, c.want)
		}
	}
	if !got.Expires.Equal(tk.Expires) || !got.ClickExpires.Equal(tk.ClickExpires) {
		t.Errorf("expiries %v %v", got.Expires, got.ClickExpires)
	}
	one := sample()
	tok, _ := k.Append(nil, &one)
	if _, err := k.Parse(&got, tok, KindWin, one.Issued, nil); err != nil || !got.ClickExpires.Equal(one.Expires) {
		t.Errorf("no ClickExpires: %v, %v", got.ClickExpires, err)
	}
	bad := sample()
	bad.ClickExpires = bad.Issued.Add(-time.Second)
	if _, err := k.Append(nil, &bad); !errors.Is(err, ErrField) {
		t.Errorf("click expiry before issue: %v, want ErrField", err)
	}
	bad = sample()
	bad.ValueMicros = -1
	if _, _, err := k.AppendBid(nil, &bad); !errors.Is(err, ErrField) {
		t.Errorf("negative value: %v, want ErrField", err)
	}
}

// TestShadingFieldBounds checks that a version 5 payload whose segment,
// bucket or value is out of its type's range is malformed, not truncated.
func TestShadingFieldBounds(t *testing.T) {
	k := mustKeys(t, key1)
	tk := sample() // value, segment and bucket zero: the last 3 bytes
	tok, _ := k.Append(nil, &tk)
	base := payload5(tok)
	base = base[:len(base)-3]
	var got Token
	for _, c := range []struct {
		vals [3]uint64
		ok   bool
	}{
		{[3]uint64{1 << 62, 1<<32 - 1, 1<<16 - 1}, true},
		{[3]uint64{1<<62 + 1, 0, 0}, false},
		{[3]uint64{0, 1 << 32, 0}, false},
		{[3]uint64{0, 0, 1 << 16}, false},
	} {
		p := bytes.Clone(base)
		for _, v := range c.vals {
			p = binary.AppendUvarint(p, v)
		}
		_, err := k.Parse(&got, []byte(resign5(p, AudienceExchange)), KindWin, tk.Issued, nil)
		if c.ok != (err == nil) || !c.ok && !errors.Is(err, ErrMalformed) {
			t.Errorf("%v: %v", c.vals, err)
		}
		if c.ok && (got.ValueMicros != 1<<62 || got.Segment != 1<<32-1 || got.Bucket != 1<<16-1) {
			t.Errorf("%v: got %d %d %d", c.vals, got.ValueMicros, got.Segment, got.Bucket)
		}
	}
	if _, err := k.Parse(&got, []byte(resign5(append(bytes.Clone(base), 0, 0, 0, 0), AudienceExchange)), 0, tk.Issued, nil); !errors.Is(err, ErrMalformed) {
		t.Errorf("trailing byte: %v, want ErrMalformed", err)
	}
}

// TestVersion4 checks that tokens of the format before the current one
// (one kind per token, one expiry, no shading fields) still verify for
// their whole lifetime (720h for a click), for their own kind only.
func TestVersion4(t *testing.T) {
	k := mustKeys(t, key1)
	click := bidSample()
	click.Kind, click.Expires, click.ClickExpires = KindClick, click.ClickExpires, time.Time{}
	click.ValueMicros, click.Segment, click.Bucket = 0, 0, 0
	v4 := older(t, click, version4)
	var got Token
	if _, err := k.Parse(&got, []byte(v4), KindClick, click.Expires, nil); err != nil {
		t.Fatalf("version 4 click at its expiry: %v", err)
	}
	want := click
	want.ClickExpires = click.Expires
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	if _, err := k.Parse(&got, []byte(v4), KindClick, click.Expires.Add(time.Second), nil); !errors.Is(err, ErrExpired) {
		t.Errorf("after expiry: %v", err)
	}
	if _, err := k.Parse(&got, []byte(v4), KindImp, click.Issued, nil); !errors.Is(err, ErrKind) {
		t.Errorf("version 4 click token as imp: %v, want ErrKind", err)
	}
	win := sample()
	if _, err := k.Parse(&got, []byte(older(t, win, version4)), KindBill, win.Issued, nil); !errors.Is(err, ErrKind) {
		t.Errorf("version 4 win token as bill: %v, want ErrKind", err)
	}
}

// TestAppendBidEveryLength: AppendBid's two tokens equal Append's for
// payloads of every length modulo 3 (the base64 of their shared part is
// made once).
func TestAppendBidEveryLength(t *testing.T) {
	k := mustKeys(t, key1, key2)
	for n := range 7 {
		want := bidSample()
		want.Auction = strings.Repeat("a", n+1)
		out, mid, err := k.AppendBid(nil, &want)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			kind Kind
			tok  []byte
		}{{KindBill, out[:mid]}, {KindClick, out[mid:]}} {
			one := want
			one.Kind = c.kind
			if tok, _ := k.Append(nil, &one); !bytes.Equal(tok, c.tok) {
				t.Errorf("auction id of %d bytes: Append %v: %s, AppendBid: %s", n+1, c.kind, tok, c.tok)
			}
		}
	}
}
