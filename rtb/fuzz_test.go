package rtb

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/prebid/openrtb/v20/openrtb2"
)

// addRequestSeeds adds every request in testdata and a few bad bodies.
func addRequestSeeds(f *testing.F) {
	files := globT(f, filepath.Join("testdata", "request-*.json"))
	files = append(files, globT(f, filepath.Join("testdata", "corpus", "*.json"))...)
	for _, file := range files {
		f.Add(readT(f, file))
	}
	for _, s := range []string{"", "null", "[]", okReq, nested(70), `{"id":"r","imp":{}}`,
		`{"id":"r","tmax":"1","imp":[{"id":"1","banner":{}}]}`, "{\"id\":\"\xff\"}",
		`{"id":"r\ud800","imp":[{"id":"1","banner":{"w":1e2}}]}`} {
		f.Add([]byte(s))
	}
}

// FuzzDecodeRequest: DecodeRequest never panics and fails only with a
// *RequestError (nbr 2); on JSON within its limits it agrees with
// encoding/json followed by Validate both ways (accepted by one exactly
// when accepted by the other, to deep-equal values), keys in any case
// included, and its Exts agree with the reference written on encoding/json
// (refExts); and the generated decoder alone, run on any bytes, neither
// panics nor loops, and accepts only what checkJSON accepts.
func FuzzDecodeRequest(f *testing.F) {
	addRequestSeeds(f)
	for _, s := range []string{`{"ID":"r","Imp":[{"iD":"1","BANNER":{"W":1}}]}`, `{"ſite":{},"id":"\u0069","imp":[{"id":"1","banner":{}}]}`,
		`{"id":"r","imp":[{"id":"1","banner":{}}],"imp":[{"id":"2"}]}`, `{"id":"r","imp":[{"id":"1","video":{"w":1.5}}]}`,
		`{"id":"r","imp":[{"id":"1","banner":{"format":[{"w":1},null,{"h":2}]}}],"ext":null}`,
		// The ext members that Exts holds, of every type.
		`{"id":"r","imp":[{"id":"1","banner":{}}],"regs":{"ext":{"gdpr":"1","us_privacy":"1YN\u002d","gpp":"D","gpp_sid":[2,6],"dsa":{"dsarequired":2,"transparency":[{"domain":"d","dsaparams":[1,"2"]},0]}}},"user":{"ext":{"consent":"C\/x","consent":1}}}`,
		`{"id":"r","imp":[{"id":"1","banner":{}}],"regs":{"ext":{"gdpr":1.5,"gpp":1,"gpp_sid":"2","dsa":[]}},"regs":{"ext":{"gdpr":true}}}`,
		`{"id":"r","imp":[{"id":"1","banner":{}}],"source":{"ext":{"schain":{"complete":1,"nodes":[{"asi":"a\u00e9","hp":1},{"sid":2}]}}}}`,
		`{"id":"r","imp":[{"id":"1","banner":{}}],"ext":{"prebid":{"currency":{"rates":{"EUR":{"USD":1.1,"X":"1"},"GBP":[]},"usepbsrates":false}}}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var raw openrtb2.BidRequest
		var rawExts Exts
		rawErr := decodeBidRequest(body, &raw, &rawExts, &Limits{MaxDepth: DefaultMaxDepth, MaxElements: DefaultMaxElements, MaxStringBytes: DefaultMaxStringBytes}) // no recover here: a panic fails the fuzz test

		// The decoder validates as it decodes: what it accepts, checkJSON
		// accepts (DecodeRequest below checks the converse).
		if msg, off := checkJSON(body, DefaultMaxDepth, DefaultMaxElements, DefaultMaxStringBytes); rawErr == nil && msg != "" {
			t.Fatalf("the decoder accepted a body checkJSON rejects: %s at %d", msg, off)
		}

		var req openrtb2.BidRequest
		var exts Exts
		err := (&Decoder{}).DecodeRequestExts(body, &req, &exts)
		if err != nil {
			var re *RequestError
			if !errors.As(err, &re) || re.NBR != NoBidInvalidRequest {
				t.Fatalf("error %T %v", err, err)
			}
		}
		if len(body) > DefaultMaxBodyBytes {
			return
		}
		if msg, _ := checkJSON(body, DefaultMaxDepth, DefaultMaxElements, DefaultMaxStringBytes); msg != "" || body[skipWS(body, 0)] != '{' {
			if err == nil {
				t.Fatalf("accepted a body checkJSON rejects (%s)", msg)
			}
			return
		}
		var want openrtb2.BidRequest
		wantErr := json.Unmarshal(body, &want)
		if wantErr == nil {
			wantErr = Validate(&want)
		}
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("DecodeRequest says %v, encoding/json and Validate say %v", err, wantErr)
		}
		if err == nil && !reflect.DeepEqual(normImps(req), normImps(want)) {
			t.Fatalf("decoded differently from encoding/json:\n  got %+v\n  std %+v", req, want)
		}
		if err == nil {
			checkExtsMatch(t, body, &exts)
		}
	})
}

// FuzzCheckJSON: checkJSON accepts exactly valid UTF-8 JSON, except for its
// documented bounds (depth, number length).
func FuzzCheckJSON(f *testing.F) {
	addRequestSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		msg, off := checkJSON(b, 64, 1<<30, 1<<30)
		valid := json.Valid(b) && utf8.Valid(b)
		switch {
		case msg == "" && !valid:
			t.Fatalf("accepted invalid JSON %q", b)
		case msg != "" && valid && msg != "JSON nested too deep" && msg != "JSON number too long":
			t.Fatalf("rejected valid JSON %q: %s at %d", b, msg, off)
		case msg != "" && (off < 0 || off > len(b)):
			t.Fatalf("offset %d out of range", off)
		}
	})
}

func FuzzDecryptPrice(f *testing.F) {
	f.Add("YWJjMTIzZGVmNDU2Z2hpN7fhCuPemCAWJRxOgA")
	f.Add("YWJjMTIzZGVmNDU2Z2hpN7fhCuPemCce_6msaw==")
	f.Add("YWJjMTIzZGVmNDU2Z2hpN7fhCuPemCAWJRxOlA")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		micros, err := DecryptPrice(googleEncKey, googleIntKey, s)
		if err != nil {
			if !errors.Is(err, ErrPriceLength) && !errors.Is(err, ErrPriceBase64) &&
				!errors.Is(err, ErrPriceSignature) && !errors.Is(err, ErrPriceNegative) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		raw, err := base64.RawURLEncoding.DecodeString(strings.TrimSuffix(s, "=="))
		if err != nil {
			t.Fatal(err)
		}
		if tok := EncryptPrice(googleEncKey, googleIntKey, raw[:16], micros); tok != strings.TrimSuffix(s, "==") {
			t.Fatalf("accepted %q (%d micros), but it encrypts to %q", s, micros, tok)
		}
	})
}

// FuzzAppendString: string escaping is byte-identical to encoding/json's,
// with HTML escaping off (through AppendNoBid) and on (AppendStringHTML,
// json.Marshal); JSONSafe is true exactly when
// escaping changes nothing, and then an Encoder trusting the string as an
// adm writes what AppendResponse writes.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "abc", "<a href=\"x\">&amp;</a>", "\x00\x1f\x7f\\\"", "\xff\xc3(", "\u2028\u2029é😀",
		// long enough for the 16- and 8-byte steps, the unsafe byte in each
		"0123456789abcdef0123456789abcdef\"", "0123456789abcdef01234\\6789", "0123456789abcdef012345678\x01", "0123456789ab\xe2\x80\xa8cdef0123"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := appendString(nil, s)
		want := stdEncode(t, s)
		if !bytes.Equal(got, want) {
			t.Fatalf("appendString(%q) = %s, encoding/json %s", s, got, want)
		}
		html := AppendStringHTML(nil, s)
		if want, err := json.Marshal(s); err != nil || !bytes.Equal(html, want) {
			t.Fatalf("AppendStringHTML(%q) = %s, json.Marshal %s (%v)", s, html, want, err)
		}
		safe := JSONSafe(s)
		if unchanged := string(got) == `"`+s+`"`; safe != unchanged {
			t.Fatalf("JSONSafe(%q) = %v, escaping changes it: %v", s, safe, !unchanged)
		}
		if safe {
			resp := &openrtb2.BidResponse{ID: "r", SeatBid: []openrtb2.SeatBid{{Bid: []openrtb2.Bid{{ID: "b", ImpID: "1", Price: 1, AdM: s}}}}}
			plain, _ := AppendResponse(nil, resp)
			trusted, _ := (&Encoder{SafeAdM: func(*openrtb2.Bid) bool { return true }}).AppendResponse(nil, resp)
			if !bytes.Equal(plain, trusted) {
				t.Fatalf("trusted adm %q: %s, AppendResponse %s", s, trusted, plain)
			}
		}
	})
}
