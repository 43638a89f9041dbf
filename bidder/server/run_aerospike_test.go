package server

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/rtbd/rtbd/bidder/internal/aero"
	"github.com/rtbd/rtbd/internal/aerospiketest"
)

// TestStartAerospikeNsupPeriod: a namespace that refuses writes with a
// TTL (nsup-period 0) stops Start with an error naming the setting and
// nsup-period; a namespace that accepts them starts.
func TestStartAerospikeNsupPeriod(t *testing.T) {
	startNsupPeriod(t, nil, "aerospike.namespace")
}

// TestStartAerospikeUserStoreNsupPeriod: with user.store aerospike and a
// user.ttl, a namespace that refuses writes with a TTL (nsup-period 0)
// stops Start with an error naming the setting and nsup-period, even when
// the spend store is elsewhere; a namespace that accepts them starts, and
// the check leaves no record.
func TestStartAerospikeUserStoreNsupPeriod(t *testing.T) {
	startNsupPeriod(t, map[string]string{"spend.store": "pebble", "user.store": "aerospike", "user.ttl": "720h"}, "user.store")
}

// startNsupPeriod starts a bidder with settings on an aerospiketest server
// with nsup-period 0 and 120: the first must fail wrapping ErrTTLRefused,
// naming want, nsup-period and the namespace; the second must start.
func startNsupPeriod(t *testing.T, settings map[string]string, want string) {
	t.Helper()
	for _, zero := range []bool{true, false} {
		srv, err := aerospiketest.Start(aerospiketest.Options{Namespace: "rtbd", NsupPeriodZero: zero})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = srv.Close() })
		cfg := testConfig(t)
		if err := cfg.Set("aerospike.hosts", srv.Addr()); err != nil {
			t.Fatal(err)
		}
		for k, v := range settings {
			if err := cfg.Set(k, v); err != nil {
				t.Fatal(err)
			}
		}
		s, err := Start(cfg, zaptest.NewLogger(t))
		if !zero {
			if err != nil {
				t.Fatalf("Start with nsup-period 120: %v", err)
			}
			s.Shutdown(context.Background())
			if n := srv.Records(); n != 0 {
				t.Errorf("the start-up checks left %d records", n)
			}
			continue
		}
		if err == nil {
			s.Shutdown(context.Background())
			t.Fatal("Start with nsup-period 0 succeeded")
		}
		if !errors.Is(err, aero.ErrTTLRefused) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "nsup-period") || !strings.Contains(err.Error(), `"rtbd"`) {
			t.Errorf("Start with nsup-period 0: %v, want ErrTTLRefused naming %s, nsup-period and the namespace", err, want)
		}
	}
}
