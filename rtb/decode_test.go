package rtb

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/prebid/openrtb/v20/openrtb2"
)

const okReq = `{"id":"r1","imp":[{"id":"1","banner":{"w":300,"h":250}}],"site":{"page":"https://example.com/"},"tmax":120}`

// manyImps returns a request with n banner imps.
func manyImps(n int) string {
	var b strings.Builder
	b.WriteString(`{"id":"r","imp":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"id":"` + strconv.Itoa(i) + `","banner":{}}`)
	}
	b.WriteString(`]}`)
	return b.String()
}

// withBcat returns a valid request whose bcat has n elements.
func withBcat(n int) string {
	return `{"id":"r","imp":[{"id":"1","banner":{}}],"bcat":[` + strings.Repeat(`"a",`, n-1) + `"a"]}`
}

// nested returns a valid request whose imp ext nests n arrays (total depth n+3).
func nested(n int) string {
	return `{"id":"r","imp":[{"id":"1","banner":{},"ext":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}]}`
}

func TestDecodeRequestOK(t *testing.T) {
	var req openrtb2.BidRequest
	if err := DecodeRequest([]byte(okReq), &req); err != nil {
		t.Fatal(err)
	}
	if req.ID != "r1" || len(req.Imp) != 1 || req.Imp[0].Banner == nil || *req.Imp[0].Banner.W != 300 ||
		req.Site == nil || req.Site.Page != "https://example.com/" || req.TMax != 120 {
		t.Fatalf("decoded %+v", req)
	}
	// Boundaries that must still pass.
	for name, body := range map[string]string{
		"depth 64":                nested(61),
		"10000 bcat":              withBcat(10000),
		"100 imps":                manyImps(100),
		"leading whitespace":      " \n\t" + okReq + "\n",
		"unicode escapes":         `{"id":"r\u00e9\ud83d\ude00","imp":[{"id":"1","native":{"request":"{}"}}]}`,
		"utf-8":                   `{"id":"réd😀","imp":[{"id":"1","audio":{}}]}`,
		"at 501":                  `{"id":"r","at":501,"imp":[{"id":"1","video":{}}]}`,
		"null fields":             `{"id":"r","imp":[{"id":"1","banner":{},"pmp":null}],"site":null,"app":null,"ext":null}`,
		"unknown fields":          `{"id":"r","x":{"y":[1,2.5e-3,true,false,null]},"imp":[{"id":"1","banner":{},"zz":1}]}`,
		"string ext with escapes": `{"id":"r","imp":[{"id":"1","banner":{}}],"ext":{"a":"\"\\\/\b\f\n\r\t"}}`,
	} {
		if err := DecodeRequest([]byte(body), &req); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestDecodeRequestBad(t *testing.T) {
	invalidUTF8 := `{"id":"r` + "\xff\xfe" + `","imp":[{"id":"1","banner":{}}]}`
	cases := []struct {
		name  string
		body  string
		field string // expected RequestError.Field; "" means do not check
	}{
		{"empty body", "", ""},
		{"whitespace", " \n ", ""},
		{"null", "null", ""},
		{"array", "[]", ""},
		{"string", `"x"`, ""},
		{"number", "12", ""},
		{"truncated", `{"id":"r","imp":[{"id":"1"`, ""},
		{"trailing comma", `{"id":"r","imp":[{"id":"1","banner":{}}],}`, ""},
		{"trailing data", okReq + `{}`, ""},
		{"single quotes", `{'id':'r'}`, ""},
		{"bare word", `{"id":r}`, ""},
		{"NaN", `{"id":"r","imp":[{"id":"1","banner":{},"bidfloor":NaN}]}`, ""},
		{"leading zero", `{"id":"r","tmax":0123,"imp":[{"id":"1","banner":{}}]}`, ""},
		{"bad escape", `{"id":"r\x","imp":[{"id":"1","banner":{}}]}`, ""},
		{"raw control char", "{\"id\":\"r\x01\",\"imp\":[{\"id\":\"1\",\"banner\":{}}]}", ""},
		{"invalid UTF-8 in string", invalidUTF8, ""},
		{"invalid UTF-8 outside string", "{\"id\":\"r\",\xff\"imp\":[]}", ""},
		{"UTF-8 BOM", "\xef\xbb\xbf" + okReq, ""},
		{"imp as object", `{"id":"r","imp":{"id":"1","banner":{}}}`, ""},
		{"tmax as string", `{"id":"r","tmax":"100","imp":[{"id":"1","banner":{}}]}`, ""},
		{"id as number", `{"id":1,"imp":[{"id":"1","banner":{}}]}`, ""},
		{"banner as array", `{"id":"r","imp":[{"id":"1","banner":[]}]}`, ""},
		{"bidfloor as string", `{"id":"r","imp":[{"id":"1","banner":{},"bidfloor":"1.5"}]}`, ""},
		{"test overflows int8", `{"id":"r","test":300,"imp":[{"id":"1","banner":{}}]}`, ""},
		{"tmax float", `{"id":"r","tmax":1.5,"imp":[{"id":"1","banner":{}}]}`, ""},
		{"ext wrong type is fine but imp.ext unterminated", `{"id":"r","imp":[{"id":"1","banner":{},"ext":{"a":}}]}`, ""},
		{"missing id", `{"imp":[{"id":"1","banner":{}}]}`, "id"},
		{"id with control char", `{"id":"r\u0001","imp":[{"id":"1","banner":{}}]}`, "id"},
		{"id with a lone surrogate", `{"id":"r\ud800","imp":[{"id":"1","banner":{}}]}`, "id"},
		{"id with a lone low surrogate", `{"id":"\udc00","imp":[{"id":"1","banner":{}}]}`, "id"},
		{"imp id with a lone surrogate", `{"id":"r","imp":[{"id":"1\ud800x","banner":{}}]}`, "imp[0].id"},
		{"id too long", `{"id":"` + strings.Repeat("x", 300) + `","imp":[{"id":"1","banner":{}}]}`, "id"},
		{"missing imp", `{"id":"r","site":{}}`, "imp"},
		{"empty imp", `{"id":"r","imp":[]}`, "imp"},
		{"null imp", `{"id":"r","imp":null}`, "imp"},
		{"imp without id", `{"id":"r","imp":[{"banner":{}}]}`, "imp[0].id"},
		{"imp without media", `{"id":"r","imp":[{"id":"1","banner":{}},{"id":"2","pmp":{}}]}`, "imp[1]"},
		{"duplicate imp ids", `{"id":"r","imp":[{"id":"1","banner":{}},{"id":"2","video":{}},{"id":"1","banner":{}}]}`, "imp[2].id"},
		{"duplicate imp ids (map)", strings.Replace(manyImps(60), `"id":"59"`, `"id":"7"`, 1), "imp[59].id"},
		{"101 imps", manyImps(101), "imp"},
		{"10k imps", manyImps(10000), ""},
		{"100k-element array", withBcat(100000), ""},
		{"10001-element array", withBcat(10001), ""},
		{"1000-deep nesting", nested(1000), ""},
		{"65-deep nesting", nested(62), ""},
		{"huge string", `{"id":"r","imp":[{"id":"1","banner":{}}],"ext":{"s":"` + strings.Repeat("x", 100<<10) + `"}}`, ""},
		{"huge body", `{"id":"r","imp":[{"id":"1","banner":{}}],"ext":{"s":[` + strings.Repeat(`"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",`, 20000) + `""]}}`, ""},
		{"long number", `{"id":"r","tmax":1` + strings.Repeat("0", 100) + `,"imp":[{"id":"1","banner":{}}]}`, ""},
		{"site and app", `{"id":"r","imp":[{"id":"1","banner":{}}],"site":{},"app":{}}`, "site"},
		{"app and dooh", `{"id":"r","imp":[{"id":"1","banner":{}}],"dooh":{},"app":{}}`, "site"},
		{"negative tmax", `{"id":"r","tmax":-1,"imp":[{"id":"1","banner":{}}]}`, "tmax"},
		{"negative bidfloor", `{"id":"r","imp":[{"id":"1","banner":{},"bidfloor":-0.01}]}`, "imp[0].bidfloor"},
		{"bad bidfloorcur", `{"id":"r","imp":[{"id":"1","banner":{},"bidfloorcur":"US$"}]}`, "imp[0].bidfloorcur"},
		{"at 3", `{"id":"r","at":3,"imp":[{"id":"1","banner":{}}]}`, "at"},
		{"negative banner w", `{"id":"r","imp":[{"id":"1","banner":{"w":-1}}]}`, "imp[0].banner"},
		{"negative format h", `{"id":"r","imp":[{"id":"1","banner":{"format":[{"w":1,"h":1},{"w":1,"h":-5}]}}]}`, "imp[0].banner.format[1]"},
	}
	var req openrtb2.BidRequest
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// Leave state behind to check that a failed decode resets req.
			if err := DecodeRequest([]byte(okReq), &req); err != nil {
				t.Fatal(err)
			}
			err := DecodeRequest([]byte(c.body), &req)
			var re *RequestError
			if !errors.As(err, &re) {
				t.Fatalf("want *RequestError, got %T %v", err, err)
			}
			if re.NBR != NoBidInvalidRequest {
				t.Errorf("nbr %d, want 2", re.NBR)
			}
			t.Log(err)
			if c.field != "" && re.Field != c.field {
				t.Errorf("field %q, want %q (%v)", re.Field, c.field, err)
			}
			if re.Field == "" && re.Msg == "" {
				t.Error("error says nothing")
			}
			if len(re.Error()) > 200 {
				t.Errorf("error message too long (%d bytes), may carry request content", len(re.Error()))
			}
			if re.Field == "" && req.ID != "" {
				t.Errorf("req not reset after a failed decode: id %q", req.ID)
			}
		})
	}
}

