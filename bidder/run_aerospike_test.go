package bidder

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/rtbd/rtbd/bidder/aerostore"
	"github.com/rtbd/rtbd/bidder/aerostore/aerotest"
)

// TestStartAerospikeNsupPeriod: a namespace that refuses writes with a
// TTL (nsup-period 0) stops Start with an error naming the setting and
// nsup-period; a namespace that accepts them starts.
func TestStartAerospikeNsupPeriod(t *testing.T) {
	for _, zero := range []bool{true, false} {
		srv, err := aerotest.Start(aerotest.Options{Namespace: "rtbd", NsupPeriodZero: zero})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = srv.Close() })
		cfg := testConfig(t)
		if err := cfg.Set("aerospike.hosts", srv.Addr()); err != nil {
			t.Fatal(err)
		}
		s, err := Start(cfg, zaptest.NewLogger(t))
		if !zero {
			if err != nil {
				t.Fatalf("Start with nsup-period 120: %v", err)
			}
			s.Shutdown(context.Background())
			continue
		}
		if err == nil {
			s.Shutdown(context.Background())
			t.Fatal("Start with nsup-period 0 succeeded")
		}
		if !errors.Is(err, aerostore.ErrTTLRefused) || !strings.Contains(err.Error(), "aerospike.namespace") || !strings.Contains(err.Error(), "nsup-period") {
			t.Errorf("Start with nsup-period 0: %v, want ErrTTLRefused naming aerospike.namespace and nsup-period", err)
		}
	}
}

// TestStartAerospikeUserStoreNsupPeriod: with user.store aerospike and a
// user.ttl, a namespace that refuses writes with a TTL (nsup-period 0)
// stops Start with an error naming the setting and nsup-period, even when
// the spend store is elsewhere; a namespace that accepts them starts.
func TestStartAerospikeUserStoreNsupPeriod(t *testing.T) {
	for _, zero := range []bool{true, false} {
		srv, err := aerotest.Start(aerotest.Options{Namespace: "rtbd", NsupPeriodZero: zero})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = srv.Close() })
		cfg := testConfig(t)
		for k, v := range map[string]string{"aerospike.hosts": srv.Addr(), "spend.store": "pebble",
			"user.store": "aerospike", "user.ttl": "720h"} {
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
				t.Errorf("the check left %d records", n)
			}
			continue
		}
		if err == nil {
			s.Shutdown(context.Background())
			t.Fatal("Start with nsup-period 0 succeeded")
		}
		if !errors.Is(err, aerostore.ErrTTLRefused) || !strings.Contains(err.Error(), "user.store") || !strings.Contains(err.Error(), "nsup-period") || !strings.Contains(err.Error(), `"rtbd"`) {
			t.Errorf("Start with nsup-period 0: %v, want ErrTTLRefused naming user.store, nsup-period and the namespace", err)
		}
	}
}
