package bidder

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"

	"github.com/rtbd/rtbd/bidder/campaign"
	"github.com/rtbd/rtbd/bidder/internal/biddertest"
	"github.com/rtbd/rtbd/bidder/internal/metrictest"
	"github.com/rtbd/rtbd/bidder/token"
	"github.com/rtbd/rtbd/bidder/user"
	"github.com/rtbd/rtbd/bidder/user/pebblestore"
	"github.com/rtbd/rtbd/catalog"
	"github.com/rtbd/rtbd/catalog/catalogpb"
	"github.com/rtbd/rtbd/catalog/catalogtest"
	"github.com/rtbd/rtbd/rtb/money"
)

// Sample users of the tests (profiles in the real Pebble user store).
const (
	userBulk = biddertest.UserBulk // 9 viewed + 19 recommended products of group 1: 15 shown (medium)
	userFull = "user-full"         // the fixture's full product (group 2000), markup-hostile text
	userNone = "user-none"         // a profile with products of no campaign's group
	// userViewed has the 9 viewed products of userBulk and no Recommended:
	// its recommended products come from the fixture's similar lists.
	userViewed = "user-viewed"
)

// The fixtures shared with the tests of bidder/server (bidder/internal/biddertest),
// by the short names these tests use.
var (
	testKey     = biddertest.Key
	bulkProfile = biddertest.BulkProfile
	catalogDir  = biddertest.CatalogDir
	readFile    = biddertest.ReadFile
	withUser    = biddertest.WithUser
	editJSON    = biddertest.EditJSON
	waitFor     = biddertest.WaitFor
	load        = biddertest.Load
)

// fixture is a test bidder over real stores: the catalogtest fixture index
// (Pebble), the Pebble user store, campaigns parsed from a YAML file.
type fixture struct {
	t        testing.TB
	b        *Bidder
	opts     Options
	local    *catalog.Local
	users    *pebblestore.Store
	set      *campaign.Set
	keys     *token.Keys
	reg      *prometheus.Registry
	ln       *fasthttputil.InmemoryListener
	client   *fasthttp.Client
	serveErr chan error
	seq      int // request ids of bidOnce
}

// staticCampaigns is a CampaignSource with a fixed Set.
type staticCampaigns struct{ s *campaign.Set }

func (c staticCampaigns) Current() *campaign.Set { return c.s }

func TestMain(m *testing.M) {
	if mode := os.Getenv(serveChild); mode != "" {
		os.Exit(runChild(mode))
	}
	code := m.Run()
	os.RemoveAll(catalogDir())
	os.Exit(code)
}

func loadCampaigns(t testing.TB, name string) *campaign.Set {
	t.Helper()
	set, err := campaign.LoadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// newFixture starts a bidder on an in-memory listener. edit may change the
// options before New.
func newFixture(t testing.TB, edit func(*Options)) *fixture {
	t.Helper()
	f := &fixture{t: t, reg: prometheus.NewRegistry(), serveErr: make(chan error, 1)}
	var err error
	f.local, err = catalog.OpenLocal(catalogDir(), catalog.LocalOptions{WatchInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.local.Close() })
	f.users, err = pebblestore.Open(filepath.Join(t.TempDir(), "users"), pebblestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.users.Close() })
	ctx := context.Background()
	mustPut := func(uid string, p *user.Profile) {
		if err := f.users.Put(ctx, uid, p); err != nil {
			t.Fatal(err)
		}
	}
	mustPut(userBulk, bulkProfile())
	viewedOnly := bulkProfile()
	viewedOnly.Recommended = nil
	mustPut(userViewed, viewedOnly)
	mustPut(userFull, &user.Profile{Viewed: []user.GroupIDs{{Group: catalogtest.FullGroup, IDs: []int64{1}}}})
	mustPut(userNone, &user.Profile{Viewed: []user.GroupIDs{{Group: catalogtest.TalkGroup, IDs: []int64{101, 102}}}})
	f.set = loadCampaigns(t, "campaigns.yaml")
	f.keys, err = token.NewKeys(testKey)
	if err != nil {
		t.Fatal(err)
	}
	rates, err := money.ParseRates([]string{"JPY=0.0067", "EUR=1.08"})
	if err != nil {
		t.Fatal(err)
	}
	f.opts = Options{
		Products: f.local, Users: f.users, Campaigns: staticCampaigns{f.set}, Keys: f.keys,
		PublicURL: "https://bid.example.com", Rates: rates, Registerer: f.reg,
		CellCache: int(f.local.Stats().HotCapacity), // as Start sets it (remote stores: edit it to 0)
	}
	if edit != nil {
		edit(&f.opts)
	}
	f.b, err = New(f.opts)
	if err != nil {
		t.Fatal(err)
	}
	f.ln = fasthttputil.NewInmemoryListener()
	srv := f.b.NewServer()
	srv.ReadTimeout = 10 * time.Second
	go func() { f.serveErr <- srv.Serve(f.ln) }()
	t.Cleanup(func() {
		f.ln.Close()
		select {
		case <-f.serveErr:
		case <-time.After(5 * time.Second):
			t.Error("fasthttp server did not stop")
		}
	})
	f.client = &fasthttp.Client{
		Dial:                     func(string) (net.Conn, error) { return f.ln.Dial() },
		MaxConnsPerHost:          256,
		ReadTimeout:              10 * time.Second,
		WriteTimeout:             10 * time.Second,
		DisablePathNormalizing:   true,
		NoDefaultUserAgentHeader: true,
	}
	return f
}

