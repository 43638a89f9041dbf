package rtb

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"testing"

	"github.com/prebid/openrtb/v20/openrtb2"
)

// The reference for Exts: the same rules written on encoding/json, applied
// to the raw ext objects of a request that encoding/json decoded. The
// fuzz target (FuzzDecodeRequest) and TestExtsMatchReference compare
// DecodeRequestExts with it.

// refMember returns the value of the first member key of obj (keys
// unescaped, compared exactly); ok is false when obj is not an object or
// has no such member.
func refMember(obj []byte, key string) (json.RawMessage, bool) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil, false
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		if k.(string) == key {
			return v, true
		}
	}
	return nil, false
}

// refMembers returns every member of obj, in order.
func refMembers(obj []byte) (keys []string, vals []json.RawMessage) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, nil
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil, nil
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil
		}
		keys, vals = append(keys, k.(string)), append(vals, v)
	}
	return keys, vals
}

func isNumber(v []byte) bool { return len(v) > 0 && (v[0] == '-' || (v[0] >= '0' && v[0] <= '9')) }

func refString(v []byte) string {
	var s string
	if len(v) == 0 || v[0] != '"' || json.Unmarshal(v, &s) != nil {
		return ""
	}
	return s
}

func refInteger(v []byte) (int, bool) {
	var n int
	if !isNumber(v) || json.Unmarshal(v, &n) != nil {
		return 0, false
	}
	return n, true
}

func refElems(v []byte) []json.RawMessage {
	var a []json.RawMessage
	if len(v) == 0 || v[0] != '[' || json.Unmarshal(v, &a) != nil {
		return nil
	}
	return a
}

func refExts(req *openrtb2.BidRequest) Exts {
	var e Exts
	if r := req.Regs; r != nil && r.Ext != nil {
		if v, ok := refMember(r.Ext, "gdpr"); ok {
			switch {
			case len(v) > 0 && v[0] == '"':
				n, err := strconv.ParseInt(refString(v), 10, 64)
				e.GDPR, e.HasGDPR = n, err == nil
			case isNumber(v):
				n, err := strconv.ParseInt(string(v), 10, 64)
				e.GDPR, e.HasGDPR = n, err == nil
			}
			if !e.HasGDPR {
				e.GDPR = 0
			}
		}
		v, _ := refMember(r.Ext, "us_privacy")
		e.USPrivacy = refString(v)
		v, _ = refMember(r.Ext, "gpp")
		e.GPP = refString(v)
		if v, ok := refMember(r.Ext, "gpp_sid"); ok {
			if len(v) > 0 && v[0] == '"' {
				e.GPPSID = refString(v)
			} else {
				e.GPPSID = string(v)
			}
		}
		if dsa, ok := refMember(r.Ext, "dsa"); ok && len(dsa) > 0 && dsa[0] == '{' {
			e.DSA.Present = true
			v, _ := refMember(dsa, "dsarequired")
			e.DSA.Required, _ = refInteger(v)
			v, _ = refMember(dsa, "pubrender")
			e.DSA.PubRender, _ = refInteger(v)
			v, _ = refMember(dsa, "datatopub")
			e.DSA.DataToPub, _ = refInteger(v)
			v, _ = refMember(dsa, "transparency")
			for _, el := range refElems(v) {
				if len(el) == 0 || el[0] != '{' {
					continue
				}
				var t DSATransparency
				d, _ := refMember(el, "domain")
				t.Domain = refString(d)
				p, _ := refMember(el, "dsaparams")
				for _, n := range refElems(p) {
					if i, ok := refInteger(n); ok {
						t.Params = append(t.Params, i)
					}
				}
				e.DSA.Transparency = append(e.DSA.Transparency, t)
			}
		}
	}
	if u := req.User; u != nil && u.Ext != nil {
		v, _ := refMember(u.Ext, "consent")
		e.Consent = refString(v)
	}
	if s := req.Source; s != nil && s.Ext != nil {
		if v, ok := refMember(s.Ext, "schain"); ok {
			if json.Unmarshal(v, &e.SChain25) != nil {
				e.SChain25 = openrtb2.SupplyChain{}
			}
		}
	}
	if req.Ext != nil {
		pb, _ := refMember(req.Ext, "prebid")
		if cur, ok := refMember(pb, "currency"); ok {
			c := &e.Currency
			c.Present = true
			v, _ := refMember(cur, "usepbsrates")
			c.NoPBSRates = string(v) == "false"
			rates, ok := refMember(cur, "rates")
			c.HasRates = ok
			froms, tos := refMembers(rates)
			for i, from := range froms {
				if tos[i][0] != '{' {
					c.Invalid = true
					continue
				}
				keys, vals := refMembers(tos[i])
				for j, to := range keys {
					f, err := strconv.ParseFloat(string(vals[j]), 64)
					if !isNumber(vals[j]) || err != nil {
						c.Invalid = true
						continue
					}
					c.Rates = append(c.Rates, CurrencyRate{From: from, To: to, Rate: f})
				}
			}
		}
	}
	return e
}

