package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/rtbd/rtbd/bidder/user"
	"github.com/rtbd/rtbd/catalog"
	"github.com/rtbd/rtbd/catalog/catalogtest"
	"google.golang.org/grpc"
)

// The sample user of the tests: 9 viewed + 19 recommended products of
// group 1 (its profile is bulkProfile).
const userBulk = "user-bulk"

var testKey = []byte("bidder-test-key-0123456789")

// specDir holds the OpenRTB sample requests.
const specDir = "../../rtb/testdata"

func bulkProfile() *user.Profile {
	p := &user.Profile{Segments: []string{"shoppers"}}
	var viewed, rec []int64
	for id := int64(1); id <= 9; id++ {
		viewed = append(viewed, id)
	}
	for id := int64(11); id <= 29; id++ {
		rec = append(rec, id)
	}
	p.Viewed = []user.GroupIDs{{Group: catalogtest.BulkGroup, IDs: viewed}, {Group: catalogtest.FullGroup, IDs: []int64{1}}}
	p.Recommended = []user.GroupIDs{{Group: catalogtest.BulkGroup, IDs: rec}}
	return p
}

// catalogDir builds the fixture catalog once per test binary (read-only
// after that; every test opens it).
var catalogDir = sync.OnceValue(func() string {
	dir, err := os.MkdirTemp("", "bidder-server-catalog-")
	if err != nil {
		panic(err)
	}
	catalogtest.WriteFixture(&onceTB{}, dir)
	return dir
})

// onceTB is the testing.TB of the shared fixture build: failures panic.
type onceTB struct{ testing.TB }

func (onceTB) Helper()                   {}
func (onceTB) Fatal(args ...any)         { panic(fmt.Sprint(args...)) }
func (onceTB) Fatalf(f string, a ...any) { panic(fmt.Sprintf(f, a...)) }

func TestMain(m *testing.M) {
	if sets := os.Getenv(configChild); sets != "" {
		os.Exit(runConfigChild(sets))
	}
	code := m.Run()
	os.RemoveAll(catalogDir())
	os.Exit(code)
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// withUser returns the JSON request body with user.buyeruid set to uid
// (keeping the rest of user), and optional top-level edits applied:
// key -> value (nil deletes).
func withUser(t testing.TB, body []byte, uid string, edits ...any) []byte {
	t.Helper()
	return editJSON(t, body, func(m map[string]any) {
		if uid != "" {
			u, _ := m["user"].(map[string]any)
			if u == nil {
				u = map[string]any{}
			}
			u["buyeruid"] = uid
			m["user"] = u
		}
		for i := 0; i+1 < len(edits); i += 2 {
			k := edits[i].(string)
			if edits[i+1] == nil {
				delete(m, k)
			} else {
				m[k] = edits[i+1]
			}
		}
	})
}

// editJSON returns the JSON object body after edit changed its decoded
// form (numbers kept as written).
func editJSON(t testing.TB, body []byte, edit func(m map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// waitFor polls cond every 5 ms until it holds, failing t after limit (a
// bound on a background loop, not a timing assertion).
func waitFor(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(limit); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", limit, what)
		}
	}
}

// load calls fn in a loop on n goroutines until the returned stop is
// called, or the test ends. stop waits for the goroutines to return; it may
// be called more than once.
func load(t testing.TB, n int, fn func()) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				fn()
			}
		}()
	}
	var once sync.Once
	stop = func() {
		once.Do(func() { close(done) })
		wg.Wait()
	}
	t.Cleanup(stop)
	return stop
}

// startCatalogNode serves store over gRPC on 127.0.0.1:0 (a real catalog
// node's server) until b ends.
func startCatalogNode(b testing.TB, store catalog.Store) (string, error) {
	srv := catalog.NewServer(store, catalog.ServerOptions{})
	g, _ := catalog.NewGRPCServer(srv, catalog.GRPCOptions{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	go g.Serve(ln)
	b.Cleanup(func() { stopGRPC(g) })
	return ln.Addr().String(), nil
}

func stopGRPC(g *grpc.Server) {
	done := make(chan struct{})
	go func() { g.GracefulStop(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		g.Stop()
	}
}
