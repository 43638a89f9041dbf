package aerostore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rtbd/rtbd/bidder/internal/aero"
	"github.com/rtbd/rtbd/bidder/shading"
	"github.com/rtbd/rtbd/bidder/spend/spendtest"
	"github.com/rtbd/rtbd/internal/aerospiketest"
	"github.com/rtbd/rtbd/internal/clocktest"
)

// TestShadingSuite runs the shading counts' suite against the aerospiketest
// server, on a clock the suite moves (records expire at their TTL by it).
func TestShadingSuite(t *testing.T) {
	clk := clocktest.New(time.Now())
	spendtest.RunShadingSuite(t, func(t *testing.T) shading.Store {
		srv, c := testServerWith(t, aerospiketest.Options{Now: clk.Now})
		return spendStore(t, c, runOptions(aerospiketest.DefaultNamespace), srv)
	}, spendtest.ShadingCaps{Advance: clk.Add})
}

func TestShadingSuiteCluster(t *testing.T) {
	c, ns := cluster(t)
	spendtest.RunShadingSuite(t, func(t *testing.T) shading.Store {
		return spendStore(t, c, runOptions(ns), nil)
	}, spendtest.ShadingCaps{})
}

// TestShadingRules: a namespace with nsup-period 0 (the server's default)
// refuses the counts' TTL writes, and the add says why; a key that is
// busy (a hot slot index) is retried.
func TestShadingRules(t *testing.T) {
	slot := time.Now().Truncate(time.Minute).Unix()
	c := shading.SlotCounts{Segment: 0x04000401, Slot: slot}
	c.N[shading.KindBids][3] = 2
	exp := time.Now().Add(time.Hour)
	ctx := context.Background()

	srv, cl := testServerWith(t, aerospiketest.Options{NsupPeriodZero: true})
	s := spendStore(t, cl, runOptions(aerospiketest.DefaultNamespace), srv)
	if err := s.AddShading(ctx, slot, []shading.SlotCounts{c}, []shading.SegmentID{c.Segment}, exp); !errors.Is(err, aero.ErrTTLRefused) {
		t.Errorf("nsup-period 0: %v, want ErrTTLRefused", err)
	}

	srv2, cl2 := testServer(t)
	s2 := spendStore(t, cl2, runOptions(aerospiketest.DefaultNamespace), srv2)
	srv2.SetRecordHook(aerospiketest.FailRecords(14 /* KEY_BUSY */, 2, func(r aerospiketest.RecordCall) bool { return r.Write }))
	if err := s2.AddShading(ctx, slot, []shading.SlotCounts{c}, []shading.SegmentID{c.Segment}, exp); err != nil {
		t.Fatalf("KEY_BUSY twice: %v, want the add retried", err)
	}
	got, err := s2.ReadShading(ctx, []shading.SegmentID{c.Segment}, []int64{slot})
	if err != nil || len(got) != 1 || got[0].N != c.N {
		t.Errorf("after KEY_BUSY retries read %+v, %v; want the counts once", got, err)
	}
}
