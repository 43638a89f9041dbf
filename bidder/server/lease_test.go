package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/rtbd/rtbd/bidder/internal/biddertest"
	"github.com/rtbd/rtbd/bidder/spend"
	"github.com/rtbd/rtbd/bidder/spend/redisstore"
	"github.com/rtbd/rtbd/bidder/spend/spendtest"
	"github.com/rtbd/rtbd/bidder/token"
	"github.com/rtbd/rtbd/configs"
)

// configChild is the environment variable that makes the test binary a
// bidder started by Start from the default configuration with the
// settings of its value (a JSON list of [key, value] pairs): it prints
// "ADDR host:port" once serving (or "ERR message" and exits 1), and serves
// until its stdin closes, or it is killed.
const configChild = "BIDDER_CONFIG_CHILD" // not RTBD_*: configs rejects unknown RTBD_ variables

func runConfigChild(sets string) int {
	var kv [][2]string
	cfg, err := configs.Default()
	if err == nil {
		err = json.Unmarshal([]byte(sets), &kv)
	}
	for _, p := range kv {
		if err == nil {
			err = cfg.Set(p[0], p[1])
		}
	}
	if err == nil {
		err = cfg.Validate()
	}
	var s *Server
	if err == nil {
		log, _ := zap.NewDevelopment()
		s, err = Start(cfg, log)
	}
	if err != nil {
		fmt.Printf("ERR %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
		return 1
	}
	fmt.Printf("ADDR %s\n", s.Addr())
	io.Copy(io.Discard, os.Stdin) // until the parent closes it (or dies)
	if err := s.Shutdown(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// startConfigChild starts a bidder process (runConfigChild) with sets and
// returns its process and bid address.
func startConfigChild(t *testing.T, sets [][2]string) (*exec.Cmd, string) {
	t.Helper()
	js, _ := json.Marshal(sets)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), configChild+"="+string(js))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "ADDR ")
	if err != nil || !ok {
		t.Fatalf("bidder child: %q %v", line, err)
	}
	go io.Copy(io.Discard, out)
	return cmd, addr
}

// TestInstanceLease: two bidders with one spend.instance_id on one Redis:
// the second refuses to start, naming the setting. The first, killed
// with SIGKILL holding journaled bills Redis has not seen, and started
// again on its data dir: it takes the lease over within the lease's
// bound (Start fails otherwise), replays its journal into Redis, and the
// same bills sent again are charged nothing more.
func TestInstanceLease(t *testing.T) {
	const bills = 50
	r := spendtest.StartRedis(t, spendtest.RedisOptions{})
	base := testConfig(t)
	sets := [][2]string{
		{"catalog.data", base.Catalog.Data}, {"bidder.http_listen", "127.0.0.1:0"}, {"admin.listen", "127.0.0.1:0"},
		{"bidder.data_dir", base.Bidder.DataDir}, {"bidder.campaigns", base.Bidder.Campaigns},
		{"bidder.public_url", base.Bidder.PublicURL}, {"bidder.token_keys", string(biddertest.Key)},
		{"redis.addr", r.Addr}, {"user.store", "pebble"},
		{"spend.instance_id", "bidder-a"}, {"spend.instance_lease", "2s"},
		{"spend.flush_interval", "1h"}, // the bills stay in the journal until the kill
	}
	cmd, addr := startConfigChild(t, sets)

	// A second bidder with the same id (another data dir) refuses.
	dup := testConfig(t)
	for _, kv := range [][2]string{{"redis.addr", r.Addr}, {"spend.instance_id", "bidder-a"}, {"spend.instance_lease", "2s"}} {
		if err := dup.Set(kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	dup.User.Store = "pebble"
	if s, err := Start(dup, zaptest.NewLogger(t)); err == nil {
		s.Shutdown(context.Background())
		t.Fatal("a second live bidder with the same spend.instance_id started")
	} else if !errors.Is(err, spend.ErrLeaseHeld) || !strings.Contains(err.Error(), "spend.instance_id") {
		t.Fatalf("second bidder: %v; want the lease refusal naming spend.instance_id", err)
	}

	keys, err := token.NewKeys(biddertest.Key)
	if err != nil {
		t.Fatal(err)
	}
	paths := make([]string, bills)
	for i := range paths {
		paths[i] = billPath(t, keys, fmt.Sprintf("lease-%d", i), "1.5")
		if st, b := httpDo(t, "GET", "http://"+addr+paths[i], nil); st != 204 {
			t.Fatalf("bill %d: %d %s", i, st, b)
		}
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL: no flush, no lease release
		t.Fatal(err)
	}
	cmd.Wait()

	rdb := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer rdb.Close()
	rs := redisstore.New(rdb, redisstore.Options{})
	day := time.Now().UTC().Format(time.DateOnly)
	total := func() spend.Total {
		got, err := rs.Read(context.Background(), []string{"money"}, day)
		if err != nil {
			t.Fatal(err)
		}
		return got[0]
	}
	if tot := total(); tot.TotalImps != 0 {
		t.Fatalf("redis holds %d impressions before the restart; the test wants them only in the journal", tot.TotalImps)
	}

	again := testConfig(t)
	for _, kv := range sets {
		if err := again.Set(kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	again.Spend.FlushInterval = 100 * time.Millisecond
	start := time.Now()
	s, err := Start(again, zaptest.NewLogger(t))
	if err != nil {
		t.Fatalf("restart after SIGKILL: %v", err)
	}
	defer s.Shutdown(context.Background())
	t.Logf("restart after SIGKILL serving after %s (lease 2s)", time.Since(start).Round(time.Millisecond))
	for i, p := range paths { // the same bills again, at the restarted bidder
		if st, b := httpDo(t, "GET", "http://"+s.Addr()+p, nil); st != 204 {
			t.Fatalf("bill %d again: %d %s", i, st, b)
		}
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if tot := total(); tot.TotalImps != bills || tot.TotalMicros != bills*1500 {
		t.Fatalf("redis holds %d impressions, %d micros; want %d, %d: each bill charged once", tot.TotalImps, tot.TotalMicros, bills, bills*1500)
	}
	if held, other, err := rs.TakeLease(context.Background(), "bidder-a", "someone-else", time.Second); err != nil || !held {
		t.Fatalf("lease after a clean shutdown: held by %q (%v); want released", other, err)
	}
}
