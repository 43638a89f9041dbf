package demo_test

import (
	"testing"

	"github.com/prebid/openrtb/v20/openrtb2"

	"github.com/rtbd/rtbd/gen/demo"
	"github.com/rtbd/rtbd/rtb"
)

// BenchmarkDecodeSample decodes the demo's sample request as the bidder
// does (into a reused request and Exts). Compare builds with benchstat:
// go test -run '^$' -bench DecodeSample -count 10 ./gen/demo
func BenchmarkDecodeSample(b *testing.B) {
	body := demo.SampleRequest("")
	var req openrtb2.BidRequest
	var exts rtb.Exts
	dec := &rtb.Decoder{}
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if err := dec.DecodeRequestExts(body, &req, &exts); err != nil {
			b.Fatal(err)
		}
	}
}

// TestSampleRequestDecodes: the sample is a valid request without ext
// members.
func TestSampleRequestDecodes(t *testing.T) {
	var req openrtb2.BidRequest
	var exts rtb.Exts
	if err := (&rtb.Decoder{}).DecodeRequestExts(demo.SampleRequest("eur"), &req, &exts); err != nil {
		t.Fatal(err)
	}
	if req.ID != "demo-request-1" || req.Cur[0] != "EUR" || exts.HasGDPR || exts.Currency.Present {
		t.Errorf("decoded %+v, exts %+v", req, exts)
	}
}
