package supply

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/prebid/openrtb/v20/openrtb2"
)

func seedFiles(f *testing.F, glob string) {
	paths, _ := filepath.Glob(glob)
	for _, p := range paths {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
}

// FuzzParseSellers: any input parses or fails with ErrNotSellersJSON;
// what parses has a type for every id it lists, and the skipped entries
// are counted with a reason.
func FuzzParseSellers(f *testing.F) {
	seedFiles(f, "testdata/supply/sellers/*.json")
	f.Add([]byte(`{"sellers":null}`))
	f.Add([]byte(`{"sellers":[{"seller_id":1e3,"seller_type":"BOTH"},{"seller_id":"\u0000","seller_type":"both"}]}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, bad, sample, err := ParseSellers(data)
		if err != nil {
			if s != nil || !errors.Is(err, ErrNotSellersJSON) {
				t.Fatalf("error %v with sellers %v", err, s)
			}
			return
		}
		if bad < len(sample) || len(sample) > maxSample {
			t.Fatalf("bad %d, sample %d", bad, len(sample))
		}
		for _, b := range sample {
			if b.Why == "" {
				t.Fatalf("bad entry without a reason: %v", b)
			}
		}
		for id, typ := range s.ids {
			if id == "" || typ == 0 || typ > SellerBoth || s.Type(id) != typ {
				t.Fatalf("id %q type %d", id, typ)
			}
		}
	})
}

// FuzzParseAdsTxt: any input parses; every record kept can be looked up,
// every bad line has its number and a reason.
func FuzzParseAdsTxt(f *testing.F) {
	seedFiles(f, "testdata/supply/ads/*.txt")
	seedFiles(f, "testdata/supply/app-ads/*.txt")
	f.Add([]byte("\xef\xbb\xbfa.com, 1, DIRECT\r\r\nb.com,2,reseller,x,y\n=\n#\n;"))
	f.Fuzz(func(t *testing.T, data []byte) {
		a, bad, sample := ParseAdsTxt(data)
		if a == nil || bad < len(sample) || len(sample) > maxSample {
			t.Fatalf("ads %v bad %d sample %d", a, bad, len(sample))
		}
		for _, b := range sample {
			if b.N < 1 || b.Why == "" {
				t.Fatalf("bad line %v", b)
			}
		}
		n := 0
		for asi, ids := range a.systems {
			for id, rel := range ids {
				n++
				if asi == "" || id == "" || rel == 0 || rel > Direct|Reseller || a.Lookup(asi, id) != rel {
					t.Fatalf("%q %q %v", asi, id, rel)
				}
			}
		}
		if n > a.Records() {
			t.Fatalf("%d distinct pairs, %d records", n, a.Records())
		}
	})
}

// FuzzSChain: any supply chain (the JSON of source.schain or
// source.ext.schain), on site or app traffic, gets a verdict from the
// fixed set, naming a node of the chain when a node failed.
func FuzzSChain(f *testing.F) {
	for _, c := range loadCases(f) {
		if s := c.Request.Source; s != nil && s.SChain != nil {
			if b, err := json.Marshal(s.SChain); err == nil {
				f.Add(b, c.Request.App != nil, "publisher.com")
			}
		}
	}
	f.Add([]byte(`{"complete":1,"nodes":[{"asi":"EXCHANGE-A.COM","sid":"pub1"},{"asi":"","sid":""}]}`), false, "WWW.news.co.uk.")
	f.Add([]byte(`{"nodes":[{"asi":"a","sid":"b"}]}`), true, "https://x@y:1/")
	ix := openFixture(f).Index()
	f.Fuzz(func(t *testing.T, chain []byte, app bool, domain string) {
		var sc openrtb2.SupplyChain
		if json.Unmarshal(chain, &sc) != nil {
			return
		}
		r := &Request{Chain: &sc, App: app, SiteDomain: domain, SitePage: domain, PublisherDomain: domain, AppDomain: domain, ExchangeDomain: "exchange-a.com"}
		var s Scratch
		v := ix.Check(r, &s)
		if v.Reason >= NumReasons || v.Reason.String() == "other" {
			t.Fatalf("reason %d", v.Reason)
		}
		if v.Node < -1 || v.Node >= len(sc.Nodes) || v.Hops != len(sc.Nodes) {
			t.Fatalf("node %d hops %d of %d nodes", v.Node, v.Hops, len(sc.Nodes))
		}
		if v.Reason != OK && v.Explain(r, v.Reason) == "" {
			t.Fatal("no explanation")
		}
		for _, p := range []Policy{{}, {CompleteOnly: true}, {MaxHops: 1}, {AuthorizedOnly: true}} {
			if got := p.Refuse(&v); got >= NumReasons || (p.AuthorizedOnly && v.Reason != OK && got == OK) {
				t.Fatalf("policy %+v: %s with verdict %s", p, got, v.Reason)
			}
		}
	})
}
