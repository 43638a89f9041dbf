// Package explain is the answer of the bidder's debug endpoint (POST
// /admin/debug/bid): for one bid request, what the auction decided and
// why, imp by imp and campaign by campaign. Every method returns at once
// on a nil receiver, the bid path's value.
package explain

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/prebid/openrtb/v20/openrtb2"

	"github.com/rtbd/rtbd/bidder/campaign"
	"github.com/rtbd/rtbd/bidder/user"
)

// Explain is the answer of the debug endpoint (POST /admin/debug/bid on the
// admin listener): for one bid request, what the bidder decided and why,
// campaign by campaign. It is built only in debug runs (all methods are
// no-ops on a nil *Explain, the hot path's value).
type Explain struct {
	RequestID string   `json:"request_id"`
	Decision  string   `json:"decision"` // "bid" or "no-bid"
	NBR       int      `json:"nbr,omitempty"`
	Reason    string   `json:"reason,omitempty"` // rtb.NoBidReason.String()
	Notes     []string `json:"notes,omitempty"`
	Privacy   string   `json:"privacy,omitempty"`
	// Supply is the request's supply path verdict (which node failed and
	// why); DSA its regs.ext.dsa.
	Supply string `json:"supply,omitempty"`
	DSA    string `json:"dsa,omitempty"`
	User   struct {
		ID          string   `json:"id,omitempty"`
		Found       bool     `json:"found"`
		Problem     string   `json:"problem,omitempty"`
		Viewed      []int64  `json:"viewed_groups,omitempty"`
		Recommended []int64  `json:"recommended_groups,omitempty"`
		Segments    []string `json:"segments,omitempty"`
	} `json:"user"`
	Campaigns int             `json:"campaigns_loaded"`
	Imps      []*ImpExplain   `json:"imps,omitempty"`
	Response  json.RawMessage `json:"response,omitempty"`
	TookMicro int64           `json:"took_us"`
}

// ImpExplain is the auction of one imp.
type ImpExplain struct {
	ImpID     string             `json:"imp_id"`
	Formats   []string           `json:"formats"`
	Floor     float64            `json:"bidfloor,omitempty"`
	FloorCur  string             `json:"bidfloorcur,omitempty"`
	Result    string             `json:"result"` // "bid" or the no-bid reason
	Note      string             `json:"note,omitempty"`
	Campaigns []*CampaignExplain `json:"campaigns"`
}

// CampaignExplain is what happened to one campaign on one imp. Prices are
// micros of the response currency.
type CampaignExplain struct {
	ID          string `json:"id"`
	Decision    string `json:"decision"` // bid, outbid, rejected, not tried
	Reason      string `json:"reason,omitempty"`
	PriceMicros int64  `json:"price_micros,omitempty"`
	FloorMicros int64  `json:"floor_micros,omitempty"`
	DealID      string `json:"deal_id,omitempty"`
	// ValueMicros is the price before bid shading and Shading how the
	// price was set from it (shaded, or why not).
	ValueMicros int64  `json:"value_micros,omitempty"`
	Shading     string `json:"shading,omitempty"`
}

// Note adds a note.
func (e *Explain) Note(format string, args ...any) {
	if e != nil {
		e.Notes = append(e.Notes, fmt.Sprintf(format, args...))
	}
}

// SetPrivacy records the privacy decision.
func (e *Explain) SetPrivacy(s string) {
	if e != nil {
		e.Privacy = s
	}
}

// SetUser records the user lookup.
func (e *Explain) SetUser(id string, found bool, problem string) {
	if e != nil {
		e.User.ID, e.User.Found, e.User.Problem = id, found, problem
	}
}

// SetProfile records the user's profile.
func (e *Explain) SetProfile(p *user.Profile) {
	if e == nil {
		return
	}
	for _, g := range p.Viewed {
		e.User.Viewed = append(e.User.Viewed, g.Group)
	}
	for _, g := range p.Recommended {
		e.User.Recommended = append(e.User.Recommended, g.Group)
	}
	e.User.Segments = append([]string(nil), p.Segments...)
}

// Imp starts the explain of imp (nil on a nil e).
func (e *Explain) Imp(imp *openrtb2.Imp) *ImpExplain {
	if e == nil {
		return nil
	}
	ie := &ImpExplain{ImpID: imp.ID, Floor: imp.BidFloor, FloorCur: imp.BidFloorCur, Campaigns: []*CampaignExplain{}}
	if b := imp.Banner; b != nil {
		for _, f := range b.Format {
			ie.Formats = append(ie.Formats, fmt.Sprintf("banner %dx%d", f.W, f.H))
		}
		if b.W != nil && b.H != nil {
			ie.Formats = append(ie.Formats, fmt.Sprintf("banner %dx%d", *b.W, *b.H))
		}
	}
	if imp.Native != nil {
		ie.Formats = append(ie.Formats, "native")
	}
	if imp.Video != nil {
		ie.Formats = append(ie.Formats, "video")
	}
	if imp.Audio != nil {
		ie.Formats = append(ie.Formats, "audio")
	}
	e.Imps = append(e.Imps, ie)
	return ie
}

// Rejections adds the campaigns the match rejected.
func (ie *ImpExplain) Rejections(r *campaign.Rejections) {
	if ie == nil || r == nil {
		return
	}
	ids := make([]string, 0, len(r.ByCampaign))
	for id := range r.ByCampaign {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		ie.Campaigns = append(ie.Campaigns, &CampaignExplain{ID: id, Decision: "rejected", Reason: "match: " + r.ByCampaign[id]})
	}
}

// Campaign adds one campaign's decision; prices in micros.
func (ie *ImpExplain) Campaign(id, decision, reason string, price, floor int64, deal string) {
	if ie == nil {
		return
	}
	ie.Campaigns = append(ie.Campaigns, &CampaignExplain{ID: id, Decision: decision, Reason: reason,
		PriceMicros: price, FloorMicros: floor, DealID: deal})
}

// Done records the imp's result ("bid" or the no-bid reason) and a note.
func (ie *ImpExplain) Done(result, note string) {
	if ie == nil {
		return
	}
	ie.Result = result
	ie.Note = note
}
