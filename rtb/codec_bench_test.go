package rtb

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	gojson "github.com/goccy/go-json"
	"github.com/prebid/openrtb/v20/openrtb2"
)

// Codec choice. BenchmarkCodecs, one run, -benchtime 0.2s -count 10,
// go1.26.8 linux/amd64 on the shared 2-core machine under load (load average
// 8-10 from other jobs, so absolute times are inflated and noisy; read the
// ratios). Medians, ns/op and allocs/op:
//
//	decode into a fresh BidRequest   encoding/json     goccy/go-json    ratio
//	request-1-simple-banner           37.9us  31       9.3us  17        4.1x
//	request-2-expandable-creative     27.4us  48      12.7us  29        2.2x
//	request-3-mobile                  36.4us  63      10.7us  34        3.4x
//	request-4-video                   58.8us  81      26.1us  63        2.3x
//	request-5-pmp-with-direct-deal    34.8us  43      13.0us  26        2.7x
//	corpus/amx (1.6 KB, eids, schain) 43.3us  47      31.1us  45        1.4x
//
//	encode (reused buffer)           encoding/json  goccy/go-json  AppendResponse
//	response-1                        1.71us          0.94us         0.68us
//	response-2 (VAST inline)          7.69us          4.85us         3.29us
//	response-3                        5.62us          2.11us         1.65us
//	response-4 (native inline)        4.43us          2.16us         1.18us
//	bidder-15-products (4 KB adm)    25.3us          10.3us          3.52us
//	(all three: 0 allocs/op with a reused buffer and Encoder)
//
// goccy/go-json decodes 1.4-4x faster with fewer allocations and passes the
// same conformance tests (the 5 spec examples and the 251 valid prebid
// requests decode to values deep-equal to encoding/json's), so DecodeRequest
// uses it. Responses use neither: AppendResponse is hand-written, fastest,
// 0 allocations, and byte-identical to encoding/json.

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

// BenchmarkCodecs compares encoding/json and goccy/go-json on the same
// inputs in the same run (see the comment at the top of this file).
func BenchmarkCodecs(b *testing.B) {
	for _, name := range benchRequests {
		body := loadBench(b, name)
		b.Run("decode/std/"+name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				var r openrtb2.BidRequest
				if err := json.Unmarshal(body, &r); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("decode/goccy/"+name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				var r openrtb2.BidRequest
				if err := gojson.Unmarshal(body, &r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	for name, resp := range benchResponses(b) {
		b.Run("encode/std/"+name, func(b *testing.B) {
			b.ReportAllocs()
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			for b.Loop() {
				buf.Reset()
				if err := enc.Encode(resp); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("encode/goccy/"+name, func(b *testing.B) {
			b.ReportAllocs()
			var buf bytes.Buffer
			enc := gojson.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			for b.Loop() {
				buf.Reset()
				if err := enc.Encode(resp); err != nil {
					b.Fatal(err)
				}
			}
		})
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

// BenchmarkDecodeRequest is the bidder's path: check, decode into a reused
// request, validate. checkJSON alone is its pre-scan share.
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

func BenchmarkExpandMacros(b *testing.B) {
	tmpl := benchResponse().SeatBid[0].Bid[0].NURL + "&p64=${AUCTION_PRICE:B64}&x=${UNKNOWN}"
	m := testMacros
	b.ReportAllocs()
	buf := make([]byte, 0, 512)
	for b.Loop() {
		buf = ExpandMacros(buf[:0], tmpl, &m)
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

func BenchmarkParsePrice(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParsePrice("1.2345"); err != nil {
			b.Fatal(err)
		}
	}
}
