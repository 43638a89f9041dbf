package catalog_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/rtbd/rtbd/catalog"
	"github.com/rtbd/rtbd/catalog/catalogpb"
	"github.com/rtbd/rtbd/catalog/catalogtest"
)

func fixtureProduct(g, id int64) *catalogpb.Product {
	for _, p := range catalogtest.Products() {
		if p.ProductGroupId == g && p.ProductId == id {
			return p
		}
	}
	return nil
}

func TestGetProducts(t *testing.T) {
	l, _ := openFixture(t, catalog.LocalOptions{MaxIDs: 10})
	addr := startServer(t, l, nil)
	conn := catalogtest.Conn(t, addr)
	cl := catalogpb.NewCatalogClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	tg, og := int64(catalogtest.TalkGroup), int64(catalogtest.OtherGroup)
	req := &catalogpb.ProductsRequest{Groups: []*catalogpb.ProductKeys{
		{ProductGroupId: tg, ProductIds: []int64{103, 101, catalogtest.OutOfStockID, catalogtest.MissingID, catalogtest.OtherGroupID, 103}},
		{ProductGroupId: og, ProductIds: []int64{catalogtest.OtherGroupID}},
		{ProductGroupId: catalogtest.UnknownGroup, ProductIds: []int64{1}},
	}}
	resp, err := cl.GetProducts(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		g, id   int64
		present bool
	}
	wants := []want{{tg, 103, true}, {tg, 101, true}, {tg, catalogtest.OutOfStockID, true}, {tg, catalogtest.MissingID, false},
		{tg, catalogtest.OtherGroupID, false}, {tg, 103, true}, {og, catalogtest.OtherGroupID, true}, {catalogtest.UnknownGroup, 1, false}}
	if len(resp.Records) != len(wants) {
		t.Fatalf("%d records, want %d", len(resp.Records), len(wants))
	}
	for i, w := range wants {
		r := resp.Records[i]
		if r.ProductGroupId != w.g || r.ProductId != w.id {
			t.Errorf("record %d is %d/%d, want %d/%d", i, r.ProductGroupId, r.ProductId, w.g, w.id)
		}
		if !w.present {
			if len(r.Value) != 0 {
				t.Errorf("record %d (%d/%d): value %x, want empty", i, w.g, w.id, r.Value)
			}
			continue
		}
		var p catalogpb.Product
		if err := catalog.DecodeValue(r.ProductGroupId, r.ProductId, r.Value, &p); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if want := fixtureProduct(w.g, w.id); !proto.Equal(&p, want) {
			t.Errorf("record %d: %v, want %v", i, &p, want)
		}
		if w.id == catalogtest.OutOfStockID && p.InStock {
			t.Errorf("out-of-stock product came back in stock")
		}
	}
	iv := l.IndexVersion()
	if resp.Version.GetGeneration() != iv.Generation || resp.Version.GetContentHash() != iv.ContentHash || iv.ContentHash == 0 || iv.Generation != 1 {
		t.Errorf("version %v, store's %+v", resp.Version, iv)
	}

	// The bytes on the wire are proto.Marshal's.
	b, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	var raw []byte
	if err := conn.Invoke(ctx, catalogpb.Catalog_GetProducts_FullMethodName, &b, &raw, grpc.ForceCodecV2(rawCodec{})); err != nil {
		t.Fatal(err)
	}
	if m, _ := (proto.MarshalOptions{Deterministic: true}).Marshal(resp); string(m) != string(raw) {
		t.Errorf("answer bytes differ from proto.Marshal's:\n%x\n%x", raw, m)
	}

	// Limits and bad input.
	for name, c := range map[string]struct {
		req  *catalogpb.ProductsRequest
		want string
	}{
		"too many ids": {&catalogpb.ProductsRequest{Groups: []*catalogpb.ProductKeys{
			{ProductGroupId: 1, ProductIds: []int64{1, 2, 3, 4, 5, 6}}, {ProductGroupId: 2, ProductIds: []int64{1, 2, 3, 4, 5}}}}, "maximum 10"},
		"group 0":     {&catalogpb.ProductsRequest{Groups: []*catalogpb.ProductKeys{{ProductGroupId: 0, ProductIds: []int64{1}}}}, "product_group_id"},
		"negative id": {&catalogpb.ProductsRequest{Groups: []*catalogpb.ProductKeys{{ProductGroupId: 1, ProductIds: []int64{2, -1}}}}, "product_ids[1]"},
		"id 0":        {&catalogpb.ProductsRequest{Groups: []*catalogpb.ProductKeys{{ProductGroupId: 1, ProductIds: []int64{0}}}}, "product_ids[0]"},
	} {
		_, err := cl.GetProducts(ctx, c.req)
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want InvalidArgument naming %q", name, err, c.want)
		}
	}
	// Exactly the limit is fine.
	if _, err := cl.GetProducts(ctx, &catalogpb.ProductsRequest{Groups: []*catalogpb.ProductKeys{
		{ProductGroupId: 1, ProductIds: []int64{1, 2, 3, 4, 5}}, {ProductGroupId: 2, ProductIds: []int64{1, 2, 3, 4, 5}}}}); err != nil {
		t.Errorf("10 ids: %v", err)
	}
	for _, method := range []string{catalogpb.Catalog_GetProducts_FullMethodName, catalogpb.Catalog_GetChanges_FullMethodName} {
		for name, b := range map[string][]byte{
			"truncated varint": {0x0a, 0x02, 0x08, 0xff},
			"bad wire type":    {0x0f},
			"garbage":          []byte(strings.Repeat("\xff\x00", 64)),
		} {
			var out []byte
			err := conn.Invoke(ctx, method, &b, &out, grpc.ForceCodecV2(rawCodec{}))
			if status.Code(err) != codes.InvalidArgument {
				t.Errorf("%s %s: %v, want InvalidArgument", method, name, err)
			}
		}
	}
	// A cancelled call reads nothing.
	cctx, ccancel := context.WithCancel(context.Background())
	ccancel()
	if _, _, _, err := l.AppendProducts(cctx, req, nil); err == nil {
		t.Errorf("AppendProducts with a cancelled context: no error")
	}
}

