package rtb

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"

	gojson "github.com/goccy/go-json"
	"github.com/prebid/openrtb/v20/openrtb2"
)

// Codec choice. BenchmarkCodecs, -benchtime 0.3s -count 6, go1.26.8
// linux/amd64 on the shared 2-core machine (noisy: read the ratios).
// Medians, us/op and allocs/op, decoding into a fresh BidRequest:
//
//	                                  encoding/json  goccy/go-json  rtbd (generated)  goccy/rtbd
//	request-1-simple-banner            11.0us  31      4.0us  17      3.2us  13        x1.25
//	request-2-expandable-creative      22.3us  48      7.4us  29      6.7us  20        x1.11
//	request-3-mobile                   28.4us  63     13.1us  34     10.8us  26        x1.21
//	request-4-video                    76.1us  81     48.9us  63     34.3us  44        x1.43
//	request-5-pmp-with-direct-deal     35.6us  43     17.1us  26     16.3us  19        x1.05
//	corpus/amx (1.6 KB, eids, schain)  37.6us  47     19.1us  45     12.3us  23        x1.55
//
//	encode (reused buffer)           encoding/json  goccy/go-json  AppendResponse
//	response-1                        1.71us          0.94us         0.68us
//	response-2 (VAST inline)          7.69us          4.85us         3.29us
//	response-3                        5.62us          2.11us         1.65us
//	response-4 (native inline)        4.43us          2.16us         1.18us
//	bidder-15-products (4 KB adm)    25.3us          10.3us          3.52us
//	(all three: 0 allocs/op with a reused buffer and Encoder)
//
// DecodeRequest first used goccy/go-json, 1.4-4x faster than encoding/json.
// In the bidder's own process it was then the largest single cost of a bid
// (17% of the CPU profile at 13,000 bids/s), so it now uses a decoder
// generated from the openrtb2 types (jsondec_gen.go; `make generate`):
// faster than goccy on every request here, with half its allocations
// (strings are unescaped in place in one copy of the body), and
// encoding/json's semantics, which FuzzDecodeRequest checks both ways
// (goccy matched keys case-insensitively only in structs of up to 16
// fields). All three pass the conformance tests (the 5 spec examples and
// the 251 valid prebid requests decode to values deep-equal to
// encoding/json's). Responses use none of them: AppendResponse is
// hand-written, fastest, 0 allocations, and byte-identical to
// encoding/json.

// benchRequests are the 5 spec examples and a representative corpus request
// (amx: site, device with geo, user with eids, gdpr, schain; 1.6 KB).
var benchRequests = []string{
	"request-1-simple-banner",
	"request-2-expandable-creative",
	"request-3-mobile",
	"request-4-video",
	"request-5-pmp-with-direct-deal",
	"corpus/amx-5d7eff8244fa",
}

func loadBench(b *testing.B, name string) []byte {
	return readT(b, filepath.Join("testdata", name+".json"))
}

// benchResponse is a bid as rtbd sends it: one banner bid whose adm shows
// 15 products, nurl/burl with macros.
func benchResponse() *openrtb2.BidResponse {
	var adm strings.Builder
	adm.WriteString(`<div class="rtbd" style="width:300px;height:250px">`)
	for i := range 15 {
		fmt.Fprintf(&adm, `<a href="https://click.rtbd.example/c?b=${AUCTION_BID_ID}&p=%d&u=https%%3A%%2F%%2Fshop.example%%2Fp%%2F%d"><img src="https://img.shop.example/%d/200x200.jpg" alt="Product &quot;%d&quot;"/><span>Product name number %d &amp; more</span><b>%d.99 &euro;</b></a>`, i, 100000+i, 100000+i, i, i, 10+i)
	}
	adm.WriteString(`</div>`)
	return &openrtb2.BidResponse{
		ID:    "1234567890-abcdef",
		BidID: "b-42",
		Cur:   "EUR",
		SeatBid: []openrtb2.SeatBid{{
			Seat: "rtbd",
			Bid: []openrtb2.Bid{{
				ID: "b-42-1", ImpID: "1", Price: 1.2345,
				NURL: "https://win.rtbd.example/win?id=${AUCTION_ID}&imp=${AUCTION_IMP_ID}&p=${AUCTION_PRICE}&t=AbCdEf0123456789",
				BURL: "https://win.rtbd.example/bill?id=${AUCTION_ID}&imp=${AUCTION_IMP_ID}&p=${AUCTION_PRICE}&t=AbCdEf0123456789",
				AdM:  adm.String(),
				AdID: "cr-7", ADomain: []string{"shop.example"}, CID: "camp-3", CrID: "cr-7",
				Cat: []string{"IAB22"}, W: 300, H: 250, MType: openrtb2.MarkupBanner,
			}},
		}},
	}
}

func benchResponses(b *testing.B) map[string]*openrtb2.BidResponse {
	out := map[string]*openrtb2.BidResponse{"bidder-15-products": benchResponse()}
	for _, f := range globT(b, filepath.Join("testdata", "response-*.json")) {
		var r openrtb2.BidResponse
		if err := json.Unmarshal(readT(b, f), &r); err != nil {
			b.Fatal(err)
		}
		out[strings.TrimSuffix(filepath.Base(f), ".json")] = &r
	}
	return out
}

// jsonEncoder is what encoding/json's and goccy/go-json's encoders share.
type jsonEncoder interface {
	SetEscapeHTML(bool)
	Encode(any) error
}

