package catalog_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/rtbd/rtbd/catalog"
	"github.com/rtbd/rtbd/catalog/catalogpb"
	"github.com/rtbd/rtbd/catalog/catalogtest"
)

func startServer(t *testing.T, store catalog.Store, reg prometheus.Registerer) string {
	t.Helper()
	return catalogtest.ServeStore(t, store, catalog.ServerOptions{Registerer: reg}, catalog.GRPCOptions{MaxRecvMsgBytes: 64 << 10})
}

// rawCodec sends bytes as they are, to put malformed frames on the wire.
type rawCodec struct{}

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(*v.(*[]byte))}, nil
}
func (rawCodec) Unmarshal(d mem.BufferSlice, v any) error { *v.(*[]byte) = d.Materialize(); return nil }
func (rawCodec) Name() string                             { return "proto" }

var _ encoding.CodecV2 = rawCodec{}

func TestServerBadInput(t *testing.T) {
	l, _ := openFixture(t, catalog.LocalOptions{})
	reg := prometheus.NewRegistry()
	conn := catalogtest.Conn(t, startServer(t, l, reg))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	raw := func(b []byte) error {
		var out []byte
		return conn.Invoke(ctx, catalogpb.Catalog_GetProductMasters_FullMethodName, &b, &out, grpc.ForceCodecV2(rawCodec{}))
	}
	for name, b := range map[string][]byte{
		"truncated varint":    {0x08, 0xff},
		"bad wire type":       {0x0f},
		"truncated packed":    {0x1a, 0x10, 0x01},
		"garbage":             []byte(strings.Repeat("\xff\x00", 64)),
		"field number zero":   {0x00, 0x01},
		"length past the end": {0x1a, 0x7f},
	} {
		if c := status.Code(raw(b)); c != codes.InvalidArgument {
			t.Errorf("%s: code %v, want InvalidArgument", name, c)
		}
	}
	// An empty message is a valid request with group 0: InvalidArgument too.
	if c := status.Code(raw(nil)); c != codes.InvalidArgument {
		t.Errorf("empty: code %v, want InvalidArgument", c)
	}
	// Over the message size limit: the transport refuses it.
	if c := status.Code(raw(make([]byte, 100<<10))); c != codes.ResourceExhausted {
		t.Errorf("oversized frame: code %v, want ResourceExhausted", c)
	}

	cl := catalogpb.NewCatalogClient(conn)
	ids := make([]int64, 1001)
	for i := range ids {
		ids[i] = int64(i + 1)
	}
	_, err := cl.GetProductMasters(ctx, &catalogpb.ProductMastersRequest{ProductGroupId: 1, Product1QuantityAtMost: 1, Product1Ids: ids})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "1001") {
		t.Errorf("1001 ids: %v, want InvalidArgument naming the count", err)
	}
	_, err = cl.GetProductMasters(ctx, &catalogpb.ProductMastersRequest{ProductGroupId: -1})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "product_group_id") {
		t.Errorf("negative group: %v, want InvalidArgument naming product_group_id", err)
	}
	// A good call still works on the same connection.
	resp, err := cl.GetProductMasters(ctx, &catalogpb.ProductMastersRequest{ProductGroupId: catalogtest.TalkGroup,
		Product1QuantityAtMost: 3, Product1Ids: []int64{103, 999, 101}})
	if err != nil || len(resp.Product1S) != 2 {
		t.Fatalf("good call after bad ones: %v %v", resp, err)
	}
	h, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: catalogpb.Catalog_ServiceDesc.ServiceName})
	if err != nil || h.Status != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health: %v %v", h, err)
	}
	if n := testutil.ToFloat64(mustVec(t, reg, "rtbd_catalog_server_requests_total", "InvalidArgument")); n < 3 {
		t.Errorf("InvalidArgument counted %v times, want >= 3", n)
	}
}

// mustVec finds the series of name in reg that carries every one of the
// label values.
func mustVec(t *testing.T, reg *prometheus.Registry, name string, labels ...string) prometheus.Collector {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.Metric {
			var vals []string
			for _, lp := range m.Label {
				vals = append(vals, lp.GetValue())
			}
			for _, l := range labels {
				if !slices.Contains(vals, l) {
					continue series
				}
			}
			c := prometheus.NewCounter(prometheus.CounterOpts{Name: "x"})
			c.Add(m.GetCounter().GetValue())
			return c
		}
	}
	t.Fatalf("metric %s%v not found", name, labels)
	return nil
}

