package aerostore_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	as "github.com/aerospike/aerospike-client-go/v7"
	"github.com/aerospike/aerospike-client-go/v7/types"

	"github.com/rtbd/rtbd/bidder/internal/aero"
	"github.com/rtbd/rtbd/bidder/internal/aero/aerostoretest"
	"github.com/rtbd/rtbd/bidder/spend"
	"github.com/rtbd/rtbd/bidder/spend/aerostore"
	"github.com/rtbd/rtbd/bidder/spend/spendtest"
	"github.com/rtbd/rtbd/internal/aerospiketest"
)

// What the Aerospike stores' tests share.
var (
	testServer      = aerostoretest.Server
	testServerWith  = aerostoretest.ServerWith
	cluster         = aerostoretest.Cluster
	runOptions      = aerostoretest.RunOptions
	deleteAtCleanup = aerostoretest.DeleteAtCleanup
)

func TestMain(m *testing.M) { aerostoretest.Main(m, "TestSpendSuiteCluster") }

func TestSpendSuite(t *testing.T) {
	clients := map[spend.Store]*as.Client{}
	opts := map[spend.Store]aero.Options{}
	newStore := func(t *testing.T) spend.Store {
		srv, c := testServer(t)
		o := runOptions(aerospiketest.DefaultNamespace)
		s := spendStore(t, c, o, srv)
		clients[s], opts[s] = c, o
		return s
	}
	peer := func(t *testing.T, s spend.Store) spend.Store {
		return spendStore(t, clients[s], opts[s], nil)
	}
	spendtest.RunStoreSuite(t, newStore, spendtest.Capabilities{Peer: peer})
}

func TestSpendSuiteCluster(t *testing.T) {
	c, ns := cluster(t)
	stores := map[spend.Store]aero.Options{}
	newStore := func(t *testing.T) spend.Store {
		o := runOptions(ns)
		s := spendStore(t, c, o, nil)
		stores[s] = o
		return s
	}
	peer := func(t *testing.T, s spend.Store) spend.Store { return spendStore(t, c, stores[s], nil) }
	spendtest.RunStoreSuite(t, newStore, spendtest.Capabilities{Peer: peer})
}

// spendStore returns a spend store on c whose records are deleted when t
// ends; with srv, it then checks that the server holds no record.
func spendStore(t *testing.T, c *as.Client, o aero.Options, srv *aerospiketest.Server) *aerostore.Store {
	t.Helper()
	s := aerostore.New(c, o)
	aerostore.SetKeyHook(s, deleteAtCleanup(t, c, srv))
	return s
}

// TestSpendRecords checks the records and TTLs the package comment promises.
func TestSpendRecords(t *testing.T) {
	_, c := testServer(t)
	s := aerostore.New(c, aero.Options{Namespace: "test", DayTTL: time.Hour})
	exp := time.Now().Add(10 * time.Minute)
	if _, err := s.Flush(context.Background(), []spend.Delta{{ID: "w:1", Campaign: "c", Day: "2024-05-01", Micros: 9, Imps: 1,
		Freq: []spend.FreqDelta{{User: "u", Window: 60, Count: 2, Expires: exp}}}}); err != nil {
		t.Fatal(err)
	}
	get := func(set, k string) *as.Record {
		key, _ := as.NewKey("test", set, k)
		r, err := c.Get(nil, key)
		if err != nil {
			t.Fatalf("get %s/%s: %v", set, k, err)
		}
		return r
	}
	if r := get("spend", "c|d|2024-05-01"); r.Bins["m"] != 9 || r.Bins["i"] != 1 || r.Expiration == 0 || r.Expiration > 3600 {
		t.Errorf("day record %v ttl %d", r.Bins, r.Expiration)
	}
	if r := get("spend", "c|t"); r.Bins["m"] != 9 || r.Expiration != as.TTLDontExpire {
		t.Errorf("total record %v ttl %d", r.Bins, r.Expiration)
	}
	if r := get("freq", "c|60|u"); r.Bins["c"] != 2 || r.Expiration < 590 || r.Expiration > 601 {
		t.Errorf("freq record %v ttl %d", r.Bins, r.Expiration)
	}
}

// TestSpendFaults: an error answer, a dropped connection and a slow server
// fail Flush (never a panic, never a wrong total); the Writer keeps the
// deltas and, once the server answers again, the store holds every Add.
func TestSpendFaults(t *testing.T) {
	srv, c := testServer(t)
	s := aerostore.New(c, aero.Options{Namespace: "test"})
	var mode atomic.Int32 // 0 ok, 1 error code, 2 drop, 3 slow
	srv.SetFaultHook(func(kind string) aerospiketest.Fault {
		if kind != aerospiketest.KindBatch && kind != aerospiketest.KindOperate {
			return aerospiketest.Fault{}
		}
		switch mode.Load() {
		case 1:
			return aerospiketest.Fault{ResultCode: int(types.TIMEOUT)}
		case 2:
			return aerospiketest.Fault{CloseConn: true}
		case 3:
			return aerospiketest.Fault{Delay: 500 * time.Millisecond, ResultCode: int(types.TIMEOUT)}
		}
		return aerospiketest.Fault{}
	})
	d := []spend.Delta{{ID: "w:1", Campaign: "c", Day: "2024-05-01", Micros: 1, Imps: 1}, {ID: "w:2", Campaign: "e", Day: "2024-05-01", Micros: 1, Imps: 1}}
	for m := int32(1); m <= 3; m++ {
		mode.Store(m)
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		_, err := s.Flush(ctx, d)
		cancel()
		if err == nil {
			t.Errorf("mode %d: Flush succeeded", m)
		}
	}
	mode.Store(1)
	// Error answers are definite (nothing applied), so no double count here.
	addExact(t, s, spend.Options{FlushInterval: 10 * time.Millisecond, RetryMin: 5 * time.Millisecond, RetryMax: 20 * time.Millisecond, FlushTimeout: 200 * time.Millisecond}, 0, func() {
		time.Sleep(50 * time.Millisecond) // some failed attempts
		mode.Store(0)
	})
}

// addExact adds 3 micros 500 times over five campaigns through a Writer
// with o on s, pausing for pause every 50 adds (several flushes), calls then
// (if not nil), closes the Writer and checks that the store holds
// every Add exactly once, per day and in total.
func addExact(t *testing.T, s spend.Store, o spend.Options, pause time.Duration, then func()) {
	t.Helper()
	w, err := spend.NewWriter(s, o)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2024, 5, 1, 1, 0, 0, 0, time.UTC)
	for i := range 500 {
		if err := w.Add(fmt.Sprintf("c%d", i%5), "", 3, at); err != nil {
			t.Fatal(err)
		}
		if pause > 0 && i%50 == 0 {
			time.Sleep(pause)
		}
	}
	if then != nil {
		then()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	r, err := s.Read(ctx, []string{"c0", "c1", "c2", "c3", "c4"}, "2024-05-01")
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range r {
		if x.DayMicros != 300 || x.DayImps != 100 || x.TotalMicros != 300 || x.TotalImps != 100 {
			t.Errorf("%s: %+v, want 300 micros and 100 imps per day and in total", x.Campaign, x)
		}
	}
}

func TestConnectBadHosts(t *testing.T) {
	for _, h := range []string{"", " , ", "host:0", "host:x", "host:70000"} {
		if _, err := aero.Connect(h, nil); err == nil || !strings.Contains(err.Error(), "aerostore") {
			t.Errorf("Connect(%q) = %v", h, err)
		}
	}
}