// A reused request must decode exactly like a fresh one: nothing of the
// previous request may leak into the next (imp elements included).
func TestDecodeRequestReuse(t *testing.T) {
	bodies := [][]byte{
		readT(t, filepath.Join("testdata", "request-4-video.json")),
		readT(t, filepath.Join("testdata", "request-3-mobile.json")),
		readT(t, filepath.Join("testdata", "corpus", "adkernel-02a27e8546a7.json")),
		readT(t, filepath.Join("testdata", "request-1-simple-banner.json")),
		[]byte(manyImps(3)),
		[]byte(okReq),
	}
	var reused openrtb2.BidRequest
	for round := range 2 {
		for i, body := range bodies {
			if err := DecodeRequest(body, &reused); err != nil {
				t.Fatalf("body %d: %v", i, err)
			}
			var fresh openrtb2.BidRequest
			if err := json.Unmarshal(body, &fresh); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(normImps(reused), normImps(fresh)) {
				t.Fatalf("round %d body %d: reused request differs from a fresh decode", round, i)
			}
		}
	}
}

func TestDecoderLimits(t *testing.T) {
	d := Decoder{Limits: Limits{MaxBodyBytes: 200, MaxDepth: 4, MaxElements: 3, MaxStringBytes: 8, MaxImps: 2, MaxIDBytes: 4}}
	var req openrtb2.BidRequest
	ok := `{"id":"r","imp":[{"id":"1","banner":{}}]}`
	if err := d.DecodeRequest([]byte(ok), &req); err != nil {
		t.Fatalf("within limits: %v", err)
	}
	for name, body := range map[string]string{
		"body":     ok + strings.Repeat(" ", 200),
		"depth":    `{"id":"r","imp":[{"id":"1","banner":{"format":[{}]}}]}`,
		"elements": `{"id":"r","imp":[{"id":"1","banner":{}}],"bcat":["a","b","c","d"]}`,
		"string":   `{"id":"r","imp":[{"id":"1","banner":{}}],"cur":["123456789"]}`,
		"imps":     `{"id":"r","imp":[{"id":"1","banner":{}},{"id":"2","banner":{}},{"id":"3","banner":{}}]}`,
		"id":       `{"id":"12345","imp":[{"id":"1","banner":{}}]}`,
	} {
		var re *RequestError
		if err := d.DecodeRequest([]byte(body), &req); !errors.As(err, &re) || re.NBR != NoBidInvalidRequest {
			t.Errorf("%s: want RequestError nbr 2, got %v", name, err)
		}
	}
	if defaultLimits() != (Limits{}).withDefaults() {
		t.Error("zero Limits is not defaultLimits")
	}
	if (Limits{MaxDepth: 1000}).withDefaults().MaxDepth != maxDepthCap {
		t.Error("MaxDepth above 64 must fall back to 64")
	}
}

