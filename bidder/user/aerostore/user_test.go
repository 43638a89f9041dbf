package aerostore_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	as "github.com/aerospike/aerospike-client-go/v7"
	"github.com/aerospike/aerospike-client-go/v7/types"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/rtbd/rtbd/bidder/internal/aero"
	"github.com/rtbd/rtbd/bidder/internal/aero/aerostoretest"
	spendaero "github.com/rtbd/rtbd/bidder/spend/aerostore"
	"github.com/rtbd/rtbd/bidder/user"
	"github.com/rtbd/rtbd/bidder/user/aerostore"
	"github.com/rtbd/rtbd/bidder/user/pebblestore"
	"github.com/rtbd/rtbd/bidder/user/usertest"
	"github.com/rtbd/rtbd/internal/aerospiketest"
)

// What the Aerospike stores' tests share.
var (
	testServer      = aerostoretest.Server
	testServerWith  = aerostoretest.ServerWith
	cluster         = aerostoretest.Cluster
	runOptions      = aerostoretest.RunOptions
	deleteAtCleanup = aerostoretest.DeleteAtCleanup
	hostsEnv        = aerostoretest.HostsEnv
)

func TestMain(m *testing.M) { aerostoretest.Main(m, "TestUserStoreCluster") }

func TestUserStore(t *testing.T) {
	runUserTests(t, func(t *testing.T, o aero.Options) (*aerostore.Store, *as.Client) {
		srv, c := testServer(t)
		ro := runOptions("test")
		o.Namespace, o.KeyPrefix = ro.Namespace, ro.KeyPrefix
		return userStore(t, c, o, srv), c
	})
}

func TestUserStoreCluster(t *testing.T) {
	c, ns := cluster(t)
	runUserTests(t, func(t *testing.T, o aero.Options) (*aerostore.Store, *as.Client) {
		ro := runOptions(ns)
		o.Namespace, o.KeyPrefix = ro.Namespace, ro.KeyPrefix
		return userStore(t, c, o, nil), c
	})
}

// userStore returns a user store on c (production set names, o's key
// prefix) whose records are deleted when t ends; with srv, it then checks
// that the server holds no record.
func userStore(t *testing.T, c *as.Client, o aero.Options, srv *aerospiketest.Server) *aerostore.Store {
	t.Helper()
	s := aerostore.New(c, o)
	aerostore.SetUserKeyHook(s, deleteAtCleanup(t, c, srv))
	return s
}

func runUserTests(t *testing.T, newStore func(t *testing.T, o aero.Options) (*aerostore.Store, *as.Client)) {
	ctx := func(t *testing.T) context.Context {
		c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		t.Cleanup(cancel)
		return c
	}
	t.Run("Corrupt", func(t *testing.T) {
		s, c := newStore(t, aero.Options{})
		key, err := as.NewKey(s.Options().Namespace, s.Options().UserSet, s.Options().KeyPrefix+"broken")
		if err != nil {
			t.Fatal(err)
		}
		if err := c.PutBins(nil, key, as.NewBin("p", []byte{0xff, 0x01})); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = c.Delete(nil, key) })
		var p user.Profile
		if _, err := s.Get(ctx(t), "broken", &p); !errors.Is(err, user.ErrCorrupt) {
			t.Errorf("Get of a corrupt profile: %v, want ErrCorrupt", err)
		}
		if err := s.RecordView(ctx(t), "broken", 1, 1); !errors.Is(err, user.ErrCorrupt) {
			t.Errorf("RecordView of a corrupt profile: %v, want ErrCorrupt", err)
		}
	})
	// SameAsPebble: the same views give the same profile as the embedded
	// user.Store, limits included.
	t.Run("SameAsPebble", func(t *testing.T) {
		s, _ := newStore(t, aero.Options{MaxViewed: 3, MaxGroups: 2})
		ref, err := pebblestore.Open("users", pebblestore.Options{FS: vfs.NewMem(), MaxViewed: 3, MaxGroups: 2})
		if err != nil {
			t.Fatal(err)
		}
		defer ref.Close()
		views := [][2]int64{{1, 10}, {1, 11}, {2, 20}, {1, 10}, {3, 30}, {1, 12}, {1, 13}, {2, 21}, {1, 11}}
		for i, v := range views {
			if err := s.RecordView(ctx(t), "u", v[0], v[1]); err != nil {
				t.Fatal(err)
			}
			if err := ref.RecordView(ctx(t), "u", v[0], v[1]); err != nil {
				t.Fatal(err)
			}
			var a, b user.Profile
			if _, err := s.Get(ctx(t), "u", &a); err != nil {
				t.Fatal(err)
			}
			if _, err := ref.Get(ctx(t), "u", &b); err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(a.Viewed) != fmt.Sprint(b.Viewed) {
				t.Fatalf("after view %d: aerospike %v, pebble %v", i, a.Viewed, b.Viewed)
			}
		}
	})
}

