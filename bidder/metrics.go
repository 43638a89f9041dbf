package bidder

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rtbd/rtbd/bidder/creative"
	"github.com/rtbd/rtbd/bidder/dsa"
	"github.com/rtbd/rtbd/bidder/internal/fasthist"
	"github.com/rtbd/rtbd/bidder/supply"
	"github.com/rtbd/rtbd/catalog"
	"github.com/rtbd/rtbd/rtb"
)

// Stages of a bid, the label of rtbd_bidder_stage_seconds.
const (
	stageDecode = iota
	stageUser
	stageCatalog
	stageDecide
	stageEncode
	numStages
)

var stageNames = [numStages]string{"decode", "user", "catalog", "decide", "encode"}

// Where a deadline was missed, the label of rtbd_bidder_deadline_misses_total.
const (
	missTMax  = iota // tmax left no budget: no-bid at once
	missQueue        // the request queued (before the handler) past its budget
	missUser
	missCatalog
	missDecide
	numMisses
)

var missNames = [numMisses]string{"tmax", "queue", "user", "catalog", "decide"}

// HTTP-level rejections of /openrtb2/bid, the label of
// rtbd_bidder_rejected_total.
const (
	rejMethod   = iota // 405
	rejTooLarge        // 413
	rejEncoding        // 415
	rejCorrupt         // 400: a gzip body that does not decompress
	numRejections
)

var rejNames = [numRejections]string{"method", "too_large", "encoding", "corrupt_body"}

// Catalog (and user store) error kinds.
const (
	errInvalid = iota
	errUnavailable
	errDeadline
	errClosed
	errOther
	numErrKinds
)

var errKindNames = [numErrKinds]string{"invalid_argument", "unavailable", "deadline", "closed", "other"}

func catalogErrKind(err error) int {
	switch {
	case errors.Is(err, catalog.ErrInvalidArgument):
		return errInvalid
	case errors.Is(err, catalog.ErrDeadline):
		return errDeadline
	case errors.Is(err, catalog.ErrUnavailable):
		return errUnavailable
	case errors.Is(err, catalog.ErrClosed):
		return errClosed
	}
	return errOther
}

// Results of /event and /click.
const (
	resOK = iota
	resInvalid
	resExpired
	resError
	resFallback // /click only: the product is no longer served (sent to the click base, or 404)
	numResults
)

var resNames = [numResults]string{"ok", "invalid", "expired", "error", "fallback"}

// metrics are the bidder's Prometheus metrics, every label value
// pre-created (fixed sets, never request input) so that the hot path only
// increments.
type metrics struct {
	requests   []prometheus.Counter // by exchange index
	bids       []prometheus.Counter // by exchange index
	nobids     map[rtb.NoBidReason]prometheus.Counter
	nobidOther prometheus.Counter
	rejected   [numRejections]prometheus.Counter
	stage      [numStages]prometheus.Observer
	total      prometheus.Observer
	misses     [numMisses]prometheus.Counter
	catErrs    [numErrKinds]prometheus.Counter
	userErrs   [numErrKinds]prometheus.Counter
	shed       prometheus.Counter // in_flight
	shedQueue  prometheus.Counter
	queue      prometheus.Observer // arrival to handler start, when known
	events     [numResults]prometheus.Counter
	clicks     [numResults]prometheus.Counter
	notices    prometheus.Counter

	// supplyRefusals and dsaRefusals count the campaigns refused on an
	// imp (supplycheck.go), by reason.
	supplyRefusals [supply.NumReasons]prometheus.Counter
	dsaRefusals    [dsa.NumReasons]prometheus.Counter

	eventsNoWrite [numNoWrite]prometheus.Counter
}

// Why a valid /event wrote nothing.
const (
	noWriteNewUID  = iota // the uid cookie was minted in this response
	noWritePrivacy        // the privacy decision said no
	numNoWrite
)

var noWriteNames = [numNoWrite]string{"new_uid", "privacy"}