func TestValidate(t *testing.T) {
	good := func() *openrtb2.BidRequest {
		return &openrtb2.BidRequest{ID: "r", Imp: []openrtb2.Imp{{ID: "1", Native: &openrtb2.Native{}}}}
	}
	if err := Validate(good()); err != nil {
		t.Fatal(err)
	}
	r := good()
	r.Imp = append(r.Imp, openrtb2.Imp{ID: "2", Video: &openrtb2.Video{}, BidFloor: 1.5, BidFloorCur: "EUR"})
	if err := Validate(r); err != nil {
		t.Fatal(err)
	}
	if err := (&Decoder{Limits: Limits{MaxImps: 1}}).Validate(r); err == nil {
		t.Fatal("MaxImps 1 accepted 2 imps")
	}
	r.Imp[1].ID = "1"
	var re *RequestError
	if err := Validate(r); !errors.As(err, &re) || re.Field != "imp[1].id" {
		t.Fatalf("duplicate id: %v", err)
	}
	if got := re.Error(); got != "rtb: invalid request: imp[1].id: duplicate imp id" {
		t.Errorf("Error() = %q", got)
	}
	if got := (&RequestError{Msg: "x"}).Error(); got != "rtb: invalid request: x" {
		t.Errorf("Error() = %q", got)
	}
}