// A catalog node answers from encoded bytes (the WireStore path): products
// are counted in the metrics as before, and a stored product whose text is
// not UTF-8 fails the call the way proto's marshal step always did
// (INTERNAL), while its neighbours are still served.
func TestServerWirePath(t *testing.T) {
	dir := t.TempDir()
	catalogtest.WriteCatalog(t, dir, []*catalogpb.Product{
		{ProductGroupId: 5, ProductId: 1, Title: "good", InStock: true},
		{ProductGroupId: 5, ProductId: 2, Title: "bad \xff", InStock: true},
	})
	l, err := catalog.OpenLocal(dir, catalog.LocalOptions{WatchInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var _ catalog.WireStore = l
	reg := prometheus.NewRegistry()
	cl := catalogtest.Client(t, startServer(t, l, reg))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for range 3 { // cold, then from the hot cache's kept encoding
		resp, err := cl.GetProductMasters(ctx, &catalogpb.ProductMastersRequest{ProductGroupId: 5,
			Product1QuantityAtMost: 5, Product1Ids: []int64{1, 3}, Product2QuantityAtMost: 1, Product2Ids: []int64{1}})
		if err != nil || len(resp.Product1S) != 1 || resp.Product1S[0].Title != "good" || len(resp.Product2S) != 1 {
			t.Fatalf("good call: %v %v", resp, err)
		}
		_, err = cl.GetProductMasters(ctx, &catalogpb.ProductMastersRequest{ProductGroupId: 5, Product1QuantityAtMost: 5, Product1Ids: []int64{1, 2}})
		if status.Code(err) != codes.Internal {
			t.Fatalf("invalid UTF-8 product: %v, want INTERNAL", err)
		}
	}
	// 3 good answers of 1, plus the failing calls' 2 each: the proto path
	// counts what the store returned before gRPC's marshal step fails.
	if n := testutil.ToFloat64(mustVec(t, reg, "rtbd_catalog_server_products_returned_total", "product1")); n != 9 {
		t.Errorf("product1 products counted %v, want 9", n)
	}
	if n := testutil.ToFloat64(mustVec(t, reg, "rtbd_catalog_server_products_returned_total", "product2")); n != 3 {
		t.Errorf("product2 products counted %v, want 3", n)
	}
}

// A unary interceptor wraps the call the server makes without one: for a
// WireStore, the encoded answer (not a ProductMastersResponse marshalled
// again), and the client decodes the same products.
func TestServerInterceptorKeepsWirePath(t *testing.T) {
	l, _ := openFixture(t, catalog.LocalOptions{})
	var calls, wire int
	g := grpc.NewServer(catalog.ServerCodecOption(), grpc.UnaryInterceptor(
		func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			resp, err := h(ctx, req)
			if info.FullMethod == catalogpb.Catalog_GetProductMasters_FullMethodName {
				calls++
				if catalog.IsWireResponse(resp) {
					wire++
				}
			}
			return resp, err
		}))
	catalog.NewServer(l, catalog.ServerOptions{}).Register(g)
	conn := catalogtest.Conn(t, catalogtest.Serve(t, g))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := &catalogpb.ProductMastersRequest{ProductGroupId: catalogtest.TalkGroup, Product1QuantityAtMost: 3, Product1Ids: []int64{101, 102, 103}}
	want, err := l.GetProductMasters(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	got, err := catalogpb.NewCatalogClient(conn).GetProductMasters(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(got, want) || len(got.Product1S) == 0 {
		t.Fatalf("through the interceptor: %v, want %v", got, want)
	}
	if calls != 1 || wire != 1 {
		t.Fatalf("interceptor saw %d calls, %d of them on the wire path; want 1 and 1", calls, wire)
	}
}

// countingWire counts the answers its WireStore encodes.
type countingWire struct {
	catalog.WireStore
	appends atomic.Int64
}

func (c *countingWire) AppendProductMasters(ctx context.Context, req *catalogpb.ProductMastersRequest, dst []byte) ([]byte, [2]int, error) {
	c.appends.Add(1)
	return c.WireStore.AppendProductMasters(ctx, req, dst)
}

// switchBudget is an UnreadBudget that refuses every reservation while
// full is set, and tracks the bytes reserved and not released.
type switchBudget struct {
	full     atomic.Bool
	reserved atomic.Int64
}

func (b *switchBudget) Reserve(_ context.Context, n int) (func(), bool) {
	if b.full.Load() {
		return nil, false
	}
	b.reserved.Add(int64(n))
	var once sync.Once
	return func() { once.Do(func() { b.reserved.Add(-int64(n)) }) }, true
}

// A call on a connection whose unread budget cannot take its expected
// answer is RESOURCE_EXHAUSTED before the store looks anything up; every
// reservation is given back once the answers are written.
func TestServerRefusesBeforeLookupWhenUnreadFull(t *testing.T) {
	l, _ := openFixture(t, catalog.LocalOptions{})
	store := &countingWire{WireStore: l}
	budget := &switchBudget{}
	cl := catalogtest.Client(t, catalogtest.ServeStore(t, store, catalog.ServerOptions{Unread: budget}, catalog.GRPCOptions{}))
	req := &catalogpb.ProductMastersRequest{ProductGroupId: catalogtest.BulkGroup, Product1QuantityAtMost: 200, Product1Ids: make([]int64, 200)}
	for i := range req.Product1Ids {
		req.Product1Ids[i] = int64(i + 1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cl.GetProductMasters(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if n := proto.Size(resp); n < 4<<10 {
		t.Fatalf("answer of %d bytes: too small to be counted against the budget", n)
	}
	budget.full.Store(true)
	if _, err := cl.GetProductMasters(ctx, req); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("call with the budget full: %v, want RESOURCE_EXHAUSTED", err)
	}
	if n := store.appends.Load(); n != 1 {
		t.Errorf("store encoded %d answers, want 1: the refused call was looked up", n)
	}
	budget.full.Store(false)
	if _, err := cl.GetProductMasters(ctx, req); err != nil {
		t.Fatalf("call with the budget free again: %v", err)
	}
	for end := time.Now().Add(10 * time.Second); budget.reserved.Load() != 0 && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond)
	}
	if n := budget.reserved.Load(); n != 0 {
		t.Errorf("%d bytes still reserved after every answer was read", n)
	}
}