func TestGetProductMastersCarriesVersion(t *testing.T) {
	l, _ := openFixture(t, catalog.LocalOptions{})
	want := l.IndexVersion()
	req := &catalogpb.ProductMastersRequest{ProductGroupId: catalogtest.TalkGroup, Product1QuantityAtMost: 3, Product1Ids: []int64{101, 102}}
	resp, err := l.GetProductMasters(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Version.GetContentHash() != want.ContentHash || resp.Version.GetGeneration() != want.Generation || want.ContentHash == 0 {
		t.Errorf("plain path version %v, want %+v", resp.Version, want)
	}
	cl := catalogpb.NewCatalogClient(catalogtest.Conn(t, startServer(t, l, nil)))
	wresp, err := cl.GetProductMasters(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if wresp.Version.GetContentHash() != want.ContentHash || wresp.Version.GetGeneration() != want.Generation || len(wresp.Product1S) != 2 {
		t.Errorf("wire path answer %v, want version %+v", wresp, want)
	}
}

func mkProduct(g, id int64, title string) *catalogpb.Product {
	return &catalogpb.Product{ProductGroupId: g, ProductId: id, Title: title, ImageUrl: "https://i.example.com/x.jpg",
		Width: 300, Height: 300, LandingUrl: "https://shop.example.com/x", PriceMicros: 1000 * id, Currency: "JPY", InStock: id%3 != 0}
}

// build writes a full snapshot of ps and publishes it.
func build(t *testing.T, dir string, ps []*catalogpb.Product) string {
	t.Helper()
	return catalogtest.WriteCatalog(t, dir, ps)
}

// delta applies upserts and deletes to the live version and publishes.
func delta(t *testing.T, dir string, ups []*catalogpb.Product, dels []catalog.ProductKey) *catalog.Builder {
	t.Helper()
	lock, err := catalog.LockDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	base, err := catalog.ReadPointer(dir, catalog.CurrentFile)
	if err != nil {
		t.Fatal(err)
	}
	b, err := catalog.NewDeltaBuilder(dir, base, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ups {
		if err := b.Put(p); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range dels {
		if err := b.Delete(k.Group, k.ID); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.Seal(false); err != nil {
		t.Fatal(err)
	}
	if err := b.PublishSealed(); err != nil {
		t.Fatal(err)
	}
	return b
}

func rollback(t *testing.T, dir string) {
	t.Helper()
	lock, err := catalog.LockDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if _, _, err := catalog.Rollback(dir); err != nil {
		t.Fatal(err)
	}
}

func catalogOf(n int) []*catalogpb.Product {
	var ps []*catalogpb.Product
	for i := int64(1); i <= int64(n); i++ {
		ps = append(ps, mkProduct(1+i%3, i, fmt.Sprintf("product %d", i)))
	}
	return ps
}

func openWatched(t *testing.T, dir string) *catalog.Local {
	t.Helper()
	l, err := catalog.OpenLocal(dir, catalog.LocalOptions{WatchInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func reload(t *testing.T, l *catalog.Local) catalog.IndexVersion {
	t.Helper()
	if _, err := l.Reload(); err != nil {
		t.Fatal(err)
	}
	return l.IndexVersion()
}

func changes(t *testing.T, l *catalog.Local, since catalog.IndexVersion) catalog.Changes {
	t.Helper()
	c, err := l.Changes(since)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func keysOf(ps []*catalogpb.Product, dels ...catalog.ProductKey) []catalog.ProductKey {
	ks := slices.Clone(dels)
	for _, p := range ps {
		ks = append(ks, catalog.ProductKey{Group: p.ProductGroupId, ID: p.ProductId})
	}
	slices.SortFunc(ks, func(a, b catalog.ProductKey) int {
		if a.Group != b.Group {
			return int(a.Group - b.Group)
		}
		return int(a.ID - b.ID)
	})
	return slices.Compact(ks)
}

func TestVersionsGenerationAndChanges(t *testing.T) {
	dir := t.TempDir()
	base := catalogOf(30)
	build(t, dir, base)
	l := openWatched(t, dir)
	v1 := l.IndexVersion()
	if v1.Generation != 1 || v1.ContentHash == 0 {
		t.Fatalf("first version %+v, want generation 1 and a hash", v1)
	}
	if c := changes(t, l, v1); c.Full || len(c.Keys) != 0 || c.Version != v1 {
		t.Errorf("changes since the current version: %+v, want none", c)
	}

	// Delta 1: an update, an insert, a delete, a delete of an absent id and
	// an identical upsert (not a change).
	ups1 := []*catalogpb.Product{mkProduct(2, 1, "new title"), mkProduct(1, 100, "inserted")}
	del1 := catalog.ProductKey{Group: 1, ID: 3}
	same := base[4]
	b := delta(t, dir, append(slices.Clone(ups1), same), []catalog.ProductKey{del1, {Group: 1, ID: 999}})
	v2 := reload(t, l)
	if v2.Generation != 2 || v2.ContentHash == v1.ContentHash || v2.ContentHash != b.ContentHash() || b.ChangedKeys() != 3 {
		t.Fatalf("after a delta: %+v (builder hash %x, %d changed), from %+v", v2, b.ContentHash(), b.ChangedKeys(), v1)
	}
	want1 := keysOf(ups1, del1)
	if c := changes(t, l, v1); c.Full || !slices.Equal(c.Keys, want1) || c.Version != v2 {
		t.Errorf("changes since v1: %+v, want %v", c, want1)
	}

	// Delta 2: since v1 lists the union, since v2 the second delta alone.
	ups2 := []*catalogpb.Product{mkProduct(2, 1, "newer title"), mkProduct(3, 200, "x")}
	del2 := catalog.ProductKey{Group: 3, ID: 5}
	delta(t, dir, ups2, []catalog.ProductKey{del2})
	v3 := reload(t, l)
	if v3.Generation != 3 {
		t.Errorf("generation %d after a second delta, want 3", v3.Generation)
	}
	if c := changes(t, l, v2); c.Full || !slices.Equal(c.Keys, keysOf(ups2, del2)) {
		t.Errorf("changes since v2: %+v, want %v", c, keysOf(ups2, del2))
	}
	union := keysOf(append(slices.Clone(ups1), ups2...), del1, del2)
	for range 2 { // the second answer is the kept one
		if c := changes(t, l, v1); c.Full || !slices.Equal(c.Keys, union) {
			t.Errorf("changes since v1: %+v, want %v", c, union)
		}
	}
	if c := changes(t, l, catalog.IndexVersion{Generation: 1, ContentHash: 12345}); !c.Full {
		t.Errorf("changes since an unknown version: %+v, want full", c)
	}

	// The delta's hash is the hash of the same content built in full.
	final := map[catalog.ProductKey]*catalogpb.Product{}
	for _, p := range base {
		final[catalog.ProductKey{Group: p.ProductGroupId, ID: p.ProductId}] = p
	}
	for _, p := range append(slices.Clone(ups1), ups2...) {
		final[catalog.ProductKey{Group: p.ProductGroupId, ID: p.ProductId}] = p
	}
	delete(final, del1)
	delete(final, del2)
	other := t.TempDir()
	var ps []*catalogpb.Product
	for _, p := range final {
		ps = append(ps, p)
	}
	build(t, other, ps)
	if h := openWatched(t, other).IndexVersion().ContentHash; h != v3.ContentHash {
		t.Errorf("full build of the delta's content: hash %x, delta's %x", h, v3.ContentHash)
	}

	// A rollback re-publishes v2 with a new generation; v3's clients get full.
	rollback(t, dir)
	v4 := reload(t, l)
	if v4.Generation != 4 || v4.ContentHash != v2.ContentHash {
		t.Errorf("after rollback: %+v, want generation 4 and v2's hash %x", v4, v2.ContentHash)
	}
	if c := changes(t, l, v3); !c.Full {
		t.Errorf("changes since v3 after rollback: %+v, want full", c)
	}
	if c := changes(t, l, v1); c.Full || !slices.Equal(c.Keys, want1) {
		t.Errorf("changes since v1 after rollback to v2: %+v, want %v", c, want1)
	}
	// A full snapshot starts afresh.
	build(t, dir, base)
	v5 := reload(t, l)
	if v5.Generation != 5 || v5.ContentHash != v1.ContentHash {
		t.Errorf("after a full snapshot of v1's products: %+v, want generation 5 and v1's hash", v5)
	}
	if c := changes(t, l, v4); !c.Full {
		t.Errorf("changes since v4 after a full snapshot: %+v, want full", c)
	}
	if c := changes(t, l, v1); c.Full || len(c.Keys) != 0 {
		t.Errorf("changes since v1 (same products): %+v, want none", c)
	}
}

func TestChangesOverGRPC(t *testing.T) {
	dir := t.TempDir()
	build(t, dir, catalogOf(20))
	l := openWatched(t, dir)
	v1 := l.IndexVersion()
	ups := []*catalogpb.Product{mkProduct(2, 4, "changed"), mkProduct(1, 300, "new"), mkProduct(7, 1, "other group")}
	delta(t, dir, ups, nil)
	v2 := reload(t, l)
	cl := catalogpb.NewCatalogClient(catalogtest.Conn(t, startServer(t, l, nil)))
	ctx := context.Background()
	resp, err := cl.GetChanges(ctx, &catalogpb.ChangesRequest{Since: v1.Proto()})
	if err != nil {
		t.Fatal(err)
	}
	want := []*catalogpb.ProductKeys{{ProductGroupId: 1, ProductIds: []int64{300}}, {ProductGroupId: 2, ProductIds: []int64{4}}, {ProductGroupId: 7, ProductIds: []int64{1}}}
	if !proto.Equal(resp, &catalogpb.ChangesResponse{Version: v2.Proto(), Changed: want}) {
		t.Errorf("GetChanges since v1: %v", resp)
	}
	resp, err = cl.GetChanges(ctx, &catalogpb.ChangesRequest{Since: v2.Proto()})
	if err != nil || resp.Full || len(resp.Changed) != 0 || !proto.Equal(resp.Version, v2.Proto()) {
		t.Errorf("GetChanges since the current version: %v, %v", resp, err)
	}
	resp, err = cl.GetChanges(ctx, &catalogpb.ChangesRequest{})
	if err != nil || !resp.Full || !proto.Equal(resp.Version, v2.Proto()) {
		t.Errorf("GetChanges without since: %v, %v; want full", resp, err)
	}
	// Changes too large for one answer are answered full.
	srv := catalog.NewServer(l, catalog.ServerOptions{MaxChangesBytes: 8})
	g, _ := catalog.NewGRPCServer(srv, catalog.GRPCOptions{})
	addr := catalogtest.Serve(t, g)
	resp, err = catalogpb.NewCatalogClient(catalogtest.Conn(t, addr)).GetChanges(ctx, &catalogpb.ChangesRequest{Since: v1.Proto()})
	if err != nil || !resp.Full || len(resp.Changed) != 0 {
		t.Errorf("GetChanges over MaxChangesBytes: %v, %v; want full", resp, err)
	}
}

func TestChainBound(t *testing.T) {
	defer catalog.SetMaxChainKeys(5)()
	dir := t.TempDir()
	build(t, dir, catalogOf(20))
	l := openWatched(t, dir)
	v1 := l.IndexVersion()
	delta(t, dir, []*catalogpb.Product{mkProduct(1, 50, "a"), mkProduct(1, 51, "a"), mkProduct(1, 52, "a")}, nil)
	v2 := reload(t, l)
	delta(t, dir, []*catalogpb.Product{mkProduct(1, 60, "a"), mkProduct(1, 61, "a")}, nil)
	reload(t, l)
	if c := changes(t, l, v1); c.Full || len(c.Keys) != 5 {
		t.Errorf("5 keys in two steps, bound 5: %+v, want them listed", c)
	}
	delta(t, dir, []*catalogpb.Product{mkProduct(1, 70, "a")}, nil)
	reload(t, l)
	if c := changes(t, l, v1); !c.Full {
		t.Errorf("6 keys over bound 5: since v1 %+v, want full (oldest step dropped)", c)
	}
	if c := changes(t, l, v2); c.Full || len(c.Keys) != 3 {
		t.Errorf("since v2: %+v, want the last two steps' 3 keys", c)
	}
	// A delta writing more keys than the bound starts the chain afresh.
	var many []*catalogpb.Product
	for i := int64(0); i < 12; i++ {
		many = append(many, mkProduct(2, 500+i, "b"))
	}
	v4 := l.IndexVersion()
	b := delta(t, dir, many, nil)
	v5 := reload(t, l)
	if c := changes(t, l, v4); !c.Full || b.ChangedKeys() != -1 {
		t.Errorf("a delta of 12 keys, bound 5: %+v (builder %d changed), want full", c, b.ChangedKeys())
	}
	// Its hash still is the content's (computed by a scan).
	all := catalogOf(20)
	for _, id := range []int64{50, 51, 52, 60, 61, 70} {
		all = append(all, mkProduct(1, id, "a"))
	}
	all = append(all, many...)
	other := t.TempDir()
	build(t, other, all)
	if h := openWatched(t, other).IndexVersion().ContentHash; h != v5.ContentHash {
		t.Errorf("hash %x of the same content built in full, delta's %x", h, v5.ContentHash)
	}
}

// A version built before versions carried META opens, its hash computed.
func TestVersionWithoutMeta(t *testing.T) {
	dir := t.TempDir()
	name := build(t, dir, catalogOf(10))
	want := openWatched(t, dir).IndexVersion()
	os.Remove(filepath.Join(catalog.VersionPath(dir, name), "META"))
	os.Remove(filepath.Join(catalog.VersionPath(dir, name), "CHANGES"))
	// CURRENT in the one-line form: generation 0.
	if err := os.WriteFile(filepath.Join(dir, catalog.CurrentFile), []byte(name+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l := openWatched(t, dir)
	if got := l.IndexVersion(); got.ContentHash != want.ContentHash || got.Generation != 0 {
		t.Errorf("version without META: %+v, want hash %x and generation 0", got, want.ContentHash)
	}
	// A delta on it still gets the right hash and a chain from it.
	v0 := l.IndexVersion()
	delta(t, dir, []*catalogpb.Product{mkProduct(1, 77, "x")}, nil)
	v1 := reload(t, l)
	if v1.Generation != 1 {
		t.Errorf("generation after a publish on a one-line CURRENT: %d, want 1", v1.Generation)
	}
	if c := changes(t, l, v0); c.Full || len(c.Keys) != 1 {
		t.Errorf("changes since the version without META: %+v", c)
	}
}

// budget is an UnreadBudget that grants or refuses every reservation and
// counts the bytes it holds.
type budget struct {
	ok   bool
	held atomic.Int64
	asks atomic.Int64
}

func (b *budget) Reserve(_ context.Context, n int) (func(), bool) {
	b.asks.Add(1)
	if !b.ok {
		return nil, false
	}
	b.held.Add(int64(n))
	return func() { b.held.Add(-int64(n)) }, true
}

func TestGetProductsUnreadBudgetAndMetrics(t *testing.T) {
	l, _ := openFixture(t, catalog.LocalOptions{})
	ids := make([]int64, 0, 100)
	for id := int64(1); id <= 100; id++ {
		ids = append(ids, id)
	}
	req := &catalogpb.ProductsRequest{Groups: []*catalogpb.ProductKeys{{ProductGroupId: catalogtest.BulkGroup, ProductIds: ids}}}
	ctx := context.Background()
	for _, ok := range []bool{false, true} {
		reg := prometheus.NewRegistry()
		b := &budget{ok: ok}
		srv := catalog.NewServer(l, catalog.ServerOptions{Unread: b, Registerer: reg})
		g, _ := catalog.NewGRPCServer(srv, catalog.GRPCOptions{})
		cl := catalogpb.NewCatalogClient(catalogtest.Conn(t, catalogtest.Serve(t, g)))
		resp, err := cl.GetProducts(ctx, req)
		switch {
		case !ok && status.Code(err) != codes.ResourceExhausted:
			t.Errorf("budget refusing: %v, want ResourceExhausted", err)
		case ok && (err != nil || len(resp.Records) != 100):
			t.Errorf("budget granting: %d records, %v", len(resp.GetRecords()), err)
		}
		if b.asks.Load() == 0 {
			t.Errorf("budget %v: never asked for a %d-record answer", ok, len(ids))
		}
		waitFor(t, func() bool { return b.held.Load() == 0 }) // written answers give their bytes back
		code := "ResourceExhausted"
		if ok {
			code = "OK"
		}
		if n := testutil.ToFloat64(mustVec(t, reg, "rtbd_catalog_server_method_requests_total", "GetProducts", code)); n != 1 {
			t.Errorf("method_requests_total{GetProducts,%s} = %v, want 1", code, n)
		}
		if ok {
			if n := testutil.ToFloat64(mustVec(t, reg, "rtbd_catalog_server_records_returned_total", "found")); n != 100 {
				t.Errorf("records found %v, want 100", n)
			}
			if _, err := cl.GetChanges(ctx, &catalogpb.ChangesRequest{}); err != nil {
				t.Fatal(err)
			}
			if n := testutil.ToFloat64(mustVec(t, reg, "rtbd_catalog_server_method_requests_total", "GetChanges", "OK")); n != 1 {
				t.Errorf("method_requests_total{GetChanges,OK} = %v, want 1", n)
			}
		}
	}
}

// The plain CatalogServer methods (a server registered with the generated
// RegisterCatalogServer) answer what the raw path does; publishing the
// live version again raises only the generation.
func TestPlainMethodsAndRepublish(t *testing.T) {
	l, dir := openFixture(t, catalog.LocalOptions{})
	srv := catalog.NewServer(l, catalog.ServerOptions{})
	ctx := context.Background()
	req := &catalogpb.ProductsRequest{Groups: []*catalogpb.ProductKeys{{ProductGroupId: catalogtest.TalkGroup, ProductIds: []int64{101, catalogtest.MissingID}}}}
	resp, err := srv.GetProducts(ctx, req)
	if err != nil || len(resp.Records) != 2 || len(resp.Records[0].Value) == 0 || resp.Version.GetContentHash() != l.IndexVersion().ContentHash {
		t.Errorf("plain GetProducts: %v, %v", resp, err)
	}
	if _, err := srv.GetProducts(ctx, &catalogpb.ProductsRequest{Groups: []*catalogpb.ProductKeys{{ProductGroupId: -1}}}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("plain GetProducts of group -1: %v", err)
	}
	v1 := l.IndexVersion()
	lock, err := catalog.LockDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := catalog.Publish(dir, l.Version()); err != nil {
		t.Fatal(err)
	}
	lock.Close()
	v2 := reload(t, l)
	if v2.Generation != v1.Generation+1 || v2.ContentHash != v1.ContentHash {
		t.Errorf("re-published: %+v, was %+v", v2, v1)
	}
	ch, err := srv.GetChanges(ctx, &catalogpb.ChangesRequest{Since: v1.Proto()})
	if err != nil || ch.Full || len(ch.Changed) != 0 || ch.Version.GetGeneration() != v2.Generation {
		t.Errorf("plain GetChanges since the same content: %v, %v", ch, err)
	}
}
