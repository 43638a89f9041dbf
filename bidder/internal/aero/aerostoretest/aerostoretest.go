// Package aerostoretest holds what the tests of rtbd's Aerospike stores
// (bidder/spend/aerostore, bidder/user/aerostore) share: a real v7 client
// on an internal/aerospiketest server or on the cluster of
// RTBD_AEROSPIKE_HOSTS, per-run options, and the deletion of every record
// a test wrote.
package aerostoretest

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	as "github.com/aerospike/aerospike-client-go/v7"

	"github.com/rtbd/rtbd/bidder/internal/aero"
	"github.com/rtbd/rtbd/internal/aerospiketest"
)

// HostsEnv names the variable listing a real cluster's hosts
// (host:port,...); its namespace is RTBD_AEROSPIKE_NAMESPACE, default "test".
const HostsEnv = "RTBD_AEROSPIKE_HOSTS"

// Main runs m, first warning loudly when HostsEnv is not set: the suites
// then run only against the aerospiketest server and the real-cluster
// tests named in clusterTests are skipped.
func Main(m *testing.M, clusterTests string) {
	if os.Getenv(HostsEnv) == "" {
		fmt.Fprintf(os.Stderr, "\n!!! aerostore: %s is not set: the suites ran ONLY against the aerospiketest wire-protocol TEST server;\n!!! the real-cluster runs (%s) are SKIPPED.\n\n", HostsEnv, clusterTests)
	}
	os.Exit(m.Run())
}

// Server starts an aerospiketest server and a real v7 client on it.
func Server(t testing.TB) (*aerospiketest.Server, *as.Client) {
	t.Helper()
	return ServerWith(t, aerospiketest.Options{})
}

// ServerWith starts an aerospiketest server with opts and a real v7 client on it.
func ServerWith(t testing.TB, opts aerospiketest.Options) (*aerospiketest.Server, *as.Client) {
	t.Helper()
	srv, err := aerospiketest.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	cp := as.NewClientPolicy()
	cp.Timeout = 3 * time.Second
	c, err := aero.Connect(srv.Addr(), cp)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return srv, c
}

// Cluster connects to RTBD_AEROSPIKE_HOSTS or skips loudly.
func Cluster(t *testing.T) (*as.Client, string) {
	t.Helper()
	hosts := os.Getenv(HostsEnv)
	if hosts == "" {
		t.Skipf("SKIPPED: %s not set, no real Aerospike Cluster: this suite ran only against the aerospiketest TEST server", HostsEnv)
	}
	c, err := aero.Connect(hosts, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	ns := os.Getenv("RTBD_AEROSPIKE_NAMESPACE")
	if ns == "" {
		ns = "test"
	}
	return c, ns
}

var setSeq atomic.Int64

// runPrefix starts the keys of this test run: on a shared cluster the
// tests use the production set names, with keys no other run uses.
var runPrefix = "test" + strconv.FormatInt(time.Now().UnixNano(), 36) + "|"

// RunOptions are the production set names with a key prefix of this run,
// new for each store.
func RunOptions(ns string) aero.Options {
	return aero.Options{Namespace: ns, KeyPrefix: runPrefix + strconv.FormatInt(setSeq.Add(1), 10) + "|"}
}

// DeleteAtCleanup returns a key hook that remembers every key it sees and
// deletes their records when t ends; with srv, it then checks that the
// server holds no record.
func DeleteAtCleanup(t *testing.T, c *as.Client, srv *aerospiketest.Server) func(*as.Key) {
	t.Helper()
	var mu sync.Mutex
	keys := map[string]*as.Key{}
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, k := range keys {
			if _, err := c.Delete(nil, k); err != nil {
				t.Errorf("delete %v: %v", k, err)
			}
		}
		if srv != nil {
			if n := srv.Records(); n != 0 {
				t.Errorf("%d records left after deleting the store's keys", n)
			}
		}
	})
	return func(k *as.Key) {
		mu.Lock()
		keys[string(k.Digest())] = k
		mu.Unlock()
	}
}
