package recommended_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/rtbd/rtbd/bidder/internal/aero"
	"github.com/rtbd/rtbd/bidder/spend/spendtest"
	"github.com/rtbd/rtbd/bidder/user"
	"github.com/rtbd/rtbd/bidder/user/aerostore"
	"github.com/rtbd/rtbd/bidder/user/pebblestore"
	"github.com/rtbd/rtbd/bidder/user/recommended"
	"github.com/rtbd/rtbd/bidder/user/redisstore"
	"github.com/rtbd/rtbd/internal/aerospiketest"
)

// input is a file of good lines, bad ones (each rejected with its number)
// and one uid twice (the later line wins).
const input = `{"uid": "v1", "recommended": [{"group": 1, "ids": [11, 12]}]}
not json
{"uid": "v2", "recommended": [{"group": 2, "ids": [21]}, {"group": 3, "ids": [31, 32, 33]}]}

{"uid": "v3", "recommended": [{"group": 0, "ids": [1]}]}
{"uid": "v1", "recommended": [{"group": 1, "ids": [13]}]}
{"uid": "v4", "recommended": []}` + "\r\n" + `{"uid": "new", "recommended": [{"group": 5, "ids": [50]}]}`

type getter interface {
	Get(ctx context.Context, uid string, p *user.Profile) (bool, error)
	RecordView(ctx context.Context, uid string, group, pid int64) error
	Put(ctx context.Context, uid string, p *user.Profile) error
}

// seed writes the profiles the input updates: viewed products and, for
// v4, recommendations the input removes.
func seed(t *testing.T, s getter) {
	t.Helper()
	ctx := context.Background()
	for _, uid := range []string{"v1", "v2", "v3", "v4"} {
		if err := s.RecordView(ctx, uid, 1, 100); err != nil {
			t.Fatal(err)
		}
	}
	p := user.Profile{Viewed: []user.GroupIDs{{Group: 1, IDs: []int64{100}}}, Recommended: []user.GroupIDs{{Group: 1, IDs: []int64{7}}}}
	if err := s.Put(ctx, "v4", &p); err != nil {
		t.Fatal(err)
	}
}

// check reads back what the input must have left.
func check(t *testing.T, s getter) {
	t.Helper()
	viewed := []user.GroupIDs{{Group: 1, IDs: []int64{100}}}
	for _, tc := range []struct {
		uid         string
		viewed, rec []user.GroupIDs
	}{
		{"v1", viewed, []user.GroupIDs{{Group: 1, IDs: []int64{13}}}},
		{"v2", viewed, []user.GroupIDs{{Group: 2, IDs: []int64{21}}, {Group: 3, IDs: []int64{31, 32, 33}}}},
		{"v3", viewed, nil},
		{"v4", viewed, nil},
		{"new", nil, []user.GroupIDs{{Group: 5, IDs: []int64{50}}}},
	} {
		var p user.Profile
		found, err := s.Get(context.Background(), tc.uid, &p)
		if err != nil || !found {
			t.Fatalf("%s: %v %v", tc.uid, found, err)
		}
		if len(p.Viewed) != len(tc.viewed) || len(tc.viewed) > 0 && !reflect.DeepEqual(p.Viewed, tc.viewed) ||
			len(p.Recommended) != len(tc.rec) || len(tc.rec) > 0 && !reflect.DeepEqual(p.Recommended, tc.rec) {
			t.Errorf("%s: viewed %+v recommended %+v, want %+v and %+v", tc.uid, p.Viewed, p.Recommended, tc.viewed, tc.rec)
		}
	}
}

