package bidder

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prebid/openrtb/v20/openrtb2"
)

// auctionCase is one file of testdata/auction: a bid request, the
// campaigns it runs against (a file of testdata, campaigns.yaml when
// empty) and what the bidder answers, as prebid-server's exchangetest
// keeps its cases. The users and the catalog are the fixture's (see
// newFixture).
type auctionCase struct {
	Description string          `json:"description"`
	Campaigns   string          `json:"campaigns,omitempty"`
	Request     json.RawMessage `json:"request"`
	Expected    struct {
		// NBR is the no-bid reason; 0: a bid response, in Cur, with Bids
		// in order (every seatbid's bids in turn).
		NBR  int           `json:"nbr,omitempty"`
		Cur  string        `json:"cur,omitempty"`
		Bids []expectedBid `json:"bids,omitempty"`
	} `json:"expected"`
}

// expectedBid is what a case checks of a bid; the URLs, tokens and markup
// are checked by checkResponse for every bid response.
type expectedBid struct {
	ImpID  string  `json:"impid"`
	CID    string  `json:"cid"`
	Price  float64 `json:"price"`
	W      int64   `json:"w,omitempty"`
	H      int64   `json:"h,omitempty"`
	DealID string  `json:"dealid,omitempty"`
}

// TestAuctionFixtures runs every case of testdata/auction.
func TestAuctionFixtures(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "auction", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no auction cases in testdata/auction (%v)", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".json"), func(t *testing.T) {
			var c auctionCase
			if err := json.Unmarshal(readFile(t, file), &c); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			if c.Description == "" || len(c.Request) == 0 || (c.Expected.NBR == 0) == (len(c.Expected.Bids) == 0) {
				t.Fatalf("%s: want a description, a request, and either expected.nbr or expected.bids", file)
			}
			f := newFixture(t, func(o *Options) {
				o.NBRBody = true
				if c.Campaigns != "" {
					o.Campaigns = staticCampaigns{loadCampaigns(t, c.Campaigns)}
				}
			})
			r := f.bid(c.Request)
			if c.Expected.NBR != 0 {
				var nb struct{ NBR *int }
				if err := json.Unmarshal(r.body, &nb); err != nil || nb.NBR == nil || *nb.NBR != c.Expected.NBR {
					t.Fatalf("%s\ngot %d %.300s, want nbr %d", c.Description, r.status, r.body, c.Expected.NBR)
				}
				return
			}
			var req openrtb2.BidRequest
			if err := json.Unmarshal(c.Request, &req); err != nil {
				t.Fatal(err)
			}
			uid := ""
			if req.User != nil {
				uid = req.User.BuyerUID
				if uid == "" {
					uid = req.User.ID
				}
			}
			resp, _ := checkResponse(t, f, c.Request, r, uid)
			var got []openrtb2.Bid
			for _, sb := range resp.SeatBid {
				got = append(got, sb.Bid...)
			}
			if resp.Cur != c.Expected.Cur || len(got) != len(c.Expected.Bids) {
				t.Fatalf("%s\ngot %d bids in %s, want %d in %s", c.Description, len(got), resp.Cur, len(c.Expected.Bids), c.Expected.Cur)
			}
			for i, want := range c.Expected.Bids {
				b := got[i]
				have := expectedBid{ImpID: b.ImpID, CID: b.CID, Price: b.Price, DealID: b.DealID}
				if want.W != 0 || want.H != 0 {
					have.W, have.H = b.W, b.H
				}
				if have != want {
					t.Errorf("%s\nbid %d: got %+v, want %+v", c.Description, i, have, want)
				}
			}
		})
	}
}
