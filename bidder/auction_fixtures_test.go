package bidder

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/rtbd/rtbd/bidder/campaign"
	"github.com/rtbd/rtbd/bidder/shading"
	"github.com/rtbd/rtbd/bidder/user"
)

// updateFixtures rewrites the expect block of every auction fixture with
// what the bidder answers (go test -run Fixture ./bidder/ -update-fixtures).
// Without it the run compares.
var updateFixtures = flag.Bool("update-fixtures", false, "rewrite the expect block of testdata/auction/*.yaml with the bidder's answers")

// fixtureDir holds the auction behaviour cases, one YAML file each (see
// its README.md).
const fixtureDir = "testdata/auction"

// auctionFixture is one file of fixtureDir.
type auctionFixture struct {
	// Bidder are the options of the test bidder the case needs.
	Bidder struct {
		NBRBody      *bool  `yaml:"nbr_body"` // default true
		GDPRVendorID uint16 `yaml:"gdpr_vendor_id"`
		DSADomain    string `yaml:"dsa_domain"`
		Supply       bool   `yaml:"supply"`          // the supply store of package supply's fixture
		Exchange     string `yaml:"exchange_domain"` // the default exchange's advertising system domain
		Shading      string `yaml:"shading"`         // "trained": a Shader taught a landscape far below every value
	} `yaml:"bidder"`
	// Campaigns is a campaigns file (the YAML of campaigns.yaml); "" the
	// tests' testdata/campaigns.yaml.
	Campaigns string `yaml:"campaigns"`
	// Users are profiles put in the user store beside the tests' sample
	// users (user-bulk, user-full, user-none, user-viewed).
	Users map[string]fixtureProfile `yaml:"users"`
	// Bills: before the request checked, the same request is sent, must
	// get a bid, and that bid's burl is called with each price (CPM in
	// the bid's currency) in turn: spend and frequency as the auction
	// then sees them.
	Bills []string `yaml:"bills"`
	// Request is the bid request body, as an exchange posts it.
	Request string        `yaml:"request"`
	Expect  fixtureExpect `yaml:"expect"`
}

// fixtureProfile is a user profile: product ids per product group.
type fixtureProfile struct {
	Viewed      map[int64][]int64 `yaml:"viewed"`
	Recommended map[int64][]int64 `yaml:"recommended"`
	Segments    []string          `yaml:"segments"`
}

// fixtureExpect is what the bidder must answer; the runner builds the same
// from the answer and compares the two.
type fixtureExpect struct {
	Status int `yaml:"status"`
	// NBR is the response's no-bid reason (0 with bids).
	NBR  int          `yaml:"nbr,omitempty"`
	Cur  string       `yaml:"cur,omitempty"`
	Bids []fixtureBid `yaml:"bids,omitempty"`
	// Explain, when present, is compared with the /admin/debug/bid run of
	// the same request.
	Explain *fixtureExplain `yaml:"explain,omitempty"`
	// Counters are metrics of the bidder's registry after the case, by
	// name{label="value",...}.
	Counters map[string]float64 `yaml:"counters,omitempty"`
}

// fixtureBid is one bid of the response; every field is compared.
type fixtureBid struct {
	Imp         string   `yaml:"imp"`
	PriceMicros int64    `yaml:"price_micros"`
	Campaign    string   `yaml:"cid"`
	Creative    string   `yaml:"crid"`
	Seat        string   `yaml:"seat"`
	DealID      string   `yaml:"dealid,omitempty"`
	ADomain     []string `yaml:"adomain,flow"`
	Size        string   `yaml:"size,omitempty"` // WxH
	MType       int      `yaml:"mtype"`
	Ext         string   `yaml:"ext,omitempty"` // the bid's ext, JSON as sent
	// AdMContains are texts the markup must hold (not rewritten by
	// -update-fixtures).
	AdMContains []string `yaml:"adm_contains,omitempty"`
	AdMLacks    []string `yaml:"adm_lacks,omitempty"`
}