// BenchmarkCodecs compares encoding/json, goccy/go-json and rtbd's
// generated decoder on the same inputs in the same run (see the comment at
// the top of this file).
func BenchmarkCodecs(b *testing.B) {
	decoders := []struct {
		name   string
		decode func([]byte, *openrtb2.BidRequest) error
	}{
		{"std", func(body []byte, r *openrtb2.BidRequest) error { return json.Unmarshal(body, r) }},
		{"rtbd", func(body []byte, r *openrtb2.BidRequest) error {
			l := defaultLimits()
			return decodeBidRequest(body, r, nil, &l)
		}},
		{"goccy", func(body []byte, r *openrtb2.BidRequest) error { return gojson.Unmarshal(body, r) }},
	}
	for _, name := range benchRequests {
		body := loadBench(b, name)
		for _, d := range decoders {
			b.Run("decode/"+d.name+"/"+name, func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(body)))
				for b.Loop() {
					var r openrtb2.BidRequest
					if err := d.decode(body, &r); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
	encoders := []struct {
		name       string
		newEncoder func(io.Writer) jsonEncoder
	}{
		{"std", func(w io.Writer) jsonEncoder { return json.NewEncoder(w) }},
		{"goccy", func(w io.Writer) jsonEncoder { return gojson.NewEncoder(w) }},
	}
	for name, resp := range benchResponses(b) {
		for _, e := range encoders {
			b.Run("encode/"+e.name+"/"+name, func(b *testing.B) {
				b.ReportAllocs()
				var buf bytes.Buffer
				enc := e.newEncoder(&buf)
				enc.SetEscapeHTML(false)
				for b.Loop() {
					buf.Reset()
					if err := enc.Encode(resp); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		b.Run("encode/append/"+name, func(b *testing.B) {
			b.ReportAllocs()
			var buf []byte
			for b.Loop() {
				var err error
				if buf, err = AppendResponse(buf[:0], resp); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDecodeRequest is the bidder's path: decode into a reused
// request, validate; the decoder checks the JSON in the same pass.
// checkJSON alone is what a separate checking pass over the body costs.
func BenchmarkDecodeRequest(b *testing.B) {
	for _, name := range benchRequests {
		body := loadBench(b, name)
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			var req openrtb2.BidRequest
			for b.Loop() {
				if err := DecodeRequest(body, &req); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("checkJSON/"+name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if msg, _ := checkJSON(body, 64, DefaultMaxElements, DefaultMaxStringBytes); msg != "" {
					b.Fatal(msg)
				}
			}
		})
	}
	body := loadBench(b, "corpus/amx-5d7eff8244fa")
	b.Run("parallel/amx", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		b.RunParallel(func(pb *testing.PB) {
			var req openrtb2.BidRequest
			for pb.Next() {
				if err := DecodeRequest(body, &req); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

func BenchmarkAppendNoBid(b *testing.B) {
	b.ReportAllocs()
	buf := make([]byte, 0, 256)
	for b.Loop() {
		buf = AppendNoBid(buf[:0], "1234567890-abcdef", NoBidNoMatchingCampaign)
	}
}

func BenchmarkDecryptPrice(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecryptPrice(googleEncKey, googleIntKey, "YWJjMTIzZGVmNDU2Z2hpN7fhCuPemCAWJRxOgA"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeExts compares, in one run, the decode that reads the ext
// members in its pass (DecodeRequestExts: privacy strings, dsa, the 2.5
// schain, currency rates) with the decode followed by scans of the raw
// exts for the members a bidder read before (privacy strings and currency;
// scanExts, with the scanner the bidder used), and the decode alone
// (DecodeRequest) as the baseline. Compare with benchstat:
// go test -run '^$' -bench DecodeExts -count 10 ./rtb
func BenchmarkDecodeExts(b *testing.B) {
	for _, name := range []string{"request-1-simple-banner", "corpus/amx-5d7eff8244fa", "corpus/smaato-03a85cbd8fa2", "corpus/clydo-30790f610e4f"} {
		body := loadBench(b, name)
		var req openrtb2.BidRequest
		var exts Exts
		b.Run("decode/"+name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if err := DecodeRequest(body, &req); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("decode+scans/"+name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if err := DecodeRequest(body, &req); err != nil {
					b.Fatal(err)
				}
				scanExts(&req)
			}
		})
		b.Run("onepass/"+name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if err := (&Decoder{}).DecodeRequestExts(body, &req, &exts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// scanExts looks up in req's raw exts what the bidder's privacy check and
// currency rates read, the way they read it before Exts: one scan of an
// ext per member.
func scanExts(req *openrtb2.BidRequest) (n int) {
	gdpr := false
	if r := req.Regs; r != nil && len(r.Ext) != 0 {
		n += len(peekMember(r.Ext, "us_privacy"))
		g := peekMember(r.Ext, "gdpr")
		gdpr = string(g) == "1"
		if gpp := peekMember(r.Ext, "gpp"); len(gpp) > 2 {
			n += len(peekMember(r.Ext, "gpp_sid"))
			gdpr = true
		}
	}
	if u := req.User; u != nil && gdpr {
		n += len(peekMember(u.Ext, "consent"))
	}
	n += len(peekMember(peekMember(req.Ext, "prebid"), "currency"))
	return n
}
