package shading

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"
)

// Point is one point of a segment's estimate: the bid price (CPM) and
// the estimated probability of winning at it.
type Point struct {
	Price   float64 `json:"price"`
	WinProb float64 `json:"p_win"`
}

// SegmentView is one segment as Snapshot shows it (GET /admin/shading).
type SegmentView struct {
	// ID is the segment id (hex, as notice tokens carry it); Exchange its
	// exchange's name; Level "exchange", "publisher" or "format".
	ID       string `json:"id"`
	Exchange string `json:"exchange"`
	Level    string `json:"level"`
	// Source is what the estimate rests on: "min_to_win", "wins", or
	// "none" (too few observations: bids back off to a coarser segment).
	Source string `json:"source"`
	// Bids, Wins, Losses and MinToWin are the decayed observations the
	// estimate uses (bids past the notice wait, wins, explicit losses,
	// minimum bids to win); PendingBids the bids still within it.
	Bids        float64 `json:"bids"`
	Wins        float64 `json:"wins"`
	Losses      float64 `json:"losses"`
	MinToWin    float64 `json:"min_to_win"`
	PendingBids int64   `json:"pending_bids"`
	// Curve is the estimate from the highest price it gives no chance to
	// the lowest it gives its top chance, at the bucket edges.
	Curve []Point `json:"curve,omitempty"`
	// LastValue and LastPrice are the last bid it priced (CPM) and Shade
	// their ratio.
	LastValue float64 `json:"last_value"`
	LastPrice float64 `json:"last_price"`
	Shade     float64 `json:"shade,omitempty"`
	// Fleet is its share of the fleet's counts; absent without a fleet.
	Fleet *SegmentFleet `json:"fleet,omitempty"`
}

var levelNames = [NumLevels]string{"exchange", "publisher", "format"}

// Snapshot returns every segment held, by id; exchanges names the
// exchange indices (an index beyond it shows as its number).
func (s *Shader) Snapshot(exchanges []string) []SegmentView {
	if s == nil {
		return nil
	}
	segs := s.held()
	slices.SortFunc(segs, func(a, b *segment) int { return int(int64(a.id) - int64(b.id)) })
	out := make([]SegmentView, 0, len(segs))
	for _, g := range segs {
		v := SegmentView{ID: fmt.Sprintf("%08x", uint32(g.id)), Level: levelNames[g.id.Level()], Source: SourceNone.String()}
		if x := g.id.Exchange(); x < len(exchanges) {
			v.Exchange = exchanges[x]
		} else {
			v.Exchange = fmt.Sprint(x)
		}
		g.mu.Lock()
		for b := range NumBuckets {
			v.Bids += g.bids[b]
			v.Wins += g.wins[b]
			v.Losses += g.losses[b]
			v.MinToWin += g.mins[b]
		}
		for i := range numSlots {
			if g.slotNum[i] >= 0 {
				for b := range NumBuckets {
					v.PendingBids += int64(g.slots[i].bids[b])
				}
			}
		}
		v.Fleet = s.segmentFleet(g, v.Bids+v.Wins+v.Losses+v.MinToWin)
		g.mu.Unlock()
		if c := g.cur.Load(); c != nil {
			v.Source = c.source.String()
			lo, hi := 0, NumBuckets
			for lo < NumBuckets && c.p[lo+1] <= 0 {
				lo++
			}
			for hi > lo && c.p[hi-1] >= c.p[hi] {
				hi--
			}
			for e := lo; e <= hi; e++ {
				v.Curve = append(v.Curve, Point{Price: edges[e] / 1e6, WinProb: float64(c.p[e])})
			}
		}
		lv, lp := g.lastValue.Load(), g.lastPrice.Load()
		v.LastValue, v.LastPrice = float64(lv)/1e6, float64(lp)/1e6
		if lv > 0 {
			v.Shade = float64(lp) / float64(lv)
		}
		out = append(out, v)
	}
	return out
}

// Handler serves GET /admin/shading (the admin listener): JSON of the
// sharing with the fleet (FleetView, as of the request) and every segment
// sh holds (SegmentView: its level, the observations and the fleet's
// share of them, the estimated curve, the last bid it priced), exchanges
// naming the exchanges of the segment ids by index; {"enabled": false,
// "segments": []} when sh is nil.
func Handler(sh *Shader, exchanges []string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		out := struct {
			Enabled  bool          `json:"enabled"`
			Fleet    *FleetView    `json:"fleet,omitempty"`
			Segments []SegmentView `json:"segments"`
		}{Enabled: sh != nil, Segments: sh.Snapshot(exchanges)}
		if sh != nil {
			f := sh.FleetSnapshot(time.Now())
			out.Fleet = &f
		}
		if out.Segments == nil {
			out.Segments = []SegmentView{}
		}
		_ = json.NewEncoder(w).Encode(out)
	})
}
