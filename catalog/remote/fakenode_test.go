package remote

import (
	"context"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/rtbd/rtbd/catalog"
	"github.com/rtbd/rtbd/catalog/catalogpb"
	"github.com/rtbd/rtbd/catalog/catalogtest"
)

// productNode is an in-process catalog node on a real loopback gRPC
// server that answers GetProducts from a product map (records built with
// catalog.AppendValue) and GetChanges as the test sets, with versions the
// test controls.
type productNode struct {
	catalogpb.UnimplementedCatalogServer
	addr string
	srv  *grpc.Server

	mu      sync.Mutex
	values  map[ncKey][]byte
	version *catalogpb.IndexVersion
	changes func(since *catalogpb.IndexVersion) (*catalogpb.ChangesResponse, error) // nil: Unimplemented
	asked   [][]ncKey                                                               // ids of every GetProducts call

	productCalls atomic.Int64
	masterCalls  atomic.Int64 // GetProductMasters calls
	changeCalls  atomic.Int64
	stall        atomic.Bool // GetProducts blocks until its ctx is done
}

func startProductNode(t testing.TB, ps []*catalogpb.Product, v *catalogpb.IndexVersion) *productNode {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n := &productNode{addr: lis.Addr().String(), srv: grpc.NewServer()}
	n.set(ps, v)
	catalogpb.RegisterCatalogServer(n.srv, n)
	healthpb.RegisterHealthServer(n.srv, health.NewServer())
	go n.srv.Serve(lis) //nolint:errcheck // returns when stopped
	t.Cleanup(n.srv.Stop)
	return n
}

// set replaces the node's catalog and version.
func (n *productNode) set(ps []*catalogpb.Product, v *catalogpb.IndexVersion) {
	vals := make(map[ncKey][]byte, len(ps))
	for _, p := range ps {
		vals[ncKey{p.ProductGroupId, p.ProductId}] = catalog.AppendValue(nil, p)
	}
	n.mu.Lock()
	n.values, n.version = vals, v
	n.mu.Unlock()
}

func (n *productNode) setChanges(f func(since *catalogpb.IndexVersion) (*catalogpb.ChangesResponse, error)) {
	n.mu.Lock()
	n.changes = f
	n.mu.Unlock()
}

// lastAsked returns the ids of the latest GetProducts call, sorted.
func (n *productNode) lastAsked() []ncKey {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.asked) == 0 {
		return nil
	}
	out := slices.Clone(n.asked[len(n.asked)-1])
	slices.SortFunc(out, func(a, b ncKey) int {
		if a.g != b.g {
			return int(a.g - b.g)
		}
		return int(a.id - b.id)
	})
	return out
}