func TestUserConformance(t *testing.T) {
	usertest.Run(t, func(t *testing.T, lim usertest.Limits) usertest.Store {
		srv, c := testServer(t)
		o := runOptions(aerospiketest.DefaultNamespace)
		o.MaxGroups, o.MaxViewed, o.UserTTL = lim.MaxGroups, lim.MaxViewed, lim.TTL
		return userStore(t, c, o, srv).WithMatchTTL(lim.MatchTTL)
	})
}

func TestUserConformanceCluster(t *testing.T) {
	c, ns := cluster(t)
	usertest.Run(t, func(t *testing.T, lim usertest.Limits) usertest.Store {
		o := runOptions(ns)
		o.MaxGroups, o.MaxViewed, o.UserTTL = lim.MaxGroups, lim.MaxViewed, lim.TTL
		return userStore(t, c, o, nil).WithMatchTTL(lim.MatchTTL)
	})
}

// TestUserStoreNsupPeriod: under nsup-period 0 a user store with a TTL
// fails Check and every write wrapping ErrTTLRefused, naming nsup-period
// and the namespace; without a TTL it passes; Check leaves no record.
func TestUserStoreNsupPeriod(t *testing.T) {
	srv, c := testServerWith(t, aerospiketest.Options{NsupPeriodZero: true})
	ctx := context.Background()
	want := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, aero.ErrTTLRefused) || !strings.Contains(err.Error(), "nsup-period") || !strings.Contains(err.Error(), `"test"`) {
			t.Errorf("%s under nsup-period 0 = %v, want ErrTTLRefused naming nsup-period and the namespace", what, err)
		}
	}
	s := aerostore.New(c, aero.Options{Namespace: "test", UserTTL: time.Hour})
	want("Check", s.Check(ctx))
	want("Put", s.Put(ctx, "u", &user.Profile{Segments: []string{"a"}}))
	want("RecordView", s.RecordView(ctx, "u", 1, 1))
	m := aerostore.New(c, aero.Options{Namespace: "test"}).WithMatchTTL(time.Hour)
	want("Check (match TTL)", m.Check(ctx))
	want("PutMatch", m.PutMatch(ctx, "k", "u"))
	if err := aerostore.New(c, aero.Options{Namespace: "test"}).Check(ctx); err != nil {
		t.Errorf("Check without a TTL: %v", err)
	}
	if n := srv.Records(); n != 0 {
		t.Errorf("%d records stored", n)
	}

	ok, c2 := testServer(t)
	if err := aerostore.New(c2, aero.Options{Namespace: "test", UserTTL: time.Hour}).WithMatchTTL(time.Minute).Check(ctx); err != nil {
		t.Errorf("Check: %v", err)
	}
	if n := ok.Records(); n != 0 {
		t.Errorf("Check left %d records", n)
	}
}

