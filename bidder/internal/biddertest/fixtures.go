package biddertest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/rtbd/rtbd/bidder/user"
	"github.com/rtbd/rtbd/catalog/catalogtest"
)

// UserBulk is the sample user of the tests: 9 viewed + 19 recommended
// products of group 1 (its profile is BulkProfile).
const UserBulk = "user-bulk"

// Key is the tests' token key.
var Key = []byte("bidder-test-key-0123456789")

// BulkProfile is UserBulk's profile: viewed products 1..9 and recommended
// 11..29 of catalogtest.BulkGroup, one viewed product of FullGroup.
func BulkProfile() *user.Profile {
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

// CatalogDir builds the catalogtest fixture catalog once per test binary
// and returns its directory (read-only after that; every test opens it).
// TestMain removes it once the tests ran.
var CatalogDir = sync.OnceValue(func() string {
	dir, err := os.MkdirTemp("", "bidder-catalog-")
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

// ReadFile reads a test file, failing t if it cannot.
func ReadFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// WithUser returns the JSON request body with user.buyeruid set to uid
// (keeping the rest of user), and optional top-level edits applied:
// key -> value (nil deletes).
func WithUser(t testing.TB, body []byte, uid string, edits ...any) []byte {
	t.Helper()
	return EditJSON(t, body, func(m map[string]any) {
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

// EditJSON returns the JSON object body after edit changed its decoded
// form (numbers kept as written).
func EditJSON(t testing.TB, body []byte, edit func(m map[string]any)) []byte {
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

// WaitFor polls cond every 5 ms until it holds, failing t after limit (a
// bound on a background loop, not a timing assertion).
func WaitFor(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(limit); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", limit, what)
		}
	}
}

// Load calls fn in a loop on n goroutines until the returned stop is
// called, or the test ends. stop waits for the goroutines to return; it may
// be called more than once.
func Load(t testing.TB, n int, fn func()) (stop func()) {
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
