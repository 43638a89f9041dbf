package bench

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"
)

// rssRun adds to rss the n samples of process name running as pid from
// at, RSS growing from base MiB by grow MiB in all.
func rssRun(rss []SoakRSS, name string, pid int, at float64, n int, base, grow float64) []SoakRSS {
	for i := range n {
		mib := base + grow*float64(i)/float64(n-1)
		rss = addRSS(rss, name, pid, SoakRSSSample{AtSec: at + float64(i), RSSBytes: int64(mib * (1 << 20))})
	}
	return rss
}

func TestSoakJudgeRSS(t *testing.T) {
	s := &SoakSummary{}
	s.RSS = rssRun(s.RSS, "bidder1", 10, 0, 200, 60, 3)   // flat
	s.RSS = rssRun(s.RSS, "node1", 20, 0, 200, 50, 25)    // +50%
	s.RSS = rssRun(s.RSS, "bidder1", 11, 200, 30, 50, 40) // restarted: too short
	s.judgeRSS(20 * time.Second)
	if len(s.RSS) != 3 || s.RSS[2].Name != "bidder1" || len(s.RSS[0].Samples) != 200 {
		t.Fatalf("incarnations %+v, want bidder1, node1, bidder1 again", s.RSS)
	}
	b1, n1, b1b := s.RSS[0], s.RSS[1], s.RSS[2]
	if !b1.Judged || !b1.Flat || b1.GrowthPct > 10 {
		t.Errorf("bidder1 pid 10 growing 3 MiB of 60: %+v, want judged flat", b1)
	}
	if b1b.Judged {
		t.Errorf("bidder1 pid 11 with 10 s after its warm-up: %+v, want not judged", b1b)
	}
	if !n1.Judged || n1.Flat || n1.GrowthPct < 30 {
		t.Errorf("node1 growing 25 MiB of 50: %+v, want judged not flat", n1)
	}
}

func TestSoakVerdict(t *testing.T) {
	o := SoakOptions{Faults: []string{FaultNodeKill}}.withDefaults()
	s := &SoakSummary{
		Faults: []SoakFault{
			{Kind: FaultNodeKill, Label: "node1 kill -9", StartSec: 10, EndSec: 13},
			{Kind: FaultNodeKill, Label: "node2 kill -9", StartSec: 40, EndSec: 43, Error: "restart: boom"},
		},
		Notices:     SoakNotices{Accepted: 100, Distinct: 100, StoreImps: 101, StoreKeys: 100, StoreMicros: 101 * soakChargeMicros},
		BidRequests: 100_000, BidsLate: 5,
		Anomalies: []SoakAnomalyCount{
			{Kind: "bid", Outcome: "late", Cause: "node1 kill -9", Count: 4},
			{Kind: "bid", Outcome: "late", Cause: "unattributed", Count: 1},
		},
	}
	s.Notices.account()
	s.verdict(o)
	got := map[string]SoakCheck{}
	for _, c := range s.Checks {
		got[c.Name] = c
	}
	for name, pass := range map[string]bool{
		"faults":                       false, // the second node kill failed
		"no notice lost":               true,  // every key there
		"no notice double-charged":     false, // one impression more than keys
		"bids past tmax <= 0.01%":      true,  // 5 of 100,000
		"every late answer attributed": false,
		"every error attributed":       true,
		"RSS flat within 10%":          false, // nothing judged
	} {
		c, ok := got[name]
		if !ok {
			t.Errorf("no check %q in %+v", name, s.Checks)
			continue
		}
		if c.Pass != pass {
			t.Errorf("check %q: pass %v, want %v (%s)", name, c.Pass, pass, c.Detail)
		}
	}
}