func TestCheckJSON(t *testing.T) {
	for _, s := range []string{`{}`, `[]`, `0`, `-0.5e+10`, `"a\u00e9"`, ` [1, {"a" : [true,false,null]} ] `, `{"":""}`} {
		if msg, off := checkJSON([]byte(s), 64, 100, 100); msg != "" {
			t.Errorf("%s: %s at %d", s, msg, off)
		}
	}
	for _, s := range []string{``, `{`, `[1,]`, `{"a"}`, `{"a":1,}`, `01`, `1.`, `.1`, `1e`, `-`, `tru`, `nul`, `"\u12"`, `"abc`, `{1:2}`, `[1 2]`, `{"a":1 "b":2}`, `]`, `[}`, `{]`} {
		if msg, _ := checkJSON([]byte(s), 64, 100, 100); msg == "" {
			t.Errorf("%q accepted", s)
		}
		if json.Valid([]byte(s)) {
			t.Errorf("test bug: %q is valid JSON", s)
		}
	}
}

// Corner cases of JSON decoding where decoders often differ: goccy/go-json
// (behind DecodeRequest) must agree with encoding/json on accept/reject and
// on the decoded value.
func TestDecodeMatchesEncodingJSON(t *testing.T) {
	imp := `"imp":[{"id":"1","banner":{}}]`
	for _, body := range []string{
		`{"id":"r",` + imp + `,"site":{"id":"a"},"site":{"page":"b"}}`,
		`{"id":"r",` + imp + `,"id":"s"}`,
		`{"\u0069d":"r",` + imp + `}`,
		`{"id":"r\ud800x\udc00\u0000",` + imp + `}`,
		`{"id":"r",` + imp + `,"tmax":1e2}`,
		`{"id":"r",` + imp + `,"tmax":-0}`,
		`{"id":"r",` + imp + `,"tmax":9223372036854775808}`,
		`{"id":"r",` + imp + `,"tmax":null}`,
		`{"id":"r","imp":[{"id":"1","banner":{},"bidfloor":1.5E-3}]}`,
		`{"id":"r","imp":[{"id":"1","banner":{},"bidfloor":1e400}]}`,
		`{"id":"r","imp":[null,{"id":"1","banner":{}}]}`,
		`{"id":"r",` + imp + `,"ext":{"a":[1,2,{"b":"c"}]},"ext":null}`,
		`{"id":"r",` + imp + `,"bcat":["a",null,"b"]}`,
		`{"id":"r",` + imp + `,"bcat":[1]}`,
		`{"id":"r",` + imp + `,"device":{"geo":{"lat":"1"}}}`,
		`{"id":"r",` + imp + `,"device":{"geo":{"lat":1}},"device":{"ua":"x"}}`,
		`{"id":"r",` + imp + `,"test":1.0}`,
		`{"id":"r",` + imp + `,"user":{"eids":[{"source":"s","uids":[{"id":"u","atype":1}]}]}}`,
		`{"id":"r",` + imp + `,"regs":{"gdpr":1,"us_privacy":"1YNN","ext":{"gdpr":1}}}`,
		`{"id":"r",` + imp + `,"source":{"schain":{"complete":1,"nodes":[{"asi":"a","sid":"1","hp":1}],"ver":"1.0"}}}`,
		// Keys in any case match as in encoding/json (U+212A KELVIN SIGN folds to k).
		`{"ID":"r","Imp":[{"iD":"1","BANNER":{"W":300,"H":250}}],"TMax":120}`,
		`{"id":"r",` + imp + `,"device":{"ua":"a"},"Device":{"UA":"b","ip":"1.2.3.4"}}`,
		`{"id":"r",` + imp + `,"user":{"\u212Aeywords":"k"}}`,
		// A repeated array decodes into the elements already there.
		`{"id":"r","imp":[{"id":"1","banner":{"w":1}}],"imp":[{"banner":{"h":2}},{"id":"2","native":{"request":"{}"}}]}`,
		`{"id":"r",` + imp + `,"cur":["USD","EUR"],"cur":[null]}`,
		`{"id":"r\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00",` + imp + `,"tmax":-9223372036854775808}`,
		`{"id":"r",` + imp + `,"test":128}`,
		`{"id":"r",` + imp + `,"site":[]}`,
		`{"id":"r",` + imp + `,"bcat":{}}`,
		`{"id":"r",` + imp + `,"wseat":true}`,
	} {
		var got, want openrtb2.BidRequest
		gotErr := DecodeRequest([]byte(body), &got)
		wantErr := json.Unmarshal([]byte(body), &want)
		if wantErr == nil {
			wantErr = Validate(&want)
		}
		if (gotErr == nil) != (wantErr == nil) {
			t.Errorf("%s:\n  DecodeRequest: %v\n  encoding/json: %v", body, gotErr, wantErr)
			continue
		}
		if gotErr == nil && !reflect.DeepEqual(normImps(got), normImps(want)) {
			t.Errorf("%s: decoded differently:\n got %+v\nwant %+v", body, got, want)
		}
	}
}