// fixtureExplain is the part of the explanation a case pins.
type fixtureExplain struct {
	Decision    string `yaml:"decision"`
	Reason      string `yaml:"reason,omitempty"`
	Privacy     string `yaml:"privacy,omitempty"`
	Supply      string `yaml:"supply,omitempty"`
	UserProblem string `yaml:"user_problem,omitempty"`
	// Campaigns are "decision[: reason][; how the price was set]" by
	// campaign id, over every imp ("imp/id" keys when there are several).
	Campaigns map[string]string `yaml:"campaigns,omitempty"`
}

// TestAuctionFixtures runs every case of testdata/auction through the bid
// handler over HTTP (and, where it pins one, the debug endpoint) and
// compares the answer with the case's expect block.
func TestAuctionFixtures(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(fixtureDir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures in %s (%v)", fixtureDir, err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".yaml"), func(t *testing.T) {
			raw := readFile(t, file)
			var fx auctionFixture
			dec := yaml.NewDecoder(bytes.NewReader(raw))
			dec.KnownFields(true)
			if err := dec.Decode(&fx); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			got := runAuctionFixture(t, &fx)
			if *updateFixtures {
				rewriteExpect(t, file, raw, got)
				return
			}
			want := fx.Expect
			for i := range want.Bids {
				want.Bids[i].AdMContains, want.Bids[i].AdMLacks = nil, nil
			}
			if w, g := yamlText(t, want), yamlText(t, got); w != g {
				t.Errorf("%s: the answer differs from expect (-want +got):\n%s", file, lineDiff(w, g))
			}
		})
	}
}

