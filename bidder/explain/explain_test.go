package explain

import (
	"errors"
	"testing"

	"github.com/prebid/openrtb/v20/openrtb2"

	"github.com/rtbd/rtbd/bidder/campaign"
	"github.com/rtbd/rtbd/bidder/user"
	"github.com/rtbd/rtbd/rtb"
)

var (
	nilCampaign = &campaign.Campaign{ID: "c1", Currency: "EUR"}
	nilImp      = &openrtb2.Imp{ID: "1", Video: &openrtb2.Video{}}
	nilProfile  = &user.Profile{}
)

// nilCalls calls every method on a nil *Explain and its nil imp.
func nilCalls() {
	var e *Explain
	c, imp := nilCampaign, nilImp
	{
		e.Note("x")
		e.SetPrivacy("p")
		e.SetUser("u", true, "")
		e.SetProfile(nilProfile)
		e.NoServableImp()
		e.NoCurrency(nil)
		e.Fraud(rtb.NoBidInvalidRequest)
		e.UserFailed("u", "lookup: ", errors.ErrUnsupported)
		ie := e.Imp(imp)
		ie.Rejections(ie.MatchRejections())
		ie.Campaign("c1", "bid", "", 1, 2, "")
		ie.NoProducts(c)
		ie.NoCreative(c, imp, true)
		ie.NoCampaignRate(c)
		ie.NoFloorRate(c, "EUR", "USD", true, 1, "")
		ie.Done("bid", "")
	}
}

// TestNilExplain: every method is a no-op on a nil receiver, the bid
// path's value.
func TestNilExplain(t *testing.T) {
	nilCalls()
	var e *Explain
	if e.Dry() || e.Imp(&openrtb2.Imp{}) != nil || e.Imp(&openrtb2.Imp{}).MatchRejections() != nil {
		t.Error("a nil Explain is a debug run or gives an imp")
	}
}

// TestExplainRecords: a non-nil Explain records the imp's formats, the
// campaigns' decisions and the result.
func TestExplainRecords(t *testing.T) {
	e := &Explain{}
	w, h := int64(300), int64(250)
	ie := e.Imp(&openrtb2.Imp{ID: "1", Banner: &openrtb2.Banner{W: &w, H: &h}, Native: &openrtb2.Native{}})
	ie.Rejections(&campaign.Rejections{ByCampaign: map[string]string{"b": "geo", "a": "size"}})
	ie.NoFloorRate(&campaign.Campaign{ID: "c"}, "SEK", "USD", true, 5, "d1")
	ie.Done("no bid", "why")
	e.UserFailed("u1", "lookup: ", errors.New("down"))
	if !e.Dry() || len(e.Imps) != 1 || e.User.ID != "u1" || e.User.Found || e.User.Problem != "lookup: down" {
		t.Fatalf("explain %+v", e)
	}
	if got := ie.Formats; len(got) != 2 || got[0] != "banner 300x250" || got[1] != "native" {
		t.Errorf("formats %v", got)
	}
	if len(ie.Campaigns) != 3 || ie.Campaigns[0].ID != "a" || ie.Campaigns[1].Reason != "match: geo" ||
		ie.Campaigns[2].PriceMicros != 5 || ie.Campaigns[2].DealID != "d1" || ie.Result != "no bid" || ie.Note != "why" {
		t.Errorf("imp %+v, campaigns %+v %+v %+v", ie, ie.Campaigns[0], ie.Campaigns[1], ie.Campaigns[2])
	}
}
