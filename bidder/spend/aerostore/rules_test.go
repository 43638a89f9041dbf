package aerostore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	as "github.com/aerospike/aerospike-client-go/v7"

	"github.com/rtbd/rtbd/bidder/internal/aero"
	"github.com/rtbd/rtbd/bidder/spend"
	"github.com/rtbd/rtbd/bidder/spend/aerostore"
	"github.com/rtbd/rtbd/internal/aerospiketest"
)

// writeExact runs addExact on s while hook fails records, then recovers:
// a flush retried after a partial failure must not add the records that
// were already applied.
func writeExact(t *testing.T, srv *aerospiketest.Server, s spend.Store, hook func(aerospiketest.RecordCall) int) {
	t.Helper()
	srv.SetRecordHook(hook)
	addExact(t, s, spend.Options{FlushInterval: 5 * time.Millisecond, RetryMin: time.Millisecond, RetryMax: 5 * time.Millisecond, FlushTimeout: time.Second}, 2*time.Millisecond, nil)
	if n := srv.Requests()[aerospiketest.KindRecordFault]; n == 0 {
		t.Fatal("the hook failed no record: the test tests nothing")
	}
}

// TestSpendBatchPartialFailure: the second record of every batch fails
// with 22 several times, then the server recovers; totals are exact.
func TestSpendBatchPartialFailure(t *testing.T) {
	srv, c := testServer(t)
	s := spendStore(t, c, runOptions(aerospiketest.DefaultNamespace), srv)
	writeExact(t, srv, s, aerospiketest.FailRecords(aerospiketest.ResultForbidden, 6, func(rc aerospiketest.RecordCall) bool { return rc.Batch && rc.Index == 1 }))
}

// TestSpendKeyBusy: a hot lifetime-total record answers KEY_BUSY several
// times; the store retries it and the totals are exact.
func TestSpendKeyBusy(t *testing.T) {
	srv, c := testServer(t)
	o := runOptions(aerospiketest.DefaultNamespace)
	s := spendStore(t, c, o, srv)
	hot, _ := as.NewKey(aerospiketest.DefaultNamespace, aero.DefaultSpendSet, o.KeyPrefix+"c0|t")
	var d [20]byte
	copy(d[:], hot.Digest())
	writeExact(t, srv, s, aerospiketest.FailRecords(aerospiketest.ResultKeyBusy, 10, func(rc aerospiketest.RecordCall) bool { return rc.Digest == d }))

	// One flush alone survives a short KEY_BUSY burst: retried inside Flush.
	srv.SetRecordHook(aerospiketest.FailRecords(aerospiketest.ResultKeyBusy, 2, func(rc aerospiketest.RecordCall) bool { return rc.Digest == d }))
	out, err := s.Flush(context.Background(), []spend.Delta{{ID: "kb:1", Campaign: "c0", Day: "2024-05-01", Micros: 1, Imps: 1}, {ID: "kb:2", Campaign: "c1", Day: "2024-05-01", Micros: 1, Imps: 1}})
	if err != nil {
		t.Fatalf("Flush with a short KEY_BUSY burst: %v", err)
	}
	if out[0].TotalMicros != 301 || out[1].TotalMicros != 301 {
		t.Errorf("totals %+v, want 301 micros each", out)
	}
}

// TestCheckNsupPeriod: Check fails naming nsup-period and the namespace
// under nsup-period 0, passes otherwise, and leaves no record behind.
func TestCheckNsupPeriod(t *testing.T) {
	srv, err := aerospiketest.Start(aerospiketest.Options{NsupPeriodZero: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	c, err := aero.Connect(srv.Addr(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	err = aerostore.New(c, aero.Options{Namespace: "test"}).Check(context.Background())
	if !errors.Is(err, aero.ErrTTLRefused) || !strings.Contains(err.Error(), "nsup-period") || !strings.Contains(err.Error(), `"test"`) {
		t.Errorf("Check under nsup-period 0 = %v, want ErrTTLRefused naming nsup-period and the namespace", err)
	}
	// A flush under nsup-period 0 says why too.
	_, err = aerostore.New(c, aero.Options{Namespace: "test"}).Flush(context.Background(), []spend.Delta{{ID: "n:1", Campaign: "c", Day: "2024-05-01", Micros: 1, Imps: 1}, {ID: "n:2", Campaign: "e", Day: "2024-05-01", Micros: 1, Imps: 1}})
	if !errors.Is(err, aero.ErrTTLRefused) {
		t.Errorf("Flush under nsup-period 0 = %v, want ErrTTLRefused", err)
	}

	ok, c2 := testServer(t)
	if err := aerostore.New(c2, aero.Options{Namespace: "test"}).Check(context.Background()); err != nil {
		t.Errorf("Check: %v", err)
	}
	if n := ok.Records(); n != 0 {
		t.Errorf("Check left %d records", n)
	}
}