// latencyBuckets (seconds): 50us to 250ms, dense around the 1-20 ms that
// matter for a tmax of 100 ms.
var latencyBuckets = []float64{
	0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.002, 0.003, 0.005, 0.0075,
	0.01, 0.015, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.25,
}

// newMetrics returns the bidder's metrics, registered with reg (nil: none);
// inFlight gives rtbd_bidder_in_flight; exchanges are the exchange label's
// values (the exchanges of Options, a fixed set), by index.
func newMetrics(reg prometheus.Registerer, inFlight func() float64, exchanges []string) (*metrics, error) {
	m := &metrics{nobids: make(map[rtb.NoBidReason]prometheus.Counter)}
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rtbd_bidder_requests_total",
		Help: "Bid requests received on /openrtb2/bid (exchange default) and /openrtb2/bid/{exchange}, by exchange."}, []string{"exchange"})
	bids := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rtbd_bidder_bids_total",
		Help: "Bids made (one per imp at most), by exchange."}, []string{"exchange"})
	for _, x := range exchanges {
		m.requests = append(m.requests, requests.WithLabelValues(x))
		m.bids = append(m.bids, bids.WithLabelValues(x))
	}
	noWrite := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rtbd_bidder_events_unrecorded_total",
		Help: "Valid /event requests that recorded nothing, by reason: new_uid (no uid cookie: one was set in this answer), privacy (no personalisation)."}, []string{"reason"})
	for i, n := range noWriteNames {
		m.eventsNoWrite[i] = noWrite.WithLabelValues(n)
	}
	nobids := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rtbd_bidder_nobids_total",
		Help: "No-bid answers by OpenRTB no-bid reason (rtb.NoBidReason.String())."}, []string{"nbr"})
	rejected := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rtbd_bidder_rejected_total",
		Help: "Bid requests refused at the HTTP level (405, 413, 415, 400)."}, []string{"reason"})
	// The bid path's histograms are fasthist's: several per request, at
	// about half the cost of client_golang's observation.
	stage := fasthist.NewVec("rtbd_bidder_stage_seconds",
		"Time spent per stage of a bid request.", latencyBuckets, "stage", stageNames[:]...)
	total := fasthist.NewVec("rtbd_bidder_request_seconds",
		"Time from the request's arrival (the kernel's receive time when known, else the handler's start) to its answer being ready, every bid request that reached the handler (shed ones included).", latencyBuckets, "")
	misses := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rtbd_bidder_deadline_misses_total",
		Help: "Bid requests answered with a no-bid because their deadline passed (or tmax left no time), by where."}, []string{"stage"})
	catErrs := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rtbd_bidder_catalog_errors_total",
		Help: "Product store errors by kind."}, []string{"kind"})
	userErrs := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rtbd_bidder_user_errors_total",
		Help: "User store errors by kind (unknown users are not errors)."}, []string{"kind"})
	shedVec := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rtbd_bidder_shed_total",
		Help: "Bid requests shed before decoding, by reason: in_flight (bidder.max_in_flight were in flight), queue (admission control: a queue stands, and this request waited longer than it may, or is among the young ones shed to drain it)."}, []string{"reason"})
	shed, shedQueue := shedVec.WithLabelValues("in_flight"), shedVec.WithLabelValues("queue")
	queue := fasthist.NewVec("rtbd_bidder_queue_seconds",
		"Time a bid request waited before its handler ran: from the kernel's receive time of its bytes (Linux) to the handler's start.", latencyBuckets, "")
	if inFlight == nil {
		inFlight = func() float64 { return 0 }
	}
	// Read from the Bidder's own counter when scraped: a Gauge would add
	// two atomic float updates per request to the one it already makes.
	inFlightG := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "rtbd_bidder_in_flight",
		Help: "Bid requests being processed."}, inFlight)
	events := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rtbd_bidder_events_total",
		Help: "Tracking pixel (/event) requests by result."}, []string{"result"})
	clicks := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rtbd_bidder_clicks_total",
		Help: "Click redirects (/click) by result."}, []string{"result"})
	notices := prometheus.NewCounter(prometheus.CounterOpts{Name: "rtbd_bidder_notices_unhandled_total",
		Help: "Win and billing notices answered 204 without a notice handler (the spend package handles them)."})

	supplyRef := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rtbd_bidder_supply_refusals_total",
		Help: "Campaigns refused on an imp by their supply setting, by reason: no_chain, incomplete, too_many_hops, bad_node, no_publisher_domain, no_ads_txt, not_in_ads_txt, ads_txt_relationship, no_sellers_json, not_in_sellers_json, seller_type, wrong_exchange."}, []string{"reason"})
	for r := supply.Reason(1); r < supply.NumReasons; r++ {
		m.supplyRefusals[r] = supplyRef.WithLabelValues(r.String())
	}
	m.supplyRefusals[supply.OK] = supplyRef.WithLabelValues("other") // never counted: Refuse's OK is no refusal
	dsaRef := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rtbd_bidder_dsa_refusals_total",
		Help: "Campaigns refused on an imp for the request's regs.ext.dsa, by reason: no_campaign_dsa (dsarequired 2 or 3, the campaign has no dsa), cannot_render (pubrender 0 and the format cannot show the notice), too_long (a string over 100 bytes)."}, []string{"reason"})
	for r := dsa.Reason(1); r < dsa.NumReasons; r++ {
		m.dsaRefusals[r] = dsaRef.WithLabelValues(r.String())
	}
	m.dsaRefusals[dsa.OK] = dsaRef.WithLabelValues("other")

	m.shed, m.total, m.notices = shed, total.At(0), notices
	m.shedQueue, m.queue = shedQueue, queue.At(0)
	for _, r := range rtb.NoBidReasons() {
		m.nobids[r] = nobids.WithLabelValues(r.String())
	}
	m.nobidOther = nobids.WithLabelValues("other")
	for i, n := range rejNames {
		m.rejected[i] = rejected.WithLabelValues(n)
	}
	for i := range stageNames {
		m.stage[i] = stage.At(i)
	}
	for i, n := range missNames {
		m.misses[i] = misses.WithLabelValues(n)
	}
	for i, n := range errKindNames {
		m.catErrs[i] = catErrs.WithLabelValues(n)
		m.userErrs[i] = userErrs.WithLabelValues(n)
	}
	for i, n := range resNames {
		if i != resFallback {
			m.events[i] = events.WithLabelValues(n)
		}
		m.clicks[i] = clicks.WithLabelValues(n)
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{requests, bids, nobids, rejected, stage, total, misses, catErrs, userErrs, shedVec, inFlightG, events, clicks, notices, queue, noWrite, supplyRef, dsaRef} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("bidder: metrics: %w", err)
			}
		}
	}
	return m, nil
}

func (m *metrics) nobid(r rtb.NoBidReason) {
	if c, ok := m.nobids[r]; ok {
		c.Inc()
		return
	}
	m.nobidOther.Inc()
}

// registerCellMetrics registers rtbd_bidder_banner_cells_total: the
// banner cells rendered, by whether the cell cache had them (always 0
// without one).
func registerCellMetrics(reg prometheus.Registerer, cells *creative.CellCache) error {
	if reg == nil {
		return nil
	}
	for _, r := range []struct {
		result string
		get    func() float64
	}{
		{"hit", func() float64 { h, _ := cells.Stats(); return float64(h) }},
		{"miss", func() float64 { _, m := cells.Stats(); return float64(m) }},
	} {
		c := prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "rtbd_bidder_banner_cells_total",
			Help:        "Product cells of banners rendered, by whether the cell cache (with the local index, or the remote near cache) held them: hit or miss. Both stay 0 without the cache.",
			ConstLabels: prometheus.Labels{"result": r.result}}, r.get)
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
