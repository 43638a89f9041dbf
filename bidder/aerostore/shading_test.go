package aerostore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rtbd/rtbd/bidder/aerostore"
	"github.com/rtbd/rtbd/bidder/aerostore/aerotest"
	"github.com/rtbd/rtbd/bidder/internal/spendtest"
	"github.com/rtbd/rtbd/bidder/internal/testclock"
	"github.com/rtbd/rtbd/bidder/shading"
)

// TestShadingSuite runs the shading counts' suite against the aerotest
// server, on a clock the suite moves (records expire at their TTL by it).
func TestShadingSuite(t *testing.T) {
	clk := testclock.New(time.Now())
	spendtest.RunShadingSuite(t, func(t *testing.T) shading.Store {
		srv, c := testServerWith(t, aerotest.Options{Now: clk.Now})
		return spendStore(t, c, runOptions(aerotest.DefaultNamespace), srv)
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

	srv, cl := testServerWith(t, aerotest.Options{NsupPeriodZero: true})
	s := spendStore(t, cl, runOptions(aerotest.DefaultNamespace), srv)
	if err := s.AddShading(ctx, slot, []shading.SlotCounts{c}, []shading.SegmentID{c.Segment}, exp); !errors.Is(err, aerostore.ErrTTLRefused) {
		t.Errorf("nsup-period 0: %v, want ErrTTLRefused", err)
	}

	srv2, cl2 := testServer(t)
	s2 := spendStore(t, cl2, runOptions(aerotest.DefaultNamespace), srv2)
	srv2.SetRecordHook(aerotest.FailRecords(14 /* KEY_BUSY */, 2, func(r aerotest.RecordCall) bool { return r.Write }))
	if err := s2.AddShading(ctx, slot, []shading.SlotCounts{c}, []shading.SegmentID{c.Segment}, exp); err != nil {
		t.Fatalf("KEY_BUSY twice: %v, want the add retried", err)
	}
	got, err := s2.ReadShading(ctx, []shading.SegmentID{c.Segment}, []int64{slot})
	if err != nil || len(got) != 1 || got[0].N != c.N {
		t.Errorf("after KEY_BUSY retries read %+v, %v; want the counts once", got, err)
	}
}
