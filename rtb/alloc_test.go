//go:build !race

package rtb

import (
	"path/filepath"
	"testing"

	"github.com/prebid/openrtb/v20/openrtb2"
)

// TestAllocations pins the allocations of the hot-path functions, as
// fasthttp's allocation tests do: a regression fails here.
func TestAllocations(t *testing.T) {
	resp := benchResponse()
	buf := make([]byte, 0, 64<<10)
	body1 := readT(t, filepath.Join("testdata", "request-1-simple-banner.json"))
	body3 := readT(t, filepath.Join("testdata", "request-3-mobile.json"))
	var req openrtb2.BidRequest
	if err := DecodeRequest(body1, &req); err != nil {
		t.Fatal(err)
	}
	valid := req
	cases := []struct {
		name string
		max  float64
		f    func()
	}{
		{"AppendResponse", 0, func() { buf, _ = AppendResponse(buf[:0], resp) }},
		{"AppendNoBid", 0, func() { buf = AppendNoBid(buf[:0], "id-1", NoBidBelowFloor) }},
		{"DecryptPrice", 0, func() { _, _ = DecryptPrice(googleEncKey, googleIntKey, "YWJjMTIzZGVmNDU2Z2hpN7fhCuPemCAWJRxOgA") }},
		{"checkJSON", 0, func() { checkJSON(body3, 64, 10000, 65536) }},
		{"Validate", 0, func() { _ = Validate(&valid) }},
		{"PeekTMax", 0, func() { _ = PeekTMax(body3) }},
		{"PeekID", 0, func() { _ = PeekID(body3) }},
		// One copy of the body (strings point into it, unescaped in
		// place), then one allocation per pointer and slice (11 and 24
		// when measured, the backing array of req.Imp being reused, the
		// decoder pooled).
		{"DecodeRequest/request-1", 11, func() { _ = DecodeRequest(body1, &req) }},
		{"DecodeRequest/request-3", 24, func() { _ = DecodeRequest(body3, &req) }},
	}
	// Reading the exts adds no allocation once exts has grown (escaped
	// strings and schain nodes with hp aside): the same as DecodeRequest.
	extBody := []byte(`{"id":"r","imp":[{"id":"1","banner":{}}],"regs":{"ext":{"gdpr":1,"us_privacy":"1YNN","gpp":"DBA","gpp_sid":[2,6],` +
		`"dsa":{"dsarequired":2,"transparency":[{"domain":"p.com","dsaparams":[1,2]}]}}},"user":{"ext":{"consent":"CPX"}},` +
		`"source":{"ext":{"schain":{"complete":1,"ver":"1.0","nodes":[{"asi":"x.com","sid":"1"}]}}},` +
		`"ext":{"prebid":{"currency":{"rates":{"EUR":{"USD":1.1,"GBP":0.85}}}}}}`)
	var exts Exts
	dec := &Decoder{}
	if err := dec.DecodeRequestExts(extBody, &req, &exts); err != nil || len(exts.Currency.Rates) != 2 || len(exts.SChain25.Nodes) != 1 {
		t.Fatalf("%v %+v", err, exts)
	}
	plain := testing.AllocsPerRun(100, func() { _ = dec.DecodeRequest(extBody, &req) })
	cases = append(cases, struct {
		name string
		max  float64
		f    func()
	}{"DecodeRequestExts/exts", plain, func() { _ = dec.DecodeRequestExts(extBody, &req, &exts) }})
	for _, c := range cases {
		if got := testing.AllocsPerRun(100, c.f); got > c.max {
			t.Errorf("%s: %v allocations, want <= %v", c.name, got, c.max)
		} else {
			t.Logf("%s: %v allocations", c.name, got)
		}
	}
}