// TestDecodeRequestLoneSurrogateID: an id that decoding cannot keep as sent
// (a lone surrogate becomes U+FFFD) is invalid and not echoed mangled.
func TestDecodeRequestLoneSurrogateID(t *testing.T) {
	var req openrtb2.BidRequest
	err := DecodeRequest([]byte(`{"id":"abc\ud800","imp":[{"id":"1","banner":{}}]}`), &req)
	var re *RequestError
	if !errors.As(err, &re) || re.Field != "id" || re.NBR != NoBidInvalidRequest {
		t.Fatalf("got %v, want an invalid id (nbr 2)", err)
	}
	if req.ID != "" {
		t.Errorf("req.ID %q, want it cleared (not echoed mangled)", req.ID)
	}
	if err := DecodeRequest([]byte(`{"id":"\ud83d\ude00","imp":[{"id":"1","banner":{}}]}`), &req); err != nil || req.ID != "\U0001F600" {
		t.Errorf("a surrogate pair: %v, id %q", err, req.ID)
	}
}

func TestDecodeRequestKeepsIDOnValidationError(t *testing.T) {
	var req openrtb2.BidRequest
	err := DecodeRequest([]byte(`{"id":"keep-me","imp":[{"id":"1"}]}`), &req)
	var re *RequestError
	if !errors.As(err, &re) || re.Field != "imp[0]" {
		t.Fatalf("got %v", err)
	}
	if req.ID != "keep-me" {
		t.Errorf("req.ID %q after a validation error, want it kept for the no-bid", req.ID)
	}
	if got := string(AppendNoBid(nil, req.ID, re.NBR)); got != `{"id":"keep-me","nbr":2}` {
		t.Errorf("no-bid %s", got)
	}
}

