package aerostore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aerospike/aerospike-client-go/v7/types"

	"github.com/rtbd/rtbd/bidder/internal/aero"
	"github.com/rtbd/rtbd/bidder/spend"
	"github.com/rtbd/rtbd/bidder/spend/spendtest"
	"github.com/rtbd/rtbd/internal/aerospiketest"
)

const coDay = spendtest.ChargeDay

var coAt = spendtest.ChargeAt

// TestChargeOnceBatchFailures (acceptance): one record of every batch
// fails (22 FAIL_FORBIDDEN, then 14 KEY_BUSY beyond the in-flush retries)
// many times, then the server recovers: every notice is charged exactly
// once, day, total and frequency.
func TestChargeOnceBatchFailures(t *testing.T) {
	for _, code := range []int{aerospiketest.ResultForbidden, aerospiketest.ResultKeyBusy} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			srv, c := testServer(t)
			s := spendStore(t, c, runOptions(aerospiketest.DefaultNamespace), srv)
			srv.SetRecordHook(aerospiketest.FailRecords(code, 40, func(rc aerospiketest.RecordCall) bool { return rc.Batch && rc.Index == 1 }))
			want, _ := spendtest.ChargeNotices(t, s, 600)
			srv.SetRecordHook(nil) // recovered, for the final read
			spendtest.CheckCharged(t, fmt.Sprintf("one record of every batch failing with %d", code), s, want, srv.Requests()[aerospiketest.KindRecordFault])
		})
	}
}

// TestChargeOnceUnknownOutcome: the server applies a batch and the reply
// is lost (the connection drops), several times: the retried flushes
// charge nothing twice.
func TestChargeOnceUnknownOutcome(t *testing.T) {
	srv, c := testServer(t)
	s := spendStore(t, c, runOptions(aerospiketest.DefaultNamespace), srv)
	var mu sync.Mutex
	drops, n := 0, 0
	srv.SetFaultHook(func(kind string) aerospiketest.Fault {
		if kind != aerospiketest.KindBatch {
			return aerospiketest.Fault{}
		}
		mu.Lock()
		defer mu.Unlock()
		n++
		if n%3 == 0 && drops < 30 {
			drops++
			return aerospiketest.Fault{DropReply: true}
		}
		return aerospiketest.Fault{}
	})
	want, _ := spendtest.ChargeNotices(t, s, 600)
	mu.Lock()
	d := drops
	mu.Unlock()
	spendtest.CheckCharged(t, "replies of applied batches lost", s, want, d)
}

// TestChargeOnceRestart plays a crash between the notice records and the
// counters, and the restarted bidder's journal replay after it has already
// flushed new notices of the same campaign: the replay charges exactly
// what the crash left out, once, and a second replay nothing.
func TestChargeOnceRestart(t *testing.T) {
	srv, c := testServer(t)
	s := spendStore(t, c, runOptions(aerospiketest.DefaultNamespace), srv)
	ctx := context.Background()
	seq := time.Now().UnixNano()
	next := func() int64 { seq += 1000; return seq }
	flush := func(ns ...spend.Notice) (spend.Total, error) {
		out, err := s.Flush(ctx, []spend.Delta{spendtest.NoticeDelta("c", coDay, "bidder-1", next(), 0, ns...)})
		if err != nil {
			return spend.Total{}, err
		}
		return out[0], nil
	}
	expect := func(what string, got spend.Total, micros, imps int64) {
		t.Helper()
		if got.DayMicros != micros || got.TotalMicros != micros || got.DayImps != imps || got.TotalImps != imps {
			t.Errorf("%s: %+v, want %d micros, %d imps per day and in total", what, got, micros, imps)
		}
	}
	n1, n2, n3 := spendtest.Notice("u1", 10, coAt), spendtest.Notice("u2", 20, coAt), spendtest.Notice("u1", 40, coAt)
	// The crash: every counter write fails after the notices were created.
	srv.SetRecordHook(func(rc aerospiketest.RecordCall) int {
		if rc.Write && rc.Set != aero.DefaultNoticeSet {
			return int(types.TIMEOUT)
		}
		return 0
	})
	if _, err := flush(n1, n2); err == nil {
		t.Fatal("flush with failing counters succeeded")
	}
	srv.SetRecordHook(nil)
	// Restarted: new notices first, then the journal's replay.
	got, err := flush(n3)
	if err != nil {
		t.Fatal(err)
	}
	expect("new notice after the restart", got, 40, 1)
	got, err = flush(n1, n2)
	if err != nil {
		t.Fatal(err)
	}
	expect("journal replay", got, 70, 3)
	if got.Duplicates != 0 || got.Freq[0] != 2 || got.Freq[1] != 1 {
		t.Errorf("journal replay: duplicates %d, freq %v, want 0, [2 1]", got.Duplicates, got.Freq)
	}
	got, err = flush(n1, n2)
	if err != nil {
		t.Fatal(err)
	}
	expect("second replay", got, 70, 3)
	if got.Duplicates != 2 {
		t.Errorf("second replay: duplicates %d, want 2", got.Duplicates)
	}

	// A crash after the total was updated but not the day: the replay adds
	// to the day only.
	n4 := spendtest.Notice("", 100, coAt)
	srv.SetRecordHook(aerospiketest.FailRecords(int(types.TIMEOUT), 1, func(rc aerospiketest.RecordCall) bool {
		return rc.Write && rc.Set == aero.DefaultSpendSet && rc.Index == 0
	}))
	if _, err := flush(n4); err == nil {
		t.Fatal("flush with a failing day record succeeded")
	}
	srv.SetRecordHook(nil)
	r, err := s.Read(ctx, []string{"c"}, coDay)
	if err != nil {
		t.Fatal(err)
	}
	if r[0].DayMicros != 70 || r[0].TotalMicros != 170 {
		t.Fatalf("after the partial flush: %+v, want day 70, total 170", r[0])
	}
	if _, err := flush(spendtest.Notice("", 1000, coAt)); err != nil { // a live notice first again
		t.Fatal(err)
	}
	got, err = flush(n4)
	if err != nil {
		t.Fatal(err)
	}
	expect("replay after a partial flush", got, 1170, 5)
}

// TestChargeOnceOtherBidder: a notice another bidder created is a
// duplicate here, whatever this bidder's guard says.
func TestChargeOnceOtherBidder(t *testing.T) {
	srv, c := testServer(t)
	s := spendStore(t, c, runOptions(aerospiketest.DefaultNamespace), srv)
	n := spendtest.Notice("u", 5, coAt)
	seq := time.Now().UnixNano()
	for i, origin := range []string{"a", "b", "a", "b"} {
		out, err := s.Flush(context.Background(), []spend.Delta{spendtest.NoticeDelta("c", coDay, origin, seq+int64(i), 0, n)})
		if err != nil {
			t.Fatal(err)
		}
		if out[0].TotalMicros != 5 || out[0].Freq[0] != 1 || (i > 0) != (out[0].Duplicates == 1) {
			t.Errorf("flush %d by %s: %+v, want 5 micros, freq 1, a duplicate after the first", i, origin, out[0])
		}
	}
}
