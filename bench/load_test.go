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

// TestSoakWarmupFlag: the soak's -warmup defaults to 30s, and -warmup 0
// (a zero Warmup) stays no warmup through the soak's defaults.
func TestSoakWarmupFlag(t *testing.T) {
	var def string
	for _, fs := range FlagSets() {
		if fs.Name() == "rtbd bench soak" {
			def = fs.Lookup("warmup").DefValue
		}
	}
	if def != "30s" {
		t.Errorf("rtbd bench soak -warmup defaults to %q, want 30s", def)
	}
	if got := (SoakOptions{}).withDefaults().Warmup; got != 0 {
		t.Errorf("a zero soak Warmup becomes %v after the defaults, want none", got)
	}
}