func (n *productNode) GetProducts(ctx context.Context, req *catalogpb.ProductsRequest) (*catalogpb.ProductsResponse, error) {
	n.productCalls.Add(1)
	if n.stall.Load() {
		<-ctx.Done()
		return nil, status.Error(codes.DeadlineExceeded, "stalled")
	}
	total := 0
	for _, g := range req.GetGroups() {
		if g.GetProductGroupId() <= 0 {
			return nil, status.Errorf(codes.InvalidArgument, "product_group_id must be > 0, got %d", g.GetProductGroupId())
		}
		for _, id := range g.GetProductIds() {
			if id <= 0 {
				return nil, status.Errorf(codes.InvalidArgument, "product id must be > 0, got %d", id)
			}
		}
		total += len(g.GetProductIds())
	}
	if total > catalogtest.MaxIDs {
		return nil, status.Errorf(codes.InvalidArgument, "%d ids, more than %d", total, catalogtest.MaxIDs)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	resp := &catalogpb.ProductsResponse{Version: n.version}
	var asked []ncKey
	for _, g := range req.GetGroups() {
		for _, id := range g.GetProductIds() {
			k := ncKey{g.GetProductGroupId(), id}
			asked = append(asked, k)
			resp.Records = append(resp.Records, &catalogpb.Record{ProductGroupId: k.g, ProductId: k.id, Value: n.values[k]})
		}
	}
	n.asked = append(n.asked, asked)
	return resp, nil
}

func (n *productNode) GetChanges(ctx context.Context, req *catalogpb.ChangesRequest) (*catalogpb.ChangesResponse, error) {
	n.changeCalls.Add(1)
	n.mu.Lock()
	f := n.changes
	n.mu.Unlock()
	if f == nil {
		return nil, status.Error(codes.Unimplemented, "no GetChanges")
	}
	return f(req.GetSince())
}

func ver(gen, hash uint64) *catalogpb.IndexVersion {
	return &catalogpb.IndexVersion{Generation: gen, ContentHash: hash}
}

func productTarget(nodes ...*productNode) string {
	t := "static:///"
	for i, n := range nodes {
		if i > 0 {
			t += ","
		}
		t += n.addr
	}
	return t
}

func (n *productNode) calls() int64 { return n.productCalls.Load() }

// fakeClock is an injected clock (unix ns), safe for concurrent use.
type fakeClock struct{ ns atomic.Int64 }

func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.ns.Store(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	return c
}
func (c *fakeClock) now() int64              { return c.ns.Load() }
func (c *fakeClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// nearClient is a client with the near cache on (bytes) over nodes; clk,
// when non-nil, is its clock.
func nearClient(t testing.TB, bytes int64, clk *fakeClock, nodes ...*productNode) *Client {
	t.Helper()
	c := newTestClient(t, Options{Target: productTarget(nodes...), NearCacheBytes: bytes,
		CallTimeout: 20 * time.Second, MaxIDs: catalogtest.MaxIDs,
		VersionInterval: time.Hour}) // the tests count GetChanges calls: no polls
	if clk != nil {
		c.near.now = clk.now
	}
	return c
}

// batchStore runs every GetProductMasters through GetProductMastersBatch
// (one request), so the conformance suite checks the batch path.
type batchStore struct{ c *Client }

func (b batchStore) GetProductMasters(ctx context.Context, req *catalogpb.ProductMastersRequest) (*catalogpb.ProductMastersResponse, error) {
	resps := []*catalogpb.ProductMastersResponse{nil}
	if err := b.c.GetProductMastersBatch(ctx, []*catalogpb.ProductMastersRequest{req}, resps); err != nil {
		return nil, err
	}
	return resps[0], nil
}

func bgCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// GetProductMasters answers with the rules of catalog's package comment,
// the second list of a similar_to_viewed request from
// catalogtest.SimilarLists (the node resolves it: the client sends such
// requests here).
func (n *productNode) GetProductMasters(ctx context.Context, req *catalogpb.ProductMastersRequest) (*catalogpb.ProductMastersResponse, error) {
	if err := catalog.ValidateRequest(req, 1000); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	g := req.ProductGroupId
	list := func(ids []int64, atMost int32) []*catalogpb.Product {
		var out []*catalogpb.Product
		for _, id := range ids {
			if int32(len(out)) >= atMost {
				break
			}
			v, ok := n.values[ncKey{g, id}]
			if !ok || slices.ContainsFunc(out, func(p *catalogpb.Product) bool { return p.ProductId == id }) {
				continue
			}
			p := new(catalogpb.Product)
			if err := catalog.DecodeValue(g, id, v, p); err != nil || !p.InStock {
				continue
			}
			out = append(out, p)
		}
		return out
	}
	n.masterCalls.Add(1)
	ids2 := req.Product2Ids
	var used []*catalogpb.SimilarList
	if len(ids2) == 0 && req.SimilarToViewed && req.Product2QuantityAtMost > 0 && len(req.Product1Ids) > 0 {
		lists := map[int64][]catalog.Similar{}
		for _, l := range catalogtest.SimilarLists() {
			if l.Group == g {
				lists[l.ID] = l.List
			}
		}
		ids2 = catalog.SimilarIDs(req.Product1Ids, func(id int64) []catalog.Similar { return lists[id] }, 0, nil)
		for _, v := range req.Product1Ids[:min(len(req.Product1Ids), catalog.MaxSimilarViewed)] {
			if v > 0 {
				used = append(used, &catalogpb.SimilarList{ProductGroupId: g, ProductId: v, List: catalog.AppendSimilarValue(nil, lists[v])})
			}
		}
	}
	return &catalogpb.ProductMastersResponse{Product1S: list(req.Product1Ids, req.Product1QuantityAtMost),
		Product2S: list(ids2, req.Product2QuantityAtMost), Version: n.version, SimilarLists: used}, nil
}