// normExts sets empty slices to nil, for comparison.
func normExts(e Exts) Exts {
	if len(e.DSA.Transparency) == 0 {
		e.DSA.Transparency = nil
	}
	t := make([]DSATransparency, len(e.DSA.Transparency))
	for i, x := range e.DSA.Transparency {
		if len(x.Params) == 0 {
			x.Params = nil
		}
		t[i] = x
	}
	if len(t) > 0 {
		e.DSA.Transparency = t
	}
	if len(e.Currency.Rates) == 0 {
		e.Currency.Rates = nil
	}
	if len(e.SChain25.Nodes) == 0 && e.SChain25.Nodes != nil {
		// encoding/json decodes "nodes":[] as an empty slice and an absent
		// nodes as nil: keep that difference only when there is a chain.
		if reflect.DeepEqual(e.SChain25, openrtb2.SupplyChain{Nodes: e.SChain25.Nodes}) {
			e.SChain25.Nodes = nil
		}
	}
	return e
}

// checkExtsMatch fails t when exts, decoded from body, differ from the
// reference applied to what encoding/json decodes from body.
func checkExtsMatch(t *testing.T, body []byte, exts *Exts) {
	t.Helper()
	var want openrtb2.BidRequest
	if err := json.Unmarshal(body, &want); err != nil {
		t.Fatalf("encoding/json: %v", err)
	}
	ref := refExts(&want)
	if got, ref := normExts(*exts), normExts(ref); !reflect.DeepEqual(got, ref) {
		t.Fatalf("%s:\nexts differ from the reference:\n got %+v\nwant %+v", body, got, ref)
	}
}

const extImp = `"id":"r","imp":[{"id":"1","banner":{}}]`