// runAuctionFixture sets up the case's bidder, sends its request and
// returns the answer in the form of an expect block.
func runAuctionFixture(t *testing.T, fx *auctionFixture) fixtureExpect {
	t.Helper()
	set := loadCampaigns(t, "campaigns.yaml")
	if fx.Campaigns != "" {
		var err error
		if set, err = campaign.Parse([]byte(fx.Campaigns), "campaigns"); err != nil {
			t.Fatalf("campaigns: %v", err)
		}
	}
	if fx.Request == "" {
		t.Fatal("no request")
	}
	edits := func(o *Options) {
		o.NBRBody = fx.Bidder.NBRBody == nil || *fx.Bidder.NBRBody
		o.GDPRVendorID = fx.Bidder.GDPRVendorID
		o.DSADomain = fx.Bidder.DSADomain
		if fx.Bidder.Supply {
			o.Supply = openSupply(t)
		}
		if fx.Bidder.Exchange != "" {
			o.Exchanges = []Exchange{{Name: DefaultExchange, Domain: fx.Bidder.Exchange}}
		}
		switch fx.Bidder.Shading {
		case "":
		case "trained":
			o.Shading = &shading.Options{Explore: -1, ExploreCold: -1}
		default:
			t.Fatalf("bidder.shading %q: want trained or nothing", fx.Bidder.Shading)
		}
	}
	f := newMoneyFixture(t, set, edits)
	// The bidder's clock stands still at the wall clock's time (tokens
	// verify against it in checkResponse): bills and the request checked
	// fall in the same budget day and frequency window.
	f.clock.Add(time.Since(f.clock.Now()))
	if fx.Bidder.Shading == "trained" {
		trainShader(t, f.b.Shader(), f.clock.Now())
	}
	for uid, p := range fx.Users {
		prof := &user.Profile{Segments: p.Segments}
		prof.Viewed = groupIDs(p.Viewed)
		prof.Recommended = groupIDs(p.Recommended)
		if err := f.users.Put(context.Background(), uid, prof); err != nil {
			t.Fatal(err)
		}
	}
	body := []byte(fx.Request)
	if !json.Valid(body) {
		t.Fatalf("request is not JSON:\n%s", body)
	}
	for i, price := range fx.Bills {
		r := f.bid(body)
		var resp struct {
			SeatBid []struct {
				Bid []struct {
					BURL string `json:"burl"`
				} `json:"bid"`
			} `json:"seatbid"`
		}
		if err := json.Unmarshal(r.body, &resp); err != nil || len(resp.SeatBid) == 0 || len(resp.SeatBid[0].Bid) == 0 {
			t.Fatalf("bills[%d]: the request got no bid to bill: status %d %s", i, r.status, r.body)
		}
		path, ok := strings.CutPrefix(resp.SeatBid[0].Bid[0].BURL, f.opts.PublicURL)
		if !ok {
			t.Fatalf("bills[%d]: burl %q", i, resp.SeatBid[0].Bid[0].BURL)
		}
		if st := f.notice(path, price); st != 204 {
			t.Fatalf("bills[%d]: billing notice at %s: status %d", i, price, st)
		}
	}

	r := f.bid(body)
	got := fixtureExpect{Status: r.status}
	if r.status == 200 {
		var resp struct {
			Cur     string `json:"cur"`
			NBR     int    `json:"nbr"`
			SeatBid []struct {
				Seat string `json:"seat"`
				Bid  []struct {
					ImpID   string          `json:"impid"`
					Price   float64         `json:"price"`
					CID     string          `json:"cid"`
					CrID    string          `json:"crid"`
					DealID  string          `json:"dealid"`
					ADomain []string        `json:"adomain"`
					W       int64           `json:"w"`
					H       int64           `json:"h"`
					MType   int             `json:"mtype"`
					AdM     string          `json:"adm"`
					Ext     json.RawMessage `json:"ext"`
				} `json:"bid"`
			} `json:"seatbid"`
		}
		if err := json.Unmarshal(r.body, &resp); err != nil {
			t.Fatalf("response is not JSON: %v\n%s", err, r.body)
		}
		got.NBR, got.Cur = resp.NBR, resp.Cur
		for _, sb := range resp.SeatBid {
			for _, b := range sb.Bid {
				gb := fixtureBid{
					Imp: b.ImpID, PriceMicros: int64(math.Round(b.Price * 1e6)), Campaign: b.CID, Creative: b.CrID,
					Seat: sb.Seat, DealID: b.DealID, ADomain: b.ADomain, MType: b.MType, Ext: string(b.Ext),
				}
				if b.W != 0 || b.H != 0 {
					gb.Size = fmt.Sprintf("%dx%d", b.W, b.H)
				}
				for _, w := range fx.Expect.Bids {
					if w.Imp != b.ImpID {
						continue
					}
					for _, s := range w.AdMContains {
						if !strings.Contains(b.AdM, s) {
							t.Errorf("imp %s: the adm lacks %q:\n%s", b.ImpID, s, b.AdM)
						}
					}
					for _, s := range w.AdMLacks {
						if strings.Contains(b.AdM, s) {
							t.Errorf("imp %s: the adm holds %q:\n%s", b.ImpID, s, b.AdM)
						}
					}
				}
				got.Bids = append(got.Bids, gb)
			}
		}
		if len(got.Bids) > 0 {
			// Every bid valid field by field against its request (tokens,
			// notice URLs, floor, size, markup, clicks followed).
			checkResponse(t, f.fixture, body, r, fixtureUID(t, body))
		}
	}
	if fx.Expect.Explain != nil {
		got.Explain = explainOf(t, f, body)
	}
	if len(fx.Expect.Counters) > 0 {
		got.Counters = map[string]float64{}
		for key := range fx.Expect.Counters {
			name, labels := parseCounterKey(t, key)
			got.Counters[key] = f.counter(name, labels...)
		}
	}
	return got
}

