package bidder

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/rtbd/rtbd/bidder/campaign"
	"github.com/rtbd/rtbd/bidder/explain"
	"github.com/rtbd/rtbd/bidder/spend"
	"github.com/rtbd/rtbd/rtb"
)

// Explain runs the auction for body (a JSON bid request, uncompressed) as
// the bid endpoint would, without counting it in the bid metrics, and
// reports every decision. The deadline is computed as for a real request;
// the catalog and user store are really queried. A request that does not
// decode gives an Explain with nbr 2 and the decoder's error in Notes.
func (b *Bidder) Explain(body []byte) *explain.Explain {
	start := time.Now()
	ex := &explain.Explain{}
	st := newReqState(b)
	st.reset()
	st.m = b.dbgM // debug runs count in metrics nobody gathers
	nbr := rtb.NoBidInvalidRequest
	if err := b.dec.DecodeRequestExts(body, &st.req, &st.exts); err != nil {
		ex.Note("%v", err)
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
				ex.Note("encoding the response: %v", err)
			}
		}
	}
	st.dctx.Reset(time.Time{})
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

// The candidate-bound notes of the explain trace: each returns at once on
// a nil ie, the bid path's value.

func explainOverBudget(ie *explain.ImpExplain, c *campaign.Campaign, nbr rtb.NoBidReason, why spend.Reason, price, floor int64, deal string) {
	if ie != nil {
		ie.Campaign(c.ID, "rejected", budgetWhy(nbr, why), price, floor, deal)
	}
}

// explainCandidate notes candidate cd's decision and, for the bid, how it
// was priced.
func explainCandidate(ie *explain.ImpExplain, cd *candidate, decision, reason string) {
	if ie != nil {
		ie.Campaign(cd.c.ID, decision, reason, cd.price, cd.floor, cd.dealID)
	}
}

func explainNotTried(ie *explain.ImpExplain, cd *candidate) {
	if ie != nil {
		explainCandidate(ie, cd, "not tried", "outbid; "+strconv.Itoa(maxTries)+" candidates tried already")
	}
}

// explainFailed notes that cd failed at stage (catalog, creative) for nbr.
func explainFailed(ie *explain.ImpExplain, cd *candidate, stage string, nbr rtb.NoBidReason) {
	if ie != nil {
		explainCandidate(ie, cd, "rejected", stage+": "+nbr.String())
	}
}

// explainShading notes how cd's price was set on the last campaign entry.
func explainShading(ie *explain.ImpExplain, cd *candidate) {
	if ie == nil || len(ie.Campaigns) == 0 {
		return
	}
	last := ie.Campaigns[len(ie.Campaigns)-1]
	last.ValueMicros, last.Shading = cd.value, shadingNote(cd)
}

// explainDone records the imp's result r and a note.
func explainDone(ie *explain.ImpExplain, r rtb.NoBidReason, note string) {
	if ie != nil {
		ie.Done(nbrLabel(r), note)
	}
}

// explainBid notes cd's bid with n products, then the outbid rest.
func explainBid(ie *explain.ImpExplain, cd *candidate, n int, rest []candidate) {
	if ie == nil {
		return
	}
	explainCandidate(ie, cd, "bid", cd.kind.String()+" with "+strconv.Itoa(n)+" products")
	explainShading(ie, cd)
	for j := range rest {
		explainCandidate(ie, &rest[j], "outbid", "")
		explainShading(ie, &rest[j])
	}
	explainDone(ie, bidMade, "")
}
