package bidder

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"time"

	"github.com/prebid/openrtb/v20/openrtb2"

	"github.com/rtbd/rtbd/bidder/campaign"
	"github.com/rtbd/rtbd/bidder/user"
	"github.com/rtbd/rtbd/rtb"
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

func (e *Explain) note(format string, args ...any) {
	if e != nil {
		e.Notes = append(e.Notes, fmt.Sprintf(format, args...))
	}
}

func (e *Explain) setPrivacy(s string) {
	if e != nil {
		e.Privacy = s
	}
}

func (e *Explain) setUser(id string, found bool, problem string) {
	if e != nil {
		e.User.ID, e.User.Found, e.User.Problem = id, found, problem
	}
}

func (e *Explain) setProfile(p *user.Profile) {
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

func (e *Explain) imp(imp *openrtb2.Imp) *ImpExplain {
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

func (ie *ImpExplain) rejections(r *campaign.Rejections) {
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

func (ie *ImpExplain) campaign(id, decision, reason string, price, floor int64, deal string) {
	if ie == nil {
		return
	}
	ie.Campaigns = append(ie.Campaigns, &CampaignExplain{ID: id, Decision: decision, Reason: reason,
		PriceMicros: price, FloorMicros: floor, DealID: deal})
}

// shading notes how cd's price was set on the last campaign entry.
func (ie *ImpExplain) shading(cd *candidate) {
	if ie == nil || len(ie.Campaigns) == 0 {
		return
	}
	last := ie.Campaigns[len(ie.Campaigns)-1]
	last.ValueMicros, last.Shading = cd.value, shadingNote(cd)
}

func (ie *ImpExplain) done(r rtb.NoBidReason, note string) {
	if ie == nil {
		return
	}
	ie.Result = nbrLabel(r)
	ie.Note = note
}

// Explain runs the auction for body (a JSON bid request, uncompressed) as
// the bid endpoint would, without counting it in the bid metrics, and
// reports every decision. The deadline is computed as for a real request;
// the catalog and user store are really queried. A request that does not
// decode gives an Explain with nbr 2 and the decoder's error in Notes.
func (b *Bidder) Explain(body []byte) *Explain {
	start := time.Now()
	ex := &Explain{}
	st := newReqState(b)
	st.reset()
	st.m = b.dbgM // debug runs count in metrics nobody gathers
	nbr := rtb.NoBidInvalidRequest
	if err := b.dec.DecodeRequestExts(body, &st.req, &st.exts); err != nil {
		ex.note("%v", err)
	} else {
		ex.RequestID = st.req.ID
		if s := b.opts.Campaigns.Current(); s != nil {
			ex.Campaigns = s.Len()
		}
		nbr = b.run(st, start, time.Now(), ex)
		if nbr == bidMade {
			if out, err := rtb.AppendResponse(nil, &st.resp); err == nil {
				ex.Response = out
			} else {
				ex.note("encoding the response: %v", err)
			}
		}
	}
	st.dctx.reset(time.Time{})
	ex.Decision = "no-bid"
	if nbr == bidMade {
		ex.Decision = "bid"
	} else {
		ex.NBR, ex.Reason = int(nbr), nbr.String()
	}
	ex.TookMicro = time.Since(start).Microseconds()
	return ex
}

// DebugHandler is the admin endpoint POST /admin/debug/bid: the body is a
// bid request (gzip not needed: it is an operator's tool), the answer the
// Explain as indented JSON. Bodies over MaxBodyBytes get 413.
func (b *Bidder) DebugHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "POST a bid request", http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, int64(b.opts.MaxBodyBytes)))
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				http.Error(w, "body larger than bidder.max_body_bytes", http.StatusRequestEntityTooLarge)
				return
			}
			http.Error(w, "reading the body: "+err.Error(), http.StatusBadRequest)
			return
		}
		ex := b.Explain(body)
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(ex)
	})
}