// explainOf runs body through the debug endpoint over HTTP and returns
// the part of its explanation a fixture pins.
func explainOf(t *testing.T, f *moneyFixture, body []byte) *fixtureExplain {
	t.Helper()
	srv := httptest.NewServer(f.b.DebugHandler())
	defer srv.Close()
	resp, err := http.Post(srv.URL, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var ex Explain
	if err := json.Unmarshal(b, &ex); err != nil {
		t.Fatalf("debug endpoint: status %d %s", resp.StatusCode, b)
	}
	out := &fixtureExplain{Decision: ex.Decision, Reason: ex.Reason, Privacy: ex.Privacy, Supply: ex.Supply, UserProblem: ex.User.Problem}
	for _, imp := range ex.Imps {
		for _, c := range imp.Campaigns {
			if out.Campaigns == nil {
				out.Campaigns = map[string]string{}
			}
			key := c.ID
			if len(ex.Imps) > 1 {
				key = imp.ImpID + "/" + c.ID
			}
			v := c.Decision
			if c.Reason != "" {
				v += ": " + c.Reason
			}
			if c.Shading != "" {
				v += "; " + c.Shading
			}
			out.Campaigns[key] = v
		}
	}
	return out
}

// fixtureUID is the uid the bidder reads from the request: user.buyeruid,
// else user.id.
func fixtureUID(t *testing.T, body []byte) string {
	t.Helper()
	var req struct {
		User struct {
			BuyerUID string `json:"buyeruid"`
			ID       string `json:"id"`
		} `json:"user"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	if req.User.BuyerUID != "" {
		return req.User.BuyerUID
	}
	return req.User.ID
}

// parseCounterKey splits name{a="x",b="y"} into the name and label pairs.
func parseCounterKey(t *testing.T, key string) (string, []string) {
	t.Helper()
	name, rest, ok := strings.Cut(key, "{")
	if !ok {
		return key, nil
	}
	rest, ok = strings.CutSuffix(rest, "}")
	if !ok {
		t.Fatalf("counter %q: want name{label=\"value\",...}", key)
	}
	var labels []string
	for _, kv := range strings.Split(rest, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			t.Fatalf("counter %q: label %q", key, kv)
		}
		labels = append(labels, strings.TrimSpace(k), strings.Trim(strings.TrimSpace(v), `"`))
	}
	return name, labels
}

func groupIDs(m map[int64][]int64) []user.GroupIDs {
	var out []user.GroupIDs
	for g, ids := range m {
		out = append(out, user.GroupIDs{Group: g, IDs: ids})
	}
	slices.SortFunc(out, func(a, b user.GroupIDs) int { return int(a.Group - b.Group) })
	return out
}

// yamlText is v as the fixture files write it.
func yamlText(t *testing.T, v any) string {
	t.Helper()
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// rewriteExpect replaces the expect block of the fixture file with got,
// keeping the rest of the file (comments, the literal request) as written
// and the adm texts the old block asked for.
func rewriteExpect(t *testing.T, file string, raw []byte, got fixtureExpect) {
	t.Helper()
	var old auctionFixture
	if err := yaml.Unmarshal(raw, &old); err != nil {
		t.Fatal(err)
	}
	for i := range got.Bids {
		for _, w := range old.Expect.Bids {
			if w.Imp == got.Bids[i].Imp {
				got.Bids[i].AdMContains, got.Bids[i].AdMLacks = w.AdMContains, w.AdMLacks
			}
		}
	}
	text := string(raw)
	at := strings.Index(text, "\nexpect:")
	if at < 0 {
		t.Fatalf("%s: no top-level expect: block (it must be the file's last key)", file)
	}
	block := yamlText(t, map[string]fixtureExpect{"expect": got})
	if err := os.WriteFile(file, []byte(text[:at+1]+block), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: expect rewritten", file)
}

// lineDiff is a line diff of want and got: " " common, "-" only in want,
// "+" only in got (longest common subsequence; fixture answers are short).
func lineDiff(want, got string) string {
	a, b := strings.Split(want, "\n"), strings.Split(got, "\n")
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out strings.Builder
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			fmt.Fprintf(&out, "  %s\n", a[i])
			i, j = i+1, j+1
		case i < len(a) && (j == len(b) || lcs[i+1][j] >= lcs[i][j+1]):
			fmt.Fprintf(&out, "- %s\n", a[i])
			i++
		default:
			fmt.Fprintf(&out, "+ %s\n", b[j])
			j++
		}
	}
	return out.String()
}