func TestSoakReportRenders(t *testing.T) {
	r := sampleReport()
	r.Soak = &SoakSummary{
		Checks:  []SoakCheck{{Name: "no notice lost", Pass: true, Detail: "7 bills accepted"}},
		Faults:  []SoakFault{{Kind: FaultRedisKill, Label: "redis <kill> -9", StartSec: 2, EndSec: 5, Detail: "restarted"}},
		Notices: SoakNotices{Accepted: 7, Distinct: 7, BillOutcomes: map[string]int64{"accepted": 7}},
		RSS:     rssRun(nil, "bidder1", 1, 0, 10, 50, 1),
	}
	var txt, htm, js bytes.Buffer
	if err := WriteText(&txt, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(&htm, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Fault-injection soak", "PASS  no notice lost", "redis <kill> -9", "accepted 7"} {
		if !strings.Contains(txt.String(), want) {
			t.Errorf("text report lacks %q", want)
		}
	}
	for _, want := range []string{"Fault-injection soak", "RSS of every process", "redis &lt;kill&gt; -9"} {
		if !strings.Contains(htm.String(), want) {
			t.Errorf("html report lacks %q", want)
		}
	}
	back, err := ReadReport(&js)
	if err != nil {
		t.Fatal(err)
	}
	if back.Soak == nil || back.Soak.Notices.Accepted != 7 || len(back.Soak.RSS[0].Samples) != 10 {
		t.Errorf("JSON round trip lost the soak: %+v", back.Soak)
	}
}

func TestSoakNoticesAccount(t *testing.T) {
	for _, c := range []struct {
		name         string
		n            SoakNotices
		lost, double int64
	}{
		{"exact", SoakNotices{Distinct: 50, StoreImps: 50, StoreKeys: 50, StoreMicros: 50 * soakChargeMicros}, 0, 0},
		{"totals short of the bills", SoakNotices{Distinct: 50, StoreImps: 48, StoreKeys: 50, StoreMicros: 48 * soakChargeMicros}, 2, 0},
		{"a key missing", SoakNotices{Distinct: 50, Lost: 1, StoreImps: 50, StoreKeys: 50, StoreMicros: 50 * soakChargeMicros}, 1, 0},
		{"charged beyond the keys", SoakNotices{Distinct: 50, StoreImps: 52, StoreKeys: 50, StoreMicros: 52 * soakChargeMicros}, 0, 2},
		{"a given-up bill charged once", SoakNotices{Distinct: 50, GaveUp: 1, StoreImps: 51, StoreKeys: 51, StoreMicros: 51 * soakChargeMicros}, 0, 0},
	} {
		n := c.n
		n.account()
		if n.Lost != c.lost || n.DoubleCharged != c.double || n.MicrosMismatch != 0 {
			t.Errorf("%s: lost %d, double %d, micros mismatch %d; want %d, %d, 0", c.name, n.Lost, n.DoubleCharged, n.MicrosMismatch, c.lost, c.double)
		}
	}
}

func TestSoakSchedule(t *testing.T) {
	f := &soakFleet{o: SoakOptions{Duration: 10 * time.Minute}.withDefaults()}
	sched := f.schedule()
	count := map[string]int{}
	targets := map[string]map[int]bool{}
	last := time.Duration(0)
	for _, fl := range sched {
		count[fl.kind]++
		if targets[fl.kind] == nil {
			targets[fl.kind] = map[int]bool{}
		}
		targets[fl.kind][fl.target] = true
		if fl.at <= last || fl.at >= f.o.Duration {
			t.Errorf("fault %s at %v: want after %v and within %v", fl.kind, fl.at, last, f.o.Duration)
		}
		last = fl.at
	}
	for _, k := range SoakFaultKinds {
		if want := 2; count[k] != want {
			t.Errorf("%s scheduled %d times, want %d", k, count[k], want)
		}
	}
	for _, k := range []string{FaultNodeKill, FaultBidderKill, FaultNodeCut} {
		if len(targets[k]) != 2 {
			t.Errorf("%s hits %v, want both nodes or bidders once each", k, targets[k])
		}
	}
}

func TestSoakNoticePath(t *testing.T) {
	body := []byte(`{"seatbid":[{"bid":[{"nurl":"http://127.0.0.1:1/win?t=AbC-_9\u0026p=${AUCTION_PRICE}","burl":"http://127.0.0.1:1/bill?t=XyZ\u0026p=${AUCTION_PRICE}","adm":"<a href=\"http://127.0.0.1:1/click?t=Tok-_1.42\">"}]}]}`)
	nurl, ok := noticePath(body, nurlKey, "/win?")
	if !ok || string(nurl) != "/win?t=AbC-_9&p="+noticePrice {
		t.Errorf("nurl %q %v", nurl, ok)
	}
	burl, ok := noticePath(body, burlKey, "/bill?")
	if !ok || string(burl) != "/bill?t=XyZ&p="+noticePrice {
		t.Errorf("burl %q %v", burl, ok)
	}
	if m := clickLink.Find(body); string(m) != "/click?t=Tok-_1.42" {
		t.Errorf("click link %q", m)
	}
	if _, ok := noticePath([]byte(`{"id":"x"}`), burlKey, "/bill?"); ok {
		t.Error("a no-bid body gave a burl")
	}
}

// TestSoakAttribute puts errors under the fault whose outage holds them,
// else the latest whose grace does, on a schedule whose graces overlap the
// next fault.
func TestSoakAttribute(t *testing.T) {
	f := &soakFleet{o: SoakOptions{Duration: 60 * time.Second, FaultGrace: 5 * time.Second}.withDefaults()}
	at := func(sec float64, kind string) SoakAnomaly {
		return SoakAnomaly{AtSec: sec, Kind: kind, Outcome: "status_5xx"}
	}
	f.anomalies = []SoakAnomaly{
		at(11, "bid"),     // node1's outage
		at(16, "event"),   // redis's outage, in node1's grace
		at(16.5, "event"), // redis's outage, in node1's grace
		at(18.4, "click"), // both graces: redis's is the latest
		at(14, "click"),   // node1's grace only
		at(30, "bid"),     // no fault
		at(-1, "bid"),     // warm-up: not counted
	}
	sum := &SoakSummary{Faults: []SoakFault{
		{Kind: FaultNodeKill, Label: "node1 kill -9", StartSec: 10, EndSec: 13.5},
		{Kind: FaultRedisKill, Label: "redis-server kill -9", StartSec: 15, EndSec: 18.3},
	}}
	f.sum = sum
	f.attribute()
	want := []SoakAnomalyCount{
		{Kind: "bid", Outcome: "status_5xx", Cause: "node1 kill -9", Count: 1},
		{Kind: "bid", Outcome: "status_5xx", Cause: "unattributed", Count: 1},
		{Kind: "click", Outcome: "status_5xx", Cause: "node1 kill -9", Count: 1},
		{Kind: "click", Outcome: "status_5xx", Cause: "redis-server kill -9", Count: 1},
		{Kind: "event", Outcome: "status_5xx", Cause: "redis-server kill -9", Count: 2},
	}
	if !slices.Equal(sum.Anomalies, want) {
		t.Errorf("anomalies\n%+v\nwant\n%+v", sum.Anomalies, want)
	}
	if len(sum.Unattributed) != 1 || sum.Unattributed[0].AtSec != 30 {
		t.Errorf("unattributed %+v, want the one at 30 s", sum.Unattributed)
	}
}

func TestSoakPauseCutShort(t *testing.T) {
	if got := pause(context.Background(), time.Millisecond); got != "1ms" {
		t.Errorf("a full pause says %q, want 1ms", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if got := pause(ctx, 3*time.Second); !strings.Contains(got, "cut short by the end of the load; 3s planned") {
		t.Errorf("a pause cut short says %q", got)
	}
}
