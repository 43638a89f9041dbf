package bench

import (
	"context"
	"flag"
	"io"
	"sync"
	"sync/atomic"

	"github.com/rtbd/rtbd/internal/cliflag"
)

var (
	flagSetsMu sync.Mutex
	// flagsSeen, while FlagSets runs, is given each scenario's flag set
	// just before it parses its arguments.
	flagsSeen atomic.Pointer[func(*flag.FlagSet)]
)

// seeFlags hands fs to FlagSets when it asked for it.
func seeFlags(fs *flag.FlagSet) {
	if f := flagsSeen.Load(); f != nil {
		(*f)(fs)
	}
}

// parseFlags parses a scenario's flags, which take no positional
// arguments, after seeFlags.
func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer) error {
	seeFlags(fs)
	return cliflag.ParseNoArgs(fs, args, stderr, ErrUsage)
}

// FlagSets returns the flag set of every scenario, exactly as Main builds
// it (each named by its command, "rtbd bench store"): it runs each
// scenario with -h, which stops at parsing; for listing the flags (the
// documentation test).
func FlagSets() []*flag.FlagSet {
	flagSetsMu.Lock()
	defer flagSetsMu.Unlock()
	var out []*flag.FlagSet
	see := func(fs *flag.FlagSet) { out = append(out, fs) }
	flagsSeen.Store(&see)
	defer flagsSeen.Store(nil)
	for _, s := range Scenarios {
		_ = Main(context.Background(), []string{s, "-h"}, io.Discard, io.Discard) // flag.ErrHelp
	}
	return out
}
