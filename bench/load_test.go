package bench

import (
	"flag"
	"io"
	"reflect"
	"testing"
	"time"
)

// TestWarmupFlag: -warmup 0 is no warmup, in the run and in the report's
// config, although a scenario applies the defaults and describe applies
// them again; without the flag the scenario's default holds.
func TestWarmupFlag(t *testing.T) {
	for args, want := range map[string]time.Duration{"": 2 * time.Second, "0": 0, "300ms": 300 * time.Millisecond} {
		var c common
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		c.register(fs, 1000, 0, time.Second, 2*time.Second)
		argv := []string{}
		if args != "" {
			argv = []string{"-warmup", args}
		}
		if _, err := c.parse(fs, argv, io.Discard); err != nil {
			t.Fatal(err)
		}
		o := BidderOptions{Load: c.load}.withDefaults()
		if o.Load.Warmup != want {
			t.Errorf("-warmup %q: the scenario's warmup is %v, want %v", args, o.Load.Warmup, want)
		}
		if got := o.Load.describe()["warmup"]; got != want.String() {
			t.Errorf("-warmup %q: the report's config says warmup %s, want %s", args, got, want)
		}
	}
}

// TestLoadModelDefaultsIdempotent: applying the defaults twice changes
// nothing, and they keep a zero Warmup none.
func TestLoadModelDefaultsIdempotent(t *testing.T) {
	for _, m := range []LoadModel{{}, {Options: Options{Warmup: time.Second, Concurrency: 4}}, {FindMax: true, MaxRate: 5000}} {
		once := m.withDefaults()
		if twice := once.withDefaults(); !reflect.DeepEqual(once, twice) || once.Warmup != m.Warmup {
			t.Errorf("%+v: defaults once %+v, twice %+v", m, once, twice)
		}
	}
}