// TestExts: what each member gives, wrong types included (ignored: the
// request stays valid and the member reads as absent), each case also
// checked against the reference.
func TestExts(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       Exts
	}{
		{"none", `{` + extImp + `}`, Exts{}},
		{"privacy", `{` + extImp + `,"regs":{"ext":{"gdpr":1,"us_privacy":"1YNN","gpp":"DBA","gpp_sid":[2,6]}},"user":{"ext":{"consent":"CPX"}}}`,
			Exts{GDPR: 1, HasGDPR: true, USPrivacy: "1YNN", GPP: "DBA", GPPSID: "[2,6]", Consent: "CPX"}},
		{"gdpr as a string", `{` + extImp + `,"regs":{"ext":{"gdpr":"1","gpp_sid":"2,6"}}}`, Exts{GDPR: 1, HasGDPR: true, GPPSID: "2,6"}},
		{"gdpr 0", `{` + extImp + `,"regs":{"ext":{"gdpr":0}}}`, Exts{HasGDPR: true}},
		{"wrong types", `{` + extImp + `,"regs":{"ext":{"gdpr":true,"us_privacy":1,"gpp":{"a":"b"},"dsa":"x"}},"user":{"ext":{"consent":null}}}`, Exts{}},
		{"gdpr not an integer", `{` + extImp + `,"regs":{"ext":{"gdpr":1.0}}}`, Exts{}},
		{"gdpr string not an integer", `{` + extImp + `,"regs":{"ext":{"gdpr":"yes"}}}`, Exts{}},
		{"gdpr out of range", `{` + extImp + `,"regs":{"ext":{"gdpr":99999999999999999999}}}`, Exts{}},
		{"first member wins", `{` + extImp + `,"regs":{"ext":{"us_privacy":7,"us_privacy":"1YNN","gdpr":1,"gdpr":0}}}`, Exts{GDPR: 1, HasGDPR: true}},
		{"keys exact", `{` + extImp + `,"regs":{"ext":{"US_PRIVACY":"1YNN","Gdpr":1}}}`, Exts{}},
		{"escaped key and value", `{` + extImp + `,"user":{"ext":{"con\u0073ent":"a\/b\u00e9"}}}`, Exts{Consent: "a/bé"}},
		{"ext not an object", `{` + extImp + `,"regs":{"ext":[1]},"user":{"ext":"consent"},"ext":null}`, Exts{}},
		{"last regs wins", `{` + extImp + `,"regs":{"ext":{"gdpr":1}},"regs":{"ext":{"us_privacy":"1---"}}}`, Exts{USPrivacy: "1---"}},
		{"regs null after", `{` + extImp + `,"regs":{"ext":{"gdpr":1}},"regs":null}`, Exts{}},
		{"dsa", `{` + extImp + `,"regs":{"ext":{"dsa":{"dsarequired":3,"pubrender":0,"datatopub":2,"transparency":[{"domain":"p.com","dsaparams":[1,2]},7,{"domain":1,"dsaparams":[3,"x",1.5]}]}}}}`,
			Exts{DSA: DSA{Present: true, Required: 3, DataToPub: 2, Transparency: []DSATransparency{{Domain: "p.com", Params: []int{1, 2}}, {Params: []int{3}}}}}},
		{"dsa wrong types", `{` + extImp + `,"regs":{"ext":{"dsa":{"dsarequired":"3","pubrender":true,"transparency":{}}}}}`, Exts{DSA: DSA{Present: true}}},
		{"schain", `{` + extImp + `,"source":{"ext":{"schain":{"complete":1,"ver":"1.0","nodes":[{"asi":"x.com","sid":"1","hp":1}]}}}}`,
			Exts{SChain25: openrtb2.SupplyChain{Complete: 1, Ver: "1.0", Nodes: []openrtb2.SupplyChainNode{{ASI: "x.com", SID: "1", HP: ptr[int8](1)}}}}},
		{"schain wrong type", `{` + extImp + `,"source":{"ext":{"schain":{"complete":"1","nodes":[{"asi":"x.com"}]}}}}`, Exts{}},
		{"schain escaped", `{` + extImp + `,"source":{"ext":{"schain":{"ver":"1\u002e0","nodes":[{"asi":"x\/y"}]},"x":"\n"}}}`,
			Exts{SChain25: openrtb2.SupplyChain{Ver: "1.0", Nodes: []openrtb2.SupplyChainNode{{ASI: "x/y"}}}}},
		{"currency", `{` + extImp + `,"ext":{"prebid":{"currency":{"rates":{"EUR":{"USD":1.1,"GBP":0.85}},"usepbsrates":false}}}}`,
			Exts{Currency: CurrencyExt{Present: true, NoPBSRates: true, HasRates: true, Rates: []CurrencyRate{{"EUR", "USD", 1.1}, {"EUR", "GBP", 0.85}}}}},
		{"currency invalid entries", `{` + extImp + `,"ext":{"prebid":{"currency":{"rates":{"EUR":{"USD":"1.1","GBP":0.85,"JPY":1e400},"USD":5,"X":{"Y":null}},"usepbsrates":"false"}}}}`,
			Exts{Currency: CurrencyExt{Present: true, HasRates: true, Rates: []CurrencyRate{{"EUR", "GBP", 0.85}}, Invalid: true}}},
		{"currency without rates", `{` + extImp + `,"ext":{"prebid":{"currency":null}}}`, Exts{Currency: CurrencyExt{Present: true}}},
		{"rates not an object", `{` + extImp + `,"ext":{"prebid":{"currency":{"rates":[1]}}}}`, Exts{Currency: CurrencyExt{Present: true, HasRates: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var req openrtb2.BidRequest
			var e Exts
			if err := (&Decoder{}).DecodeRequestExts([]byte(tc.body), &req, &e); err != nil {
				t.Fatalf("a request with these exts is valid: %v", err)
			}
			if got, want := normExts(e), normExts(tc.want); !reflect.DeepEqual(got, want) {
				t.Errorf("\n got %+v\nwant %+v", got, want)
			}
			checkExtsMatch(t, []byte(tc.body), &e)
			// The raw exts are what encoding/json keeps.
			var std openrtb2.BidRequest
			if err := json.Unmarshal([]byte(tc.body), &std); err != nil || !reflect.DeepEqual(normImps(req), normImps(std)) {
				t.Errorf("request decoded differently from encoding/json (%v):\n got %+v\nwant %+v", err, req, std)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// TestExtsReuse: an Exts reused for the next request holds only what that
// one says, and an invalid request leaves it reset.
func TestExtsReuse(t *testing.T) {
	var req openrtb2.BidRequest
	var e Exts
	full := `{` + extImp + `,"regs":{"ext":{"gdpr":1,"dsa":{"transparency":[{"domain":"a","dsaparams":[1]}]}}},"user":{"ext":{"consent":"c"}},` +
		`"source":{"ext":{"schain":{"nodes":[{"asi":"a"}]}}},"ext":{"prebid":{"currency":{"rates":{"EUR":{"USD":1.1}}}}}}`
	d := &Decoder{}
	if err := d.DecodeRequestExts([]byte(full), &req, &e); err != nil || !e.HasGDPR || len(e.Currency.Rates) != 1 || len(e.SChain25.Nodes) != 1 {
		t.Fatalf("%v %+v", err, e)
	}
	if err := d.DecodeRequestExts([]byte(`{`+extImp+`,"regs":{"ext":{"dsa":{}}}}`), &req, &e); err != nil {
		t.Fatal(err)
	}
	if want := (Exts{DSA: DSA{Present: true}}); !reflect.DeepEqual(normExts(e), want) {
		t.Errorf("after reuse: %+v", e)
	}
	if err := d.DecodeRequestExts([]byte(full), &req, &e); err != nil {
		t.Fatal(err)
	}
	if err := d.DecodeRequestExts([]byte(`{`+extImp+`,"regs":{"ext":{"gdpr":1}},"tmax":"x"}`), &req, &e); err == nil {
		t.Fatal("a string tmax is invalid")
	}
	if !reflect.DeepEqual(normExts(e), Exts{}) {
		t.Errorf("after an invalid request: %+v", e)
	}
	// Nodes left beyond the length by a repeated "nodes" do not show
	// through in the next request.
	for _, body := range []string{
		`{` + extImp + `,"source":{"ext":{"schain":{"nodes":[{"asi":"a"},{"asi":"b","hp":1}],"nodes":[{"asi":"c"}]}}},"regs":{"ext":{"dsa":{"transparency":[{"domain":"x","dsaparams":[1,2]},{"domain":"y"}]}}},"ext":{"prebid":{"currency":{"rates":{"EUR":{"USD":1,"GBP":2}}}}}}`,
		`{` + extImp + `,"source":{"ext":{"schain":{"nodes":[{},{}]}}},"regs":{"ext":{"dsa":{"transparency":[{},{}]}}},"ext":{"prebid":{"currency":{"rates":{}}}}}`,
	} {
		if err := d.DecodeRequestExts([]byte(body), &req, &e); err != nil {
			t.Fatal(err)
		}
		checkExtsMatch(t, []byte(body), &e)
	}
}

// TestExtsMatchReference runs the reference on the spec examples and the
// corpus.
func TestExtsMatchReference(t *testing.T) {
	files := append(globT(t, "testdata/request-*.json"), globT(t, "testdata/corpus/*.json")...)
	for _, f := range files {
		body := readT(t, f)
		var req openrtb2.BidRequest
		var e Exts
		if err := (&Decoder{}).DecodeRequestExts(body, &req, &e); err != nil {
			continue
		}
		checkExtsMatch(t, body, &e)
	}
}
