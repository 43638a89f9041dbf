package aerospiketest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"reflect"
	"sync"
	"testing"
	"time"

	as "github.com/aerospike/aerospike-client-go/v7"
	"github.com/aerospike/aerospike-client-go/v7/types"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	"golang.org/x/sync/errgroup"

	"github.com/rtbd/rtbd/internal/clocktest"
)

func startServer(t testing.TB, opts Options) *Server {
	t.Helper()
	s, err := Start(opts)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// newClient connects the real v7 client. Every command is bounded by 10 s.
func newClient(t testing.TB, s *Server) *as.Client {
	t.Helper()
	cp := as.NewClientPolicy()
	cp.Timeout = 3 * time.Second
	c, err := as.NewClientWithPolicy(cp, s.Host(), s.Port())
	if err != nil {
		t.Fatalf("NewClientWithPolicy: %v", err)
	}
	t.Cleanup(c.Close)
	c.DefaultPolicy.TotalTimeout = 10 * time.Second
	c.DefaultWritePolicy.TotalTimeout = 10 * time.Second
	c.DefaultBatchPolicy.TotalTimeout = 10 * time.Second
	return c
}

func key(t testing.TB, ns, set string, v any) *as.Key {
	t.Helper()
	k, err := as.NewKey(ns, set, v)
	if err != nil {
		t.Fatalf("NewKey: %v", err)
	}
	return k
}

func wantCode(t *testing.T, err error, code types.ResultCode) {
	t.Helper()
	var ae as.Error
	if !errors.As(err, &ae) || !ae.Matches(code) {
		t.Fatalf("error = %v, want result code %d (%s)", err, code, types.ResultCodeToString(code))
	}
}

func TestClientSeesOneNode(t *testing.T) {
	s := startServer(t, Options{})
	c := newClient(t, s)
	nodes := c.GetNodes()
	if len(nodes) != 1 {
		t.Fatalf("nodes = %d, want 1", len(nodes))
	}
	if got := nodes[0].GetName(); got != DefaultNodeName {
		t.Fatalf("node name = %q, want %q", got, DefaultNodeName)
	}
	if !c.IsConnected() {
		t.Fatal("client not connected")
	}
	info, err := nodes[0].RequestInfo(as.NewInfoPolicy(), "build", "no-such-name", "namespaces", "replicas-master")
	if err != nil {
		t.Fatalf("RequestInfo: %v", err)
	}
	if info["build"] != infoBuild || info["namespaces"] != "test" {
		t.Fatalf("info = %v", info)
	}
	if v, ok := info["no-such-name"]; !ok || v != "" {
		t.Fatalf("unknown name answered %q (present %v), want empty", v, ok)
	}
	if s.Requests()[KindInfo] == 0 {
		t.Fatal("no info requests counted")
	}
}

func TestStartValidates(t *testing.T) {
	for _, o := range []Options{
		{Namespace: "way-too-long-namespace-name-for-aerospike"},
		{Namespace: "a;b"},
		{NodeName: "A,B"},
		{DefaultTTL: -time.Second},
	} {
		if _, err := Start(o); !errors.Is(err, ErrBadOptions) {
			t.Errorf("Start(%+v) error = %v, want ErrBadOptions", o, err)
		}
	}
}

func TestClusterNameMismatch(t *testing.T) {
	s := startServer(t, Options{ClusterName: "real"})
	cp := as.NewClientPolicy()
	cp.Timeout = time.Second
	cp.ClusterName = "other"
	if c, err := as.NewClientWithPolicy(cp, s.Host(), s.Port()); err == nil {
		c.Close()
		t.Fatal("client accepted a node of another cluster")
	}
	cp.ClusterName = "real"
	c, err := as.NewClientWithPolicy(cp, s.Host(), s.Port())
	if err != nil {
		t.Fatalf("matching cluster name: %v", err)
	}
	c.Close()
}

func TestPutGetDeleteExists(t *testing.T) {
	s := startServer(t, Options{})
	c := newClient(t, s)
	k := key(t, "test", "users", "u1")
	profile := []byte{0, 1, 2, 0xff, 'p'}
	bins := as.BinMap{
		"i": 42, "f": 1.5, "s": "hello", "b": profile,
		"l": []any{1, "two"}, "m": map[any]any{"k": 7},
	}
	if err := c.Put(nil, k, bins); err != nil {
		t.Fatalf("Put: %v", err)
	}
	rec, err := c.Get(nil, k)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	want := as.BinMap{
		"i": 42, "f": 1.5, "s": "hello", "b": profile,
		"l": []any{1, "two"}, "m": map[any]any{"k": 7},
	}
	if !reflect.DeepEqual(rec.Bins, want) {
		t.Fatalf("bins = %#v, want %#v", rec.Bins, want)
	}
	if rec.Generation != 1 {
		t.Fatalf("generation = %d, want 1", rec.Generation)
	}
	if rec.Expiration != as.TTLDontExpire {
		t.Fatalf("expiration = %d, want never (%d)", rec.Expiration, uint32(as.TTLDontExpire))
	}

	rec, err = c.Get(nil, k, "s", "b", "absent")
	if err != nil {
		t.Fatalf("Get named: %v", err)
	}
	if !reflect.DeepEqual(rec.Bins, as.BinMap{"s": "hello", "b": profile}) {
		t.Fatalf("named bins = %#v", rec.Bins)
	}

	if err := c.PutBins(nil, k, as.NewBin("s", "again")); err != nil {
		t.Fatalf("PutBins: %v", err)
	}
	hdr, err := c.GetHeader(nil, k)
	if err != nil {
		t.Fatalf("GetHeader: %v", err)
	}
	if hdr.Generation != 2 || len(hdr.Bins) != 0 {
		t.Fatalf("header = gen %d bins %v, want gen 2 and no bins", hdr.Generation, hdr.Bins)
	}
	if ok, err := c.Exists(nil, k); err != nil || !ok {
		t.Fatalf("Exists = %v, %v; want true", ok, err)
	}
	if s.Records() != 1 {
		t.Fatalf("Records = %d, want 1", s.Records())
	}

	existed, err := c.Delete(nil, k)
	if err != nil || !existed {
		t.Fatalf("Delete = %v, %v; want true", existed, err)
	}
	if ok, err := c.Exists(nil, k); err != nil || ok {
		t.Fatalf("Exists after delete = %v, %v; want false", ok, err)
	}
	_, err = c.Get(nil, k)
	wantCode(t, err, types.KEY_NOT_FOUND_ERROR)
	if hdr, err := c.GetHeader(nil, k); err == nil && hdr != nil {
		t.Fatalf("GetHeader after delete = %v", hdr)
	}
	existed, err = c.Delete(nil, k)
	if err != nil || existed {
		t.Fatalf("second Delete = %v, %v; want false", existed, err)
	}

	// A set is part of the key: same user key, other set, other record.
	if err := c.Put(nil, key(t, "test", "other", "u1"), as.BinMap{"x": 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(nil, key(t, "test", "users", "u1")); err == nil {
		t.Fatal("record visible through another set")
	}

	// A nil value deletes the bin; deleting the last bin deletes the record.
	k2 := key(t, "test", "users", "u2")
	if err := c.Put(nil, k2, as.BinMap{"a": 1, "b": 2}); err != nil {
		t.Fatal(err)
	}
	if err := c.Put(nil, k2, as.BinMap{"a": nil}); err != nil {
		t.Fatal(err)
	}
	if rec, err := c.Get(nil, k2); err != nil || !reflect.DeepEqual(rec.Bins, as.BinMap{"b": 2}) {
		t.Fatalf("after nil bin: %v, %v", rec, err)
	}
	if err := c.Put(nil, k2, as.BinMap{"b": nil}); err != nil {
		t.Fatal(err)
	}
	if ok, _ := c.Exists(nil, k2); ok {
		t.Fatal("record without bins still exists")
	}

	got := s.Requests()
	for _, kind := range []string{KindWrite, KindRead, KindReadHeader, KindDelete} {
		if got[kind] == 0 {
			t.Errorf("Requests()[%s] = 0, want > 0 (all: %v)", kind, got)
		}
	}
}

func TestWritePolicies(t *testing.T) {
	s := startServer(t, Options{})
	c := newClient(t, s)
	k := key(t, "test", "p", 1)

	wp := as.NewWritePolicy(0, 0)
	wp.RecordExistsAction = as.UPDATE_ONLY
	wantCode(t, c.Put(wp, k, as.BinMap{"a": 1}), types.KEY_NOT_FOUND_ERROR)
	wp.RecordExistsAction = as.REPLACE_ONLY
	wantCode(t, c.Put(wp, k, as.BinMap{"a": 1}), types.KEY_NOT_FOUND_ERROR)

	wp.RecordExistsAction = as.CREATE_ONLY
	if err := c.Put(wp, k, as.BinMap{"a": 1, "b": 2}); err != nil {
		t.Fatalf("CREATE_ONLY on new key: %v", err)
	}
	wantCode(t, c.Put(wp, k, as.BinMap{"a": 1}), types.KEY_EXISTS_ERROR)

	wp.RecordExistsAction = as.UPDATE
	if err := c.Put(wp, k, as.BinMap{"c": 3}); err != nil {
		t.Fatal(err)
	}
	if rec, _ := c.Get(nil, k); !reflect.DeepEqual(rec.Bins, as.BinMap{"a": 1, "b": 2, "c": 3}) {
		t.Fatalf("UPDATE merged to %v", rec.Bins)
	}
	wp.RecordExistsAction = as.REPLACE
	if err := c.Put(wp, k, as.BinMap{"z": "only"}); err != nil {
		t.Fatal(err)
	}
	rec, _ := c.Get(nil, k)
	if !reflect.DeepEqual(rec.Bins, as.BinMap{"z": "only"}) {
		t.Fatalf("REPLACE left %v", rec.Bins)
	}

	gp := as.NewWritePolicy(rec.Generation+5, 0)
	gp.GenerationPolicy = as.EXPECT_GEN_EQUAL
	wantCode(t, c.Put(gp, k, as.BinMap{"z": "x"}), types.GENERATION_ERROR)
	gp.Generation = rec.Generation
	if err := c.Put(gp, k, as.BinMap{"z": "x"}); err != nil {
		t.Fatalf("matching generation: %v", err)
	}
	gp.GenerationPolicy = as.EXPECT_GEN_GT
	gp.Generation = rec.Generation // now stale: server has rec.Generation+1
	wantCode(t, c.Put(gp, k, as.BinMap{"z": "y"}), types.GENERATION_ERROR)

	wantCode(t, c.Put(nil, k, as.BinMap{"sixteen-chars-xx": 1}), types.BIN_NAME_TOO_LONG)
	wantCode(t, c.Put(nil, k, as.BinMap{"big": make([]byte, DefaultMaxRecordSize+1)}), types.RECORD_TOO_BIG)
	wantCode(t, c.Put(nil, k, as.BinMap{"g": as.NewGeoJSONValue(`{"type":"Point","coordinates":[1,2]}`)}), types.UNSUPPORTED_FEATURE)
}

func TestOperate(t *testing.T) {
	s := startServer(t, Options{})
	c := newClient(t, s)
	k := key(t, "test", "spend", "camp-1")

	rec, err := c.Operate(nil, k, as.AddOp(as.NewBin("n", 5)), as.GetBinOp("n"))
	if err != nil {
		t.Fatalf("Operate add on missing record: %v", err)
	}
	if rec.Bins["n"] != 5 || rec.Generation != 1 {
		t.Fatalf("after first add: %v gen %d", rec.Bins, rec.Generation)
	}
	rec, err = c.Operate(nil, k, as.AddOp(as.NewBin("n", -2)), as.AddOp(as.NewBin("f", 0.25)), as.GetOp())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rec.Bins, as.BinMap{"n": 3, "f": 0.25}) {
		t.Fatalf("add + get all = %v", rec.Bins)
	}
	wantCode(t, func() error { _, err := c.Operate(nil, k, as.AddOp(as.NewBin("n", 1.5))); return err }(), types.BIN_TYPE_ERROR)

	rec, err = c.Operate(nil, k,
		as.PutOp(as.NewBin("s", "mid")),
		as.AppendOp(as.NewBin("s", "-end")),
		as.PrependOp(as.NewBin("s", "start-")),
		as.GetBinOp("s"))
	if err != nil || rec.Bins["s"] != "start-mid-end" {
		t.Fatalf("put/append/prepend = %v, %v", rec, err)
	}

	// RespondPerEachOp: one result per op, writes answer nil.
	wp := as.NewWritePolicy(0, 0)
	wp.RespondPerEachOp = true
	rec, err = c.Operate(wp, k, as.AddOp(as.NewBin("n", 10)), as.GetBinOp("n"))
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := rec.Bins["n"].([]any); !ok || len(got) != 2 || got[0] != nil || got[1] != 13 {
		t.Fatalf("respond-all-ops results = %#v", rec.Bins["n"])
	}

	hdr, err := c.Operate(nil, k, as.GetHeaderOp())
	if err != nil || len(hdr.Bins) != 0 || hdr.Generation != rec.Generation {
		t.Fatalf("GetHeaderOp = %v, %v", hdr, err)
	}

	touch := as.NewWritePolicy(0, 100)
	if rec, err = c.Operate(touch, k, as.TouchOp()); err != nil {
		t.Fatal(err)
	}
	if rec.Expiration == as.TTLDontExpire || rec.Expiration > 100 {
		t.Fatalf("touch ttl = %d, want <= 100", rec.Expiration)
	}
	if err := c.Touch(nil, key(t, "test", "spend", "missing")); err == nil {
		t.Fatal("Touch on missing record succeeded")
	} else {
		wantCode(t, err, types.KEY_NOT_FOUND_ERROR)
	}

	wantCode(t, func() error { _, err := c.Operate(nil, k, as.ListAppendOp("l", 1)); return err }(), types.UNSUPPORTED_FEATURE)

	if _, err := c.Operate(nil, k, as.DeleteOp()); err != nil {
		t.Fatalf("DeleteOp: %v", err)
	}
	if ok, _ := c.Exists(nil, k); ok {
		t.Fatal("record survived DeleteOp")
	}
	if s.Requests()[KindOperate] == 0 || s.Requests()[KindTouch] == 0 {
		t.Fatalf("requests = %v", s.Requests())
	}
}

func TestConcurrentAdd(t *testing.T) {
	s := startServer(t, Options{})
	c := newClient(t, s)
	k := key(t, "test", "spend", "budget")
	const workers, perWorker = 32, 1000
	var eg errgroup.Group
	for w := 0; w < workers; w++ {
		eg.Go(func() error {
			op := as.AddOp(as.NewBin("spent", 1))
			for i := 0; i < perWorker; i++ {
				if _, err := c.Operate(nil, k, op); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := eg.Wait(); err != nil {
		t.Fatalf("Operate: %v", err)
	}
	rec, err := c.Get(nil, k)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Bins["spent"] != workers*perWorker {
		t.Fatalf("spent = %v, want %d", rec.Bins["spent"], workers*perWorker)
	}
	// Generation is 16 bits on Aerospike and wraps to 1.
	if want := uint32(workers*perWorker) % generationMax; rec.Generation != want {
		t.Fatalf("generation = %d, want %d", rec.Generation, want)
	}
	if n := s.Requests()[KindOperate]; n != workers*perWorker {
		t.Fatalf("operate requests = %d, want %d", n, workers*perWorker)
	}
	if s.Connections() < 2 {
		t.Fatalf("connections = %d: the client pool was not exercised", s.Connections())
	}
}

func TestBatch(t *testing.T) {
	s := startServer(t, Options{})
	c := newClient(t, s)
	var keys []*as.Key
	for i := 0; i < 6; i++ {
		set := "users"
		if i == 3 {
			set = "other" // breaks the "repeat" run, so full entries are parsed too
		}
		k := key(t, "test", set, i)
		keys = append(keys, k)
		if i%2 == 0 {
			if err := c.Put(nil, k, as.BinMap{"i": i, "p": []byte{byte(i)}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	before := s.Requests()[KindBatch]

	recs, err := c.BatchGet(nil, keys)
	if err != nil {
		t.Fatalf("BatchGet: %v", err)
	}
	for i, r := range recs {
		if i%2 == 0 {
			if r == nil || !reflect.DeepEqual(r.Bins, as.BinMap{"i": i, "p": []byte{byte(i)}}) {
				t.Fatalf("record %d = %v", i, r)
			}
		} else if r != nil {
			t.Fatalf("absent record %d = %v", i, r)
		}
	}
	recs, err = c.BatchGet(nil, keys, "p")
	if err != nil || recs[2] == nil || !reflect.DeepEqual(recs[2].Bins, as.BinMap{"p": []byte{2}}) {
		t.Fatalf("BatchGet named = %v, %v", recs, err)
	}
	hdrs, err := c.BatchGetHeader(nil, keys)
	if err != nil || hdrs[0] == nil || len(hdrs[0].Bins) != 0 || hdrs[0].Generation != 1 || hdrs[1] != nil {
		t.Fatalf("BatchGetHeader = %v, %v", hdrs, err)
	}
	exists, err := c.BatchExists(nil, keys)
	if err != nil || !reflect.DeepEqual(exists, []bool{true, false, true, false, true, false}) {
		t.Fatalf("BatchExists = %v, %v", exists, err)
	}
	recs, err = c.BatchGetOperate(nil, keys, as.GetBinOp("i"))
	if err != nil || recs[4] == nil || recs[4].Bins["i"] != 4 || recs[5] != nil {
		t.Fatalf("BatchGetOperate = %v, %v", recs, err)
	}

	complexReads := []*as.BatchRead{
		as.NewBatchRead(nil, keys[0], []string{"p"}),
		as.NewBatchRead(nil, keys[1], nil),
		as.NewBatchReadHeader(nil, keys[2]),
	}
	if err := c.BatchGetComplex(nil, complexReads); err != nil {
		t.Fatalf("BatchGetComplex: %v", err)
	}
	if r := complexReads[0].Record; r == nil || !reflect.DeepEqual(r.Bins, as.BinMap{"p": []byte{0}}) {
		t.Fatalf("BatchGetComplex bins = %v", r)
	}
	if complexReads[1].Record != nil || complexReads[2].Record == nil || len(complexReads[2].Record.Bins) != 0 {
		t.Fatalf("BatchGetComplex absent/header = %v / %v", complexReads[1].Record, complexReads[2].Record)
	}

	// BatchOperate: reads, writes and deletes in one message.
	ops := []as.BatchRecordIfc{
		as.NewBatchRead(nil, keys[0], nil),
		as.NewBatchRead(nil, keys[1], nil),
		as.NewBatchWrite(nil, keys[2], as.AddOp(as.NewBin("i", 100)), as.GetBinOp("i")),
		as.NewBatchWrite(nil, keys[3], as.PutOp(as.NewBin("new", "yes"))),
		as.NewBatchDelete(nil, keys[4]),
		as.NewBatchDelete(nil, keys[5]),
		as.NewBatchReadHeader(nil, keys[0]),
	}
	if err := c.BatchOperate(nil, ops); err != nil {
		t.Fatalf("BatchOperate: %v", err)
	}
	br := func(i int) *as.BatchRecord { return ops[i].BatchRec() }
	if br(0).ResultCode != types.OK || br(0).Record.Bins["i"] != 0 {
		t.Fatalf("batch read present = %+v", br(0))
	}
	if br(1).ResultCode != types.KEY_NOT_FOUND_ERROR || br(1).Record != nil {
		t.Fatalf("batch read absent = %+v", br(1))
	}
	if br(2).ResultCode != types.OK {
		t.Fatalf("batch write = %+v", br(2))
	}
	if got, ok := br(2).Record.Bins["i"].(as.OpResults); !ok || len(got) != 2 || got[0] != nil || got[1] != 102 {
		t.Fatalf("batch write results = %#v", br(2).Record.Bins["i"])
	}
	if br(3).ResultCode != types.OK || br(4).ResultCode != types.OK || br(5).ResultCode != types.KEY_NOT_FOUND_ERROR {
		t.Fatalf("batch write/delete codes = %d %d %d", br(3).ResultCode, br(4).ResultCode, br(5).ResultCode)
	}
	if br(6).ResultCode != types.OK || len(br(6).Record.Bins) != 0 {
		t.Fatalf("batch read header = %+v", br(6))
	}
	if rec, err := c.Get(nil, keys[3]); err != nil || rec.Bins["new"] != "yes" {
		t.Fatalf("record written by batch = %v, %v", rec, err)
	}
	if ok, _ := c.Exists(nil, keys[4]); ok {
		t.Fatal("record deleted by batch still exists")
	}

	dres, err := c.BatchDelete(nil, nil, keys[:3])
	if err != nil {
		t.Fatalf("BatchDelete: %v", err)
	}
	if dres[0].ResultCode != types.OK || dres[1].ResultCode != types.KEY_NOT_FOUND_ERROR || dres[2].ResultCode != types.OK {
		t.Fatalf("BatchDelete codes = %d %d %d", dres[0].ResultCode, dres[1].ResultCode, dres[2].ResultCode)
	}
	if n := s.Requests()[KindBatch] - before; n != 8 {
		t.Fatalf("batch messages = %d, want 8 (one per batch call)", n)
	}
}

func TestBatchLarge(t *testing.T) {
	// Enough records to split the response over several proto frames.
	s := startServer(t, Options{})
	c := newClient(t, s)
	val := bytes.Repeat([]byte("x"), 1000)
	var keys []*as.Key
	for i := 0; i < 400; i++ {
		k := key(t, "test", "big", i)
		keys = append(keys, k)
		if err := c.Put(nil, k, as.BinMap{"v": val}); err != nil {
			t.Fatal(err)
		}
	}
	recs, err := c.BatchGet(nil, keys)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range recs {
		if r == nil || !bytes.Equal(r.Bins["v"].([]byte), val) {
			t.Fatalf("record %d = %v", i, r)
		}
	}
}

func TestTTLExpiry(t *testing.T) {
	clock := clocktest.New(time.Now().Truncate(time.Second))
	s := startServer(t, Options{Now: clock.Now, DefaultTTL: time.Hour})
	c := newClient(t, s)
	k := key(t, "test", "ttl", "a")
	if err := c.Put(as.NewWritePolicy(0, 10), k, as.BinMap{"v": 1}); err != nil {
		t.Fatal(err)
	}
	rec, err := c.Get(nil, k)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Expiration == 0 || rec.Expiration > 11 {
		t.Fatalf("expiration = %d, want about 10", rec.Expiration)
	}
	clock.Add(9 * time.Second)
	if ok, _ := c.Exists(nil, k); !ok {
		t.Fatal("expired too early")
	}
	// TTLDontUpdate keeps the 1 s left.
	if err := c.Put(as.NewWritePolicy(0, as.TTLDontUpdate), k, as.BinMap{"v": 2}); err != nil {
		t.Fatal(err)
	}
	clock.Add(time.Second)
	if ok, _ := c.Exists(nil, k); ok {
		t.Fatal("record alive after its TTL")
	}
	_, err = c.Get(nil, k)
	wantCode(t, err, types.KEY_NOT_FOUND_ERROR)
	if s.Records() != 0 {
		t.Fatalf("Records = %d after expiry", s.Records())
	}

	// TTL 0 takes the namespace default (1 h), -1 never expires.
	kd, kn := key(t, "test", "ttl", "default"), key(t, "test", "ttl", "never")
	if err := c.Put(nil, kd, as.BinMap{"v": 1}); err != nil {
		t.Fatal(err)
	}
	if err := c.Put(as.NewWritePolicy(0, as.TTLDontExpire), kn, as.BinMap{"v": 1}); err != nil {
		t.Fatal(err)
	}
	clock.Add(time.Hour)
	if ok, _ := c.Exists(nil, kd); ok {
		t.Fatal("default TTL not applied")
	}
	clock.Add(24 * 365 * time.Hour)
	if ok, _ := c.Exists(nil, kn); !ok {
		t.Fatal("never-expiring record expired")
	}
	wantCode(t, c.Put(as.NewWritePolicy(0, 11*365*24*3600), kn, as.BinMap{"v": 1}), types.PARAMETER_ERROR) // above max-ttl, as a real server answers
}

func TestTruncate(t *testing.T) {
	s := startServer(t, Options{})
	c := newClient(t, s)
	for i := 0; i < 3; i++ {
		for _, set := range []string{"a", "b"} {
			if err := c.Put(nil, key(t, "test", set, i), as.BinMap{"v": i}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := c.Truncate(nil, "test", "a", nil); err != nil {
		t.Fatalf("Truncate set: %v", err)
	}
	if s.Records() != 3 {
		t.Fatalf("Records = %d after truncating one set, want 3", s.Records())
	}
	if err := c.Truncate(nil, "test", "", nil); err != nil {
		t.Fatalf("Truncate namespace: %v", err)
	}
	if s.Records() != 0 {
		t.Fatalf("Records = %d after truncating the namespace", s.Records())
	}
	wantCode(t, c.Truncate(nil, "nope", "", nil), types.INVALID_NAMESPACE)
}

func TestCompressedRequest(t *testing.T) {
	s := startServer(t, Options{})
	var compressed sync.WaitGroup
	compressed.Add(1)
	var once sync.Once
	tap := func(frame []byte) {
		if frame[1] == protoMsgCompress {
			once.Do(compressed.Done)
		}
	}
	s.tap.Store(&tap)
	c := newClient(t, s)
	k := key(t, "test", "z", "big")
	wp := as.NewWritePolicy(0, 0)
	wp.UseCompression = true
	blob := bytes.Repeat([]byte("profile "), 500)
	if err := c.Put(wp, k, as.BinMap{"p": blob}); err != nil {
		t.Fatalf("compressed Put: %v", err)
	}
	rp := as.NewPolicy()
	rp.UseCompression = true // asks for a compressed answer; the server answers plain
	rec, err := c.Get(rp, k)
	if err != nil || !bytes.Equal(rec.Bins["p"].([]byte), blob) {
		t.Fatalf("Get = %v, %v", rec, err)
	}
	waitOrFail(t, &compressed, "no compressed frame seen")
}

func waitOrFail(t *testing.T, wg *sync.WaitGroup, msg string) {
	t.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal(msg)
	}
}

func TestFaultHook(t *testing.T) {
	s := startServer(t, Options{})
	c := newClient(t, s)
	k := key(t, "test", "f", 1)
	if err := c.Put(nil, k, as.BinMap{"v": 1}); err != nil {
		t.Fatal(err)
	}

	s.SetFaultHook(func(kind string) Fault {
		if kind == KindWrite {
			return Fault{ResultCode: int(types.KEY_BUSY)}
		}
		return Fault{}
	})
	wantCode(t, c.Put(nil, k, as.BinMap{"v": 2}), types.KEY_BUSY)
	if rec, err := c.Get(nil, k); err != nil || rec.Bins["v"] != 1 {
		t.Fatalf("faulted write changed data: %v, %v", rec, err)
	}

	s.SetFaultHook(func(kind string) Fault { return Fault{CloseConn: kind == KindRead} })
	p := as.NewPolicy()
	p.MaxRetries = 0
	if _, err := c.Get(p, k); err == nil {
		t.Fatal("Get over a dropped connection succeeded")
	}

	s.SetFaultHook(func(kind string) Fault {
		if kind == KindBatch {
			return Fault{Delay: 5 * time.Second}
		}
		return Fault{}
	})
	bp := as.NewBatchPolicy()
	bp.TotalTimeout = 100 * time.Millisecond
	bp.SocketTimeout = 100 * time.Millisecond
	bp.MaxRetries = 0
	_, err := c.BatchGet(bp, []*as.Key{k, key(t, "test", "f", 2)})
	wantCode(t, err, types.TIMEOUT)

	s.SetFaultHook(nil)
	if rec, err := c.Get(nil, k); err != nil || rec.Bins["v"] != 1 {
		t.Fatalf("after removing the hook: %v, %v", rec, err)
	}
}

// rawConn dials the server without the client.
func rawConn(t *testing.T, s *Server) net.Conn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", s.Addr(), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	return conn
}

// readFrame reads one response frame.
func readFrame(t *testing.T, conn net.Conn) (typ byte, body []byte) {
	t.Helper()
	var hdr [8]byte
	if _, err := io.ReadFull(conn, hdr[:]); err != nil {
		t.Fatalf("read frame header: %v", err)
	}
	n := binary.BigEndian.Uint64(hdr[:]) & 0xFFFFFFFFFFFF
	body = make([]byte, n)
	if _, err := io.ReadFull(conn, body); err != nil {
		t.Fatalf("read frame body: %v", err)
	}
	return hdr[1], body
}

// expectClosed checks that the server closes conn without answering.
func expectClosed(t *testing.T, conn net.Conn) {
	t.Helper()
	var b [1]byte
	if n, err := conn.Read(b[:]); err == nil || n != 0 {
		t.Fatalf("connection still open (read %d bytes, err %v)", n, err)
	}
}

func TestGarbageInput(t *testing.T) {
	s := startServer(t, Options{})
	c := newClient(t, s)
	k := key(t, "test", "g", 1)
	if err := c.Put(nil, k, as.BinMap{"v": 1}); err != nil {
		t.Fatal(err)
	}

	t.Run("random bytes", func(t *testing.T) {
		conn := rawConn(t, s)
		_, _ = conn.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
		expectClosed(t, conn)
	})
	t.Run("huge size", func(t *testing.T) {
		conn := rawConn(t, s)
		_, _ = conn.Write([]byte{2, 3, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF})
		expectClosed(t, conn)
	})
	t.Run("admin protocol", func(t *testing.T) {
		conn := rawConn(t, s)
		_, _ = conn.Write(frame(protoAdmin, make([]byte, 16)))
		expectClosed(t, conn)
	})
	t.Run("bad compressed", func(t *testing.T) {
		conn := rawConn(t, s)
		_, _ = conn.Write(frame(protoMsgCompress, []byte{0, 0, 0, 0, 0, 0, 0, 40, 1, 2, 3}))
		expectClosed(t, conn)
	})
	t.Run("truncated frame then close", func(t *testing.T) {
		conn := rawConn(t, s)
		_, _ = conn.Write([]byte{2, 3, 0, 0, 0, 0, 1, 0, 22, 0})
		_ = conn.(*net.TCPConn).CloseWrite()
		expectClosed(t, conn)
	})
	t.Run("well framed garbage answers 4 and keeps the connection", func(t *testing.T) {
		conn := rawConn(t, s)
		for _, body := range [][]byte{
			{1, 2, 3},
			append(msgHeader22(0, 0, 0, 1, 0), 0xFF, 0xFF, 0xFF, 0xFF, 0),   // field larger than message
			append(msgHeader22(1, 0, 0, 0, 1), 0, 0, 0, 2, 1, 0, 0, 200),    // op name past end
			msgHeader22(info1Batch|info1Read, 0, 0, 0, 0),                   // batch flag without batch field
			append(msgHeader22(info1Read, 0, 0, 1, 0), 0, 0, 0, 3, 4, 1, 2), // 2-byte digest
		} {
			if _, err := conn.Write(frame(protoMsg, body)); err != nil {
				t.Fatal(err)
			}
			typ, resp := readFrame(t, conn)
			if typ != protoMsg || len(resp) != msgHeaderSize || resp[5] != rcParameter {
				t.Fatalf("answer to %x: type %d body %x, want result 4", body, typ, resp)
			}
		}
		// Still in sync: an info request on the same connection works.
		if _, err := conn.Write(frame(protoInfo, []byte("build\n"))); err != nil {
			t.Fatal(err)
		}
		if typ, resp := readFrame(t, conn); typ != protoInfo || string(resp) != "build\t"+infoBuild+"\n" {
			t.Fatalf("info after garbage = %d %q", typ, resp)
		}
	})

	if rec, err := c.Get(nil, k); err != nil || rec.Bins["v"] != 1 {
		t.Fatalf("client after garbage: %v, %v", rec, err)
	}
	if s.Requests()[KindMalformed] < 7 {
		t.Fatalf("malformed count = %d", s.Requests()[KindMalformed])
	}
}

func TestLoggerSeesDroppedConnection(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	s := startServer(t, Options{Logger: zap.New(core)})
	conn := rawConn(t, s)
	_, _ = conn.Write([]byte{9, 9, 9, 9, 9, 9, 9, 9})
	expectClosed(t, conn)
	if logs.FilterMessage("aerospiketest: closing connection").Len() == 0 {
		t.Fatalf("no log of the dropped connection; got %v", logs.All())
	}
}

func TestWrongNamespace(t *testing.T) {
	s := startServer(t, Options{Namespace: "bids"})
	conn := rawConn(t, s)
	body := msgHeader22(info1Read|info1GetAll, 0, 0, 2, 0)
	body = appendField(body, fieldNamespace, []byte("test"))
	body = appendField(body, fieldDigest, make([]byte, 20))
	if _, err := conn.Write(frame(protoMsg, body)); err != nil {
		t.Fatal(err)
	}
	if _, resp := readFrame(t, conn); resp[5] != rcInvalidNS {
		t.Fatalf("result = %d, want %d", resp[5], rcInvalidNS)
	}
}

func TestCloseWithOpenConnections(t *testing.T) {
	s, err := Start(Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, s)
	if err := c.Put(nil, key(t, "test", "c", 1), as.BinMap{"v": 1}); err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	done := make(chan error, 1)
	go func() { done <- s.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return")
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if s.Connections() != 0 {
		t.Fatalf("connections after Close = %d", s.Connections())
	}
}

// frame wraps body in a proto header.
func frame(typ byte, body []byte) []byte {
	out := appendProtoHeader(nil, typ)
	out = append(out, body...)
	finishFrame(out, 0)
	return out
}

func msgHeader22(info1, info2, info3 byte, nFields, nOps int) []byte {
	b := []byte{msgHeaderSize, info1, info2, info3, 0, 0}
	b = append(b, make([]byte, 12)...) // generation, ttl, timeout
	b = binary.BigEndian.AppendUint16(b, uint16(nFields))
	return binary.BigEndian.AppendUint16(b, uint16(nOps))
}

func appendField(b []byte, typ byte, data []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(data)+1))
	b = append(b, typ)
	return append(b, data...)
}
