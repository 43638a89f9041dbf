package supply

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/prebid/openrtb/v20/openrtb2"
)

// fixtureCase is one labelled case of testdata/supply/cases.json: a bid
// request, the exchange's domain, a campaign's policy, and the verdict
// and the policy's answer it must get.
type fixtureCase struct {
	Name           string              `json:"name"`
	Policy         policyJSON          `json:"policy"`
	ExchangeDomain string              `json:"exchange_domain"`
	Request        openrtb2.BidRequest `json:"request"`
	Want           struct {
		Verdict string `json:"verdict"`
		Node    int    `json:"node"`
		Refuse  string `json:"refuse"`
	} `json:"want"`
}

type policyJSON struct {
	CompleteOnly   bool `json:"complete_only"`
	MaxHops        int  `json:"max_hops"`
	AuthorizedOnly bool `json:"authorized_only"`
}

func loadCases(t testing.TB) []fixtureCase {
	t.Helper()
	data, err := os.ReadFile("testdata/supply/cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var cs []fixtureCase
	if err := json.Unmarshal(data, &cs); err != nil {
		t.Fatal(err)
	}
	return cs
}

// requestOf is what the bidder hands Check for br: the 2.6 chain, else
// the 2.5 one of source.ext.schain.
func requestOf(t testing.TB, br *openrtb2.BidRequest, exchangeDomain string) *Request {
	r := &Request{ExchangeDomain: exchangeDomain}
	if s := br.Source; s != nil {
		if s.SChain != nil {
			r.Chain = s.SChain
		} else if len(s.Ext) > 0 {
			var ext struct {
				SChain *openrtb2.SupplyChain `json:"schain"`
			}
			if err := json.Unmarshal(s.Ext, &ext); err != nil {
				t.Fatal(err)
			}
			r.Chain = ext.SChain
		}
	}
	if a := br.App; a != nil {
		r.App, r.AppDomain = true, a.Domain
		if a.Publisher != nil {
			r.PublisherDomain = a.Publisher.Domain
		}
	} else if s := br.Site; s != nil {
		r.SiteDomain, r.SitePage = s.Domain, s.Page
	}
	return r
}

func openFixture(t testing.TB) *Store {
	t.Helper()
	s, err := Open(Options{Dir: "testdata/supply"})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestFixture runs every labelled case of testdata/supply/cases.json.
func TestFixture(t *testing.T) {
	ix := openFixture(t).Index()
	var sc Scratch
	for _, c := range loadCases(t) {
		t.Run(c.Name, func(t *testing.T) {
			r := requestOf(t, &c.Request, c.ExchangeDomain)
			v := ix.Check(r, &sc)
			if v.Reason.String() != c.Want.Verdict || v.Node != c.Want.Node {
				t.Errorf("verdict %s node %d (%s), want %s node %d", v.Reason, v.Node, v.Explain(r, v.Reason), c.Want.Verdict, c.Want.Node)
			}
			got := Policy(c.Policy).Refuse(&v)
			if got.String() != c.Want.Refuse {
				t.Errorf("policy %+v: %s (%s), want %s", c.Policy, got, v.Explain(r, got), c.Want.Refuse)
			}
			if msg := v.Explain(r, got); msg == "" || got != OK && strings.HasPrefix(msg, "supply path ok") {
				t.Errorf("explanation %q", msg)
			}
		})
	}
}

// TestFixtureFiles: what the fixture's files hold, bad lines and entries
// skipped and counted.
func TestFixtureFiles(t *testing.T) {
	data, err := os.ReadFile("testdata/supply/sellers/exchange-a.com.json")
	if err != nil {
		t.Fatal(err)
	}
	s, bad, sample, err := ParseSellers(data)
	if err != nil || s.Len() != 4 || bad != 3 || len(sample) != 3 {
		t.Fatalf("sellers: %d ids, %d bad %v, %v; want 4 ids and 3 bad", s.Len(), bad, sample, err)
	}
	if s.Type("4711") != SellerBoth || s.Type("news7") != SellerPublisher || s.Type("x9") != 0 {
		t.Errorf("types: %v %v %v", s.Type("4711"), s.Type("news7"), s.Type("x9"))
	}
	data, err = os.ReadFile("testdata/supply/ads/publisher.com.txt")
	if err != nil {
		t.Fatal(err)
	}
	a, bad, sample := ParseAdsTxt(data)
	if a.Records() != 6 || bad != 3 {
		t.Fatalf("ads.txt: %d records, %d bad %v; want 6 and 3", a.Records(), bad, sample)
	}
	if sample[0].N != 10 || sample[1].N != 11 || sample[2].N != 12 {
		t.Errorf("bad line numbers %v, want 10, 11, 12", sample)
	}
	if a.Lookup("reseller-b.com", "r1") != Reseller || a.Lookup("reseller-c.com", "c1") != Reseller || a.Lookup("exchange-a.com", "PUB1") != 0 {
		t.Errorf("lookups: %v %v %v", a.Lookup("reseller-b.com", "r1"), a.Lookup("reseller-c.com", "c1"), a.Lookup("exchange-a.com", "PUB1"))
	}
	files, entries := openFixture(t).Index().Counts()
	if files != [numKinds]int{3, 2, 1} || entries != [numKinds]int{7, 8, 1} {
		t.Errorf("counts: files %v entries %v", files, entries)
	}
}

func TestHostOf(t *testing.T) {
	for in, want := range map[string]string{
		"https://www.example.com/a/b?c=d":   "www.example.com",
		"http://user:pw@example.com:8080/x": "example.com",
		"example.com/path":                  "example.com",
		"//cdn.example.com/x":               "cdn.example.com",
		"example.com/?u=http://other.com/":  "example.com",
		"https://[::1]:443/":                "[::1]",
		"":                                  "",
	} {
		if got := hostOf(in); got != want {
			t.Errorf("hostOf(%q) = %q, want %q", in, got, want)
		}
	}
}