// TestUserStoreSetLimit: a write to a set the full namespace does not hold
// fails with PARAMETER_ERROR and an error naming the set limit.
func TestUserStoreSetLimit(t *testing.T) {
	_, c := testServerWith(t, aerospiketest.Options{MaxSets: 1})
	k, err := as.NewKey("test", "other", "k")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.PutBins(nil, k, as.NewBin("x", 1)); err != nil {
		t.Fatal(err)
	}
	s := aerostore.New(c, aero.Options{Namespace: "test"})
	for what, err := range map[string]error{
		"Check":      s.Check(context.Background()),
		"Put":        s.Put(context.Background(), "u", &user.Profile{Segments: []string{"a"}}),
		"RecordView": s.RecordView(context.Background(), "u", 1, 1),
		"PutMatch":   s.PutMatch(context.Background(), "k", "u"),
	} {
		var ae as.Error
		if !errors.As(err, &ae) || !ae.Matches(types.PARAMETER_ERROR) || !strings.Contains(err.Error(), "4,095 sets") {
			t.Errorf("%s in a namespace without room for a set: %v, want PARAMETER_ERROR naming the set limit", what, err)
		}
	}
}

// TestUserStoreCheckCluster: Check with a user TTL fails naming
// nsup-period exactly when the cluster's namespace has nsup-period 0
// (without allow-ttl-without-nsup), and passes otherwise.
func TestUserStoreCheckCluster(t *testing.T) {
	c, ns := cluster(t)
	info, err := c.GetNodes()[0].RequestInfo(as.NewInfoPolicy(), "namespace/"+ns)
	if err != nil {
		t.Fatal(err)
	}
	conf := ";" + info["namespace/"+ns] + ";"
	refuses := strings.Contains(conf, ";nsup-period=0;") && !strings.Contains(conf, ";allow-ttl-without-nsup=true;")
	o := runOptions(ns)
	o.UserTTL = time.Hour
	checkErr := aerostore.New(c, o).Check(context.Background())
	switch {
	case refuses && (!errors.Is(checkErr, aero.ErrTTLRefused) || !strings.Contains(checkErr.Error(), "nsup-period")):
		t.Errorf("Check on %q (nsup-period 0) = %v, want ErrTTLRefused naming nsup-period", ns, checkErr)
	case !refuses && checkErr != nil:
		t.Errorf("Check on %q: %v", ns, checkErr)
	}
	t.Logf("Check on namespace %q: %v", ns, checkErr)
}

// TestUnknownNamespace: the start-up checks and a write to a namespace the
// cluster lacks fail with INVALID_NAMESPACE and an error naming the
// namespace and aerospike.namespace; against aerospiketest, and the real cluster
// when RTBD_AEROSPIKE_HOSTS is set.
func TestUnknownNamespace(t *testing.T) {
	clients := map[string]*as.Client{}
	_, clients["aerospiketest"] = testServer(t)
	if os.Getenv(hostsEnv) != "" {
		clients["cluster"], _ = cluster(t)
	}
	const ns = "rtbd-no-such-namespace"
	for name, c := range clients {
		o := aero.Options{Namespace: ns, UserTTL: time.Hour}
		us := aerostore.New(c, o)
		for what, err := range map[string]error{
			"user Check":  us.Check(context.Background()),
			"user Put":    us.Put(context.Background(), "u", &user.Profile{Segments: []string{"a"}}),
			"spend Check": spendaero.New(c, o).Check(context.Background()),
		} {
			var ae as.Error
			if !errors.As(err, &ae) || !ae.Matches(types.INVALID_NAMESPACE) || !strings.Contains(err.Error(), `no namespace "`+ns+`"`) || !strings.Contains(err.Error(), "aerospike.namespace") {
				t.Errorf("%s: %s in a namespace the cluster lacks: %v, want INVALID_NAMESPACE naming the namespace and aerospike.namespace", name, what, err)
			}
		}
	}
}