// reply is an HTTP answer, copied out of fasthttp's pooled response.
type reply struct {
	status  int
	body    []byte
	headers map[string]string
}

// do sends one request to the bidder and returns the answer.
func (f *fixture) do(method, path string, body []byte, headers ...string) reply {
	f.t.Helper()
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI("http://bidder" + path)
	req.Header.SetMethod(method)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	if body != nil {
		req.SetBody(body)
	}
	if err := f.client.DoTimeout(req, resp, 10*time.Second); err != nil {
		f.t.Fatalf("%s %s: %v", method, path, err)
	}
	r := reply{status: resp.StatusCode(), body: append([]byte(nil), resp.Body()...), headers: map[string]string{}}
	for k, v := range resp.Header.All() {
		r.headers[string(k)] = string(v)
	}
	return r
}

func (f *fixture) bid(body []byte, headers ...string) reply {
	f.t.Helper()
	return f.do(fasthttp.MethodPost, PathBid, body, append([]string{"Content-Type", "application/json"}, headers...)...)
}

// counter returns the value of a counter (or gauge) in the fixture's
// registry, 0 if absent; labels are name=value pairs.
func (f *fixture) counter(name string, labels ...string) float64 {
	f.t.Helper()
	return metrictest.Value(f.t, f.reg, name, labels...)
}

// slowProducts is a TEST WRAPPER around a ProductStore that adds a delay
// before every lookup (honouring ctx, as real stores do): it makes the
// catalog artificially slow for the deadline tests. Not a mock: the lookup
// itself goes to the real store.
type slowProducts struct {
	ProductStore
	delay time.Duration
	calls chan struct{} // optional: told of each call
}

func (s *slowProducts) GetProductMasters(ctx context.Context, req *catalogpb.ProductMastersRequest) (*catalogpb.ProductMastersResponse, error) {
	if s.calls != nil {
		select {
		case s.calls <- struct{}{}:
		default:
		}
	}
	t := time.NewTimer(s.delay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: %w", catalog.ErrDeadline, ctx.Err())
	}
	return s.ProductStore.GetProductMasters(ctx, req)
}

type (
	catalogpbReq  = catalogpb.ProductMastersRequest
	catalogpbResp = catalogpb.ProductMastersResponse
)

// bidCtx returns a RequestCtx holding a POST of body to the bid endpoint,
// reusable across calls of the handler (fasthttp's ServeConn reuses its
// RequestCtx the same way).
func bidCtx(body []byte) *fasthttp.RequestCtx {
	var rc fasthttp.RequestCtx
	rc.Request.Header.SetMethod(fasthttp.MethodPost)
	rc.Request.SetRequestURI(PathBid)
	rc.Request.Header.SetContentType("application/json")
	rc.Request.SetBody(body)
	return &rc
}

// signedUID returns uid signed with the fixture's keys for an hour
// (token.Keys.AppendUID), as a server-side integration passes it.
func (f *fixture) signedUID(uid string) string {
	f.t.Helper()
	s, err := f.keys.AppendUID(nil, uid, time.Now().Add(time.Hour))
	if err != nil {
		f.t.Fatal(err)
	}
	return string(s)
}

// withUserID returns the JSON request body with user = {"id": id} (no
// buyeruid): the exchange's own id, as a request of an exchange that rtbd
// matched through /match carries it.
func withUserID(t testing.TB, body []byte, id string) []byte {
	t.Helper()
	return withUser(t, body, "", "user", map[string]any{"id": id})
}
