package campaign

import (
	"fmt"
	"testing"
	"time"

	"github.com/prebid/openrtb/v20/adcom1"
	"github.com/prebid/openrtb/v20/openrtb2"
)

// benchSet builds n campaigns with a realistic mix of targeting: a third
// with site allow lists, some with country, device, os and dayparting, all
// with a few sizes, a quarter native, in three time zones.
func benchSet(tb testing.TB, n int) *Set {
	tb.Helper()
	zones := []*time.Location{time.UTC, mustLoc(tb, "Asia/Tokyo"), mustLoc(tb, "America/New_York")}
	sizes := [][2]int64{{300, 250}, {336, 280}, {728, 90}, {160, 600}, {320, 50}, {300, 50}}
	cs := make([]*Campaign, n)
	for i := range cs {
		c := baseCampaign()
		c.ID = fmt.Sprintf("c%03d", i)
		c.ProductGroupID = int64(i%10 + 1)
		c.TimeZone = zones[i%3]
		c.Creative.Sizes = [][2]int64{sizes[i%6], sizes[(i+1)%6], sizes[(i+3)%6]}
		c.Creative.Native = i%4 == 0
		if i%3 == 0 {
			c.Targeting.SiteDomains = []string{fmt.Sprintf("site%d.com", i), "example.jp", "news.example.jp"}
		}
		if i%5 == 0 {
			c.Targeting.SiteDomainsDeny = []string{"bad.example.jp", fmt.Sprintf("bad%d.com", i)}
		}
		if i%2 == 0 {
			c.Targeting.Countries = []string{"JPN", "USA", "KOR"}
		}
		if i%4 == 1 {
			c.Targeting.DeviceTypes = []adcom1.DeviceType{adcom1.DeviceMobile, adcom1.DevicePC}
			c.Targeting.OS = []string{"ios", "android"}
		}
		if i%7 == 0 {
			c.Targeting.Dayparts = []Daypart{{StartHour: 0, EndHour: 24}}
		}
		if i%10 == 9 {
			c.Status = StatusPaused
		}
		cs[i] = c
	}
	return mustSet(tb, cs...)
}

func benchRequest() *openrtb2.BidRequest {
	r := baseRequest()
	r.Site.Domain = "www.news.example.jp"
	r.Imp[0].Banner = &openrtb2.Banner{Format: []openrtb2.Format{{W: 300, H: 250}, {W: 336, H: 280}}}
	r.BCat = []string{"IAB25", "IAB7-39", "IAB8-18"}
	r.BAdv = []string{"apple.com", "go-text.me"}
	return r
}

// BenchmarkMatch measures Match over n campaigns for one banner imp;
// baseline is the bare loop over the same campaigns checking status only,
// so Match reads as a ratio to the cheapest possible scan.
func BenchmarkMatch(b *testing.B) {
	for _, n := range []int{100, 1000} {
		s := benchSet(b, n)
		req := benchRequest()
		now := wed
		b.Run(fmt.Sprintf("campaigns=%d", n), func(b *testing.B) {
			out := make([]*Campaign, 0, s.Len())
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				out = s.Match(req, &req.Imp[0], nil, now, out[:0], nil)
			}
			b.ReportMetric(float64(len(out)), "matched")
		})
		b.Run(fmt.Sprintf("campaigns=%d/parallel", n), func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				out := make([]*Campaign, 0, s.Len())
				for pb.Next() {
					out = s.Match(req, &req.Imp[0], nil, now, out[:0], nil)
				}
			})
		})
		b.Run(fmt.Sprintf("campaigns=%d/baseline-scan", n), func(b *testing.B) {
			out := make([]*Campaign, 0, s.Len())
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				out = out[:0]
				for _, c := range s.all {
					if c.ix.active {
						out = append(out, c)
					}
				}
			}
		})
	}
}

func BenchmarkParse(b *testing.B) {
	data, err := Marshal(benchSet(b, 100).All())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Parse(data, "bench"); err != nil {
			b.Fatal(err)
		}
	}
}