func run(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	in := filepath.Join(t.TempDir(), "reco.jsonl")
	if err := os.WriteFile(in, []byte(input), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	err := recommended.Main(context.Background(), append([]string{"-in", in}, args...), &out, &errOut)
	return out.String(), errOut.String(), err
}

// wantRun checks Main's answer to input: 8 lines, 4 users set (v1 twice,
// v2, v4 cleared, new), 2 rejected, each named by its number.
func wantRun(t *testing.T, out, errOut string, err error, where string) {
	t.Helper()
	if !errors.Is(err, recommended.ErrRejected) || !strings.Contains(err.Error(), "2 of 8 lines") {
		t.Errorf("Main: %v, want ErrRejected for 2 of 8 lines", err)
	}
	if want := "8 lines, 5 users set (1 cleared), 2 rejected, 0 failed, to " + where; !strings.Contains(out, want) {
		t.Errorf("summary %q, want %q", out, want)
	}
	if !strings.Contains(errOut, "line 2: ") || !strings.Contains(errOut, "line 5: ") || !strings.Contains(errOut, "group id 0") {
		t.Errorf("rejects %q: want lines 2 and 5 with their reasons", errOut)
	}
}

func TestMainPebble(t *testing.T) {
	data := t.TempDir()
	dir := filepath.Join(data, "users")
	s, err := pebblestore.Open(dir, pebblestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	seed(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// A bidder holding the store: another process with it open.
	hold := exec.Command(os.Args[0], "-test.run=^TestHoldStore$")
	hold.Env = append(os.Environ(), "RECOMMENDED_HOLD_STORE="+dir)
	stdin, _ := hold.StdinPipe()
	stdout, _ := hold.StdoutPipe()
	if err := hold.Start(); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "open\n" {
		t.Fatalf("the holding process: %q %v", line, err)
	}
	if _, _, err := run(t, "-data", data); err == nil || !strings.Contains(err.Error(), "held by another process") {
		t.Errorf("with the store open in another process: %v, want an error saying the store is held", err)
	}
	stdin.Close()
	if err := hold.Wait(); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := run(t, "-data", data)
	wantRun(t, out, errOut, err, dir)
	s, err = pebblestore.Open(dir, pebblestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	check(t, s)
}

// TestHoldStore is the process TestMainPebble starts: it opens the store
// in $RECOMMENDED_HOLD_STORE, says "open" and keeps it until stdin closes.
func TestHoldStore(t *testing.T) {
	dir := os.Getenv("RECOMMENDED_HOLD_STORE")
	if dir == "" {
		t.Skip("run by TestMainPebble")
	}
	s, err := pebblestore.Open(dir, pebblestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fmt.Println("open")
	_, _ = io.Copy(io.Discard, os.Stdin)
}

func TestMainRedis(t *testing.T) {
	r := spendtest.StartRedis(t, spendtest.RedisOptions{})
	c := redis.NewClient(&redis.Options{Addr: r.Addr})
	t.Cleanup(func() { c.Close() })
	s := redisstore.New(c, redisstore.Options{Prefix: "reco:"})
	seed(t, s)
	cfg := filepath.Join(t.TempDir(), "rtbd.yaml")
	if err := os.WriteFile(cfg, []byte("redis:\n  addr: "+r.Addr+"\n  prefix: \"reco:\"\nuser:\n  ttl: 2h\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := run(t, "-config", cfg, "-workers", "4")
	wantRun(t, out, errOut, err, "redis "+r.Addr)
	check(t, s)
	if ttl := c.TTL(context.Background(), "reco:u:new").Val(); ttl <= 0 {
		t.Errorf("a profile written by the load has no expiry (TTL %v)", ttl)
	}
}

func TestMainAerospike(t *testing.T) {
	srv, err := aerospiketest.Start(aerospiketest.Options{Namespace: "reco"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	c, err := aero.Connect(srv.Addr(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	s := aerostore.New(c, aero.Options{Namespace: "reco"})
	seed(t, s)
	cfg := filepath.Join(t.TempDir(), "rtbd.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("aerospike:\n  hosts: %s\n  namespace: reco\n", srv.Addr())), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := run(t, "-config", cfg, "-workers", "4")
	wantRun(t, out, errOut, err, "aerospike "+srv.Addr())
	check(t, s)
}

// TestLoadStoreDown: a store that fails for every user stops the load
// with an error naming the line, instead of counting every line as
// rejected.
func TestLoadStoreDown(t *testing.T) {
	r := spendtest.StartRedis(t, spendtest.RedisOptions{})
	c := redis.NewClient(&redis.Options{Addr: r.Addr, MaxRetries: -1})
	s := redisstore.New(c, redisstore.Options{})
	c.Close() // every call fails: client is closed
	in := strings.Repeat(`{"uid": "u", "recommended": []}`+"\n", 1000)
	sum, err := recommended.Load(context.Background(), s, strings.NewReader(in), recommended.Options{Workers: 3})
	if !errors.Is(err, recommended.ErrStore) || !strings.Contains(err.Error(), "line ") {
		t.Fatalf("Load on a closed client: %v, want ErrStore naming a line", err)
	}
	if sum.Set != 0 || sum.Rejected != 0 {
		t.Fatalf("summary %+v: want nothing set or rejected", sum)
	}
}

// TestLoadLongLine: a line over MaxLineBytes is rejected and the next one
// is read.
func TestLoadLongLine(t *testing.T) {
	s, err := pebblestore.Open(t.TempDir(), pebblestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	long := `{"uid": "` + strings.Repeat("x", recommended.MaxLineBytes) + `", "recommended": []}`
	in := long + "\n" + `{"uid": "after", "recommended": [{"group": 1, "ids": [2]}]}`
	var rejects bytes.Buffer
	sum, err := recommended.Load(context.Background(), s, strings.NewReader(in), recommended.Options{Rejects: &rejects})
	if err != nil || sum.Lines != 2 || sum.Rejected != 1 || sum.Set != 1 || !strings.Contains(rejects.String(), "line 1: ") {
		t.Fatalf("%+v %v %q: want line 1 rejected, line 2 set", sum, err, rejects.String())
	}
	var p user.Profile
	if found, err := s.Get(context.Background(), "after", &p); err != nil || !found || !reflect.DeepEqual(p.RecommendedIn(1), []int64{2}) {
		t.Fatalf("the line after a long one: %v %v %+v", found, err, p)
	}
}
