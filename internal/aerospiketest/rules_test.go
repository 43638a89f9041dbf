package aerospiketest

import (
	"strings"
	"testing"

	as "github.com/aerospike/aerospike-client-go/v7"
	"github.com/aerospike/aerospike-client-go/v7/types"
)

// TestNsupPeriodZero: under nsup-period 0 a write with a TTL is refused
// with 22 and changes nothing; never-expire and default-TTL writes pass.
func TestNsupPeriodZero(t *testing.T) {
	s := startServer(t, Options{NsupPeriodZero: true})
	c := newClient(t, s)
	k := key(t, "test", "s", "k")
	wp := as.NewWritePolicy(0, 60)
	wantCode(t, c.Put(wp, k, as.BinMap{"a": 1}), types.FAIL_FORBIDDEN)
	if _, err := c.Operate(wp, k, as.AddOp(as.NewBin("a", 1))); err == nil || !err.Matches(types.FAIL_FORBIDDEN) {
		t.Fatalf("Operate with TTL: %v, want FAIL_FORBIDDEN", err)
	}
	if s.Records() != 0 {
		t.Fatalf("a refused write stored %d records", s.Records())
	}
	for _, ttl := range []uint32{as.TTLDontExpire, as.TTLServerDefault, as.TTLDontUpdate} {
		if err := c.Put(as.NewWritePolicy(0, ttl), k, as.BinMap{"a": 1}); err != nil {
			t.Errorf("Put ttl %d: %v", ttl, err)
		}
	}
	// A batch write with a TTL fails record by record.
	ops := []as.BatchRecordIfc{
		as.NewBatchWrite(func() *as.BatchWritePolicy { p := as.NewBatchWritePolicy(); p.Expiration = 60; return p }(), key(t, "test", "s", "a"), as.PutOp(as.NewBin("a", 1))),
		as.NewBatchWrite(nil, key(t, "test", "s", "b"), as.PutOp(as.NewBin("a", 1))),
	}
	if err := c.BatchOperate(nil, ops); err != nil && !err.Matches(types.FAIL_FORBIDDEN) {
		t.Fatal(err)
	}
	if rc := ops[0].BatchRec().ResultCode; rc != types.FAIL_FORBIDDEN {
		t.Errorf("batch TTL write: %v, want FAIL_FORBIDDEN", rc)
	}
	if rc := ops[1].BatchRec().ResultCode; rc != types.OK {
		t.Errorf("batch default-TTL write: %v, want OK", rc)
	}
	info, err := c.GetNodes()[0].RequestInfo(as.NewInfoPolicy(), "namespace/test")
	if err != nil || !strings.Contains(info["namespace/test"], "nsup-period=0;") {
		t.Errorf("info namespace/test = %q, %v; want nsup-period=0", info["namespace/test"], err)
	}

	s2 := startServer(t, Options{})
	if err := newClient(t, s2).Put(wp, k, as.BinMap{"a": 1}); err != nil {
		t.Errorf("default server refused a TTL write: %v", err)
	}
}

// TestRecordHookBatch: the hook fails chosen records of a batch, the
// others of the same batch are applied, and after times failures every
// record executes again.
func TestRecordHookBatch(t *testing.T) {
	s := startServer(t, Options{})
	c := newClient(t, s)
	s.SetRecordHook(FailRecords(ResultKeyBusy, 2, func(rc RecordCall) bool { return rc.Batch && rc.Index == 1 }))
	keys := []*as.Key{key(t, "test", "s", "a"), key(t, "test", "s", "b"), key(t, "test", "s", "c")}
	run := func() []types.ResultCode {
		ops := make([]as.BatchRecordIfc, len(keys))
		for i, k := range keys {
			ops[i] = as.NewBatchWrite(nil, k, as.AddOp(as.NewBin("n", 1)))
		}
		if err := c.BatchOperate(nil, ops); err != nil && !err.Matches(types.KEY_BUSY) {
			t.Fatal(err)
		}
		out := make([]types.ResultCode, len(ops))
		for i, o := range ops {
			out[i] = o.BatchRec().ResultCode
		}
		return out
	}
	for i := range 3 {
		got := run()
		want := types.ResultCode(types.OK)
		if i < 2 {
			want = types.KEY_BUSY
		}
		if got[0] != types.OK || got[2] != types.OK || got[1] != want {
			t.Errorf("batch %d: results %v, want [OK %v OK]", i, got, want)
		}
	}
	for i, want := range []int{3, 1, 3} {
		r, err := c.Get(nil, keys[i])
		if err != nil || r.Bins["n"] != want {
			t.Errorf("record %d: %v %v, want n=%d", i, r, err, want)
		}
	}
	if n := s.Requests()[KindRecordFault]; n != 2 {
		t.Errorf("record faults %d, want 2", n)
	}
}