// TestDecoderValidatesInOnePass: the decoder alone (no checkJSON before
// it) accepts a body exactly when checkJSON does, with the limits met or
// passed in each kind of place: decoded fields, decoded arrays, skipped
// keys, raw exts and the exts read into Exts; and DecodeRequest names the
// problem as checkJSON does.
func TestDecoderValidatesInOnePass(t *testing.T) {
	lim := Limits{MaxBodyBytes: 1 << 20, MaxDepth: 8, MaxElements: 3, MaxStringBytes: 8, MaxImps: 10, MaxIDBytes: 8}
	imp := `"imp":[{"id":"1","banner":{}}]`
	var bodies []string
	for _, place := range []string{
		`"site":{"name":%s}`,         // a decoded string field
		`"bcat":[%s]`,                // a decoded array
		`"unknown":%s`,               // a skipped key
		`"ext":{"x":%s}`,             // a raw ext
		`"regs":{"ext":{"gdpr":%s}}`, // an ext member read into Exts
		`"regs":{"ext":{"dsa":{"transparency":[{"dsaparams":[%s]}]}}}`,
		`"source":{"ext":{"schain":{"nodes":[{"asi":%s}]}}}`,
		`"ext":{"prebid":{"currency":{"rates":{"EUR":{"USD":%s}}}}}`,
		`"user":{"ext":{"consent":%s}}`,
	} {
		for _, v := range []string{
			`"12345678"`, `"123456789"`, `"é1234"`, `"\u00e9\u00e9\u00e9x"`, `"a\"b"`, // string bytes: 8 ok, 9 not (raw, escapes counted)
			`[1,2,3]`, `[1,2,3,4]`, `{"a":1,"b":2,"c":3}`, `{"a":1,"b":2,"c":3,"d":4}`, // elements
			`[[[]]]`, `[[[[]]]]`, `[[[[[[]]]]]]`, `[[[[[[[]]]]]]]`, `[[[[[[[[]]]]]]]]`, // depth
			`1`, `-0.5e+3`, `01`, `1.`, `-`, `1e`, `1x`, `tru`, `true`, `nul`, `null`, // literals and numbers
			"\"\xff\"", "\"a\x01\"", `"\x"`, `"\u12"`, `"\ud800"`, `1234567890123456789012345678901234567890123456789012345678901234567890`,
			`[1,]`, `{"a":1,}`, `{"a" 1}`, `{1:2}`, `[1 2]`, `{"a":1}}`, `"unterminated`,
		} {
			bodies = append(bodies, `{"id":"r",`+imp+`,`+fmt.Sprintf(place, v)+`}`)
		}
	}
	// Only the count of elements wrong, where the decoder reads them.
	for _, place := range []string{
		`"bcat":["a","b","c"%s]`,
		`"site":{"id":"a","name":"b","domain":"c"%s}`,
		`"regs":{"ext":{"a":1,"b":2,"c":3%s}}`,
		`"regs":{"ext":{"dsa":{"transparency":[{},{},{}%s]}}}`,
		`"regs":{"ext":{"dsa":{"transparency":[{"dsaparams":[1,2,3%s]}]}}}`,
		`"ext":{"prebid":{"currency":{"rates":{"EUR":{"A":1,"B":2,"C":3%s}}}}}`,
		`"source":{"ext":{"schain":{"nodes":[{},{},{}%s]}}}`,
	} {
		for _, more := range []string{"", `,"d"`, `,"d":4`, `,{}`, `,4`} {
			bodies = append(bodies, `{"id":"r",`+imp+`,`+fmt.Sprintf(place, more)+`}`)
		}
	}
	bodies = append(bodies, `{"id":"r",`+imp+`} x`, `{"id":"r",`+imp+`,}`, `{"id":"r",`+imp+`}}`, `{"id":"r",`+imp, ` {"id":"r",`+imp+"}\n")
	for _, body := range bodies {
		for maxDepth := 4; maxDepth <= 8; maxDepth++ {
			lim := lim.withDefaults()
			lim.MaxDepth = maxDepth
			var req openrtb2.BidRequest
			var exts Exts
			decErr := decodeBidRequest([]byte(body), &req, &exts, &lim)
			msg, _ := checkJSON([]byte(body), lim.MaxDepth, lim.MaxElements, lim.MaxStringBytes)
			if (msg == "") != (decErr == nil) && !(msg == "" && errors.As(decErr, new(*typeError))) {
				t.Errorf("%s, depth %d: checkJSON says %q, the decoder %v", body, maxDepth, msg, decErr)
			}
			if msg == "" {
				continue
			}
			err := (&Decoder{Limits: lim}).DecodeRequestExts([]byte(body), &req, &exts)
			var re *RequestError
			if !errors.As(err, &re) || re.Msg != msg {
				t.Errorf("%s, depth %d: DecodeRequest says %v, want checkJSON's %q", body, maxDepth, err, msg)
			}
		}
	}
}