// TestRecordHookSingle: KEY_BUSY on one hot key for single-record
// commands, matched by digest; other keys are untouched.
func TestRecordHookSingle(t *testing.T) {
	s := startServer(t, Options{})
	c := newClient(t, s)
	hot := key(t, "test", "s", "hot")
	var d [digestLength]byte
	copy(d[:], hot.Digest())
	s.SetRecordHook(FailRecords(ResultKeyBusy, 1, func(rc RecordCall) bool { return rc.Digest == d && rc.Set == "s" }))
	wantCode(t, c.Put(nil, hot, as.BinMap{"a": 1}), types.KEY_BUSY)
	if err := c.Put(nil, key(t, "test", "s", "cold"), as.BinMap{"a": 1}); err != nil {
		t.Fatal(err)
	}
	if err := c.Put(nil, hot, as.BinMap{"a": 1}); err != nil {
		t.Fatalf("after recovery: %v", err)
	}
	s.SetRecordHook(nil)
	if s.Records() != 2 {
		t.Errorf("records %d, want 2", s.Records())
	}
}

// TestDropReply: a request under Fault.DropReply is applied, and the
// client gets no answer (an unknown outcome); batches too.
func TestDropReply(t *testing.T) {
	s := startServer(t, Options{})
	c := newClient(t, s)
	k := key(t, "test", "s", "k")
	s.SetFaultHook(func(string) Fault { return Fault{DropReply: true} })
	wp := as.NewWritePolicy(0, 0)
	wp.MaxRetries = 0
	if err := c.Put(wp, k, as.BinMap{"a": 1}); err == nil {
		t.Fatal("Put with a dropped reply succeeded")
	}
	bp := as.NewBatchPolicy()
	bp.MaxRetries = 0
	ops := []as.BatchRecordIfc{
		as.NewBatchWrite(nil, key(t, "test", "s", "a"), as.PutOp(as.NewBin("a", 1))),
		as.NewBatchWrite(nil, key(t, "test", "s", "b"), as.PutOp(as.NewBin("a", 1))),
	}
	_ = c.BatchOperate(bp, ops)
	if rc := ops[0].BatchRec().ResultCode; rc == types.OK {
		t.Errorf("batch with a dropped reply answered OK")
	}
	s.SetFaultHook(nil)
	if s.Records() != 3 {
		t.Fatalf("%d records, want 3: the requests whose reply was dropped were applied", s.Records())
	}
	if r, err := c.Get(nil, k); err != nil || r.Bins["a"] != 1 {
		t.Errorf("Get after a dropped reply: %v, %v", r, err)
	}
}

// TestMaxTTL: a TTL above the namespace's max-ttl (10 years) is refused
// with 4 PARAMETER_ERROR and stores nothing; 10 years is accepted.
func TestMaxTTL(t *testing.T) {
	s := startServer(t, Options{})
	c := newClient(t, s)
	k := key(t, "test", "s", "k")
	wantCode(t, c.Put(as.NewWritePolicy(0, maxTTLSeconds+1), k, as.BinMap{"a": 1}), types.PARAMETER_ERROR)
	if s.Records() != 0 {
		t.Fatalf("a refused write stored %d records", s.Records())
	}
	if err := c.Put(as.NewWritePolicy(0, maxTTLSeconds), k, as.BinMap{"a": 1}); err != nil {
		t.Errorf("Put with a 10-year TTL: %v", err)
	}
}

// TestMaxSets: once the namespace holds MaxSets sets a write creating a
// record in another set is refused with 4 PARAMETER_ERROR, even after the
// sets' records are deleted; the sets it holds stay writable; Reset
// forgets them.
func TestMaxSets(t *testing.T) {
	s := startServer(t, Options{MaxSets: 2})
	c := newClient(t, s)
	for _, set := range []string{"a", "b"} {
		if err := c.Put(nil, key(t, "test", set, "k"), as.BinMap{"x": 1}); err != nil {
			t.Fatalf("Put in set %s: %v", set, err)
		}
	}
	wantCode(t, c.Put(nil, key(t, "test", "c", "k"), as.BinMap{"x": 1}), types.PARAMETER_ERROR)
	for _, set := range []string{"a", "b"} {
		if _, err := c.Delete(nil, key(t, "test", set, "k")); err != nil {
			t.Fatal(err)
		}
	}
	wantCode(t, c.Put(nil, key(t, "test", "c", "k"), as.BinMap{"x": 1}), types.PARAMETER_ERROR)
	if s.Records() != 0 {
		t.Fatalf("a refused write stored %d records", s.Records())
	}
	if err := c.Put(nil, key(t, "test", "a", "k2"), as.BinMap{"x": 1}); err != nil {
		t.Errorf("Put in a set the namespace holds: %v", err)
	}
	if err := c.Put(nil, key(t, "test", "", "k"), as.BinMap{"x": 1}); err != nil {
		t.Errorf("Put in the null set: %v", err)
	}
	s.Reset()
	if err := c.Put(nil, key(t, "test", "c", "k"), as.BinMap{"x": 1}); err != nil {
		t.Errorf("Put in a new set after Reset: %v", err)
	}
	if _, err := Start(Options{MaxSets: -1}); err == nil {
		t.Error("Start with MaxSets -1 succeeded")
	}
}
