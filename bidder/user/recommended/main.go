package recommended

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/rtbd/rtbd/bidder/user/pebblestore"
	"github.com/rtbd/rtbd/bidder/user/userstores"
	"github.com/rtbd/rtbd/configs"
	"github.com/rtbd/rtbd/internal/cliflag"
)

// ErrUsage is wrapped by the errors of a bad command line or config.
var ErrUsage = errors.New("recommended: usage")

// ErrRejected is wrapped by Main's error when lines were rejected or
// failed (the others were written).
var ErrRejected = errors.New("recommended: lines rejected")

type flags struct {
	in, config, data string
	workers          int
	timeout          time.Duration
}

func newFlags(f *flags) *flag.FlagSet {
	fs := flag.NewFlagSet("rtbd users recommend", flag.ContinueOnError)
	fs.StringVar(&f.in, "in", "", "JSON Lines of {\"uid\": U, \"recommended\": [{\"group\": G, \"ids\": [ID, ...]}, ...]}; - for stdin (required)")
	fs.StringVar(&f.config, "config", "", "rtbd config file (default $RTBD_CONFIG; with RTBD_* from the environment): the user store it configures (user.store, redis.addr, aerospike.hosts, user.ttl, user.max_groups)")
	fs.StringVar(&f.data, "data", "", "bidder data directory (bidder.data_dir) of the embedded store: profiles in DIR/users; overrides the config's")
	fs.IntVar(&f.workers, "workers", 16, "writes at once (Redis and Aerospike; the embedded store uses 1)")
	fs.DurationVar(&f.timeout, "timeout", 5*time.Second, "bound of each write")
	return fs
}

// FlagSets returns the flag set of `rtbd users recommend`, for listing its
// flags (the documentation test).
func FlagSets() []*flag.FlagSet { return []*flag.FlagSet{newFlags(&flags{})} }

// Usage documents `rtbd users recommend`.
func Usage(w io.Writer) {
	fmt.Fprintln(w, "rtbd users recommend -in FILE [-config FILE] [flags]   set users' Recommended products from an outside recommender (JSON Lines)")
	fs := newFlags(&flags{})
	fs.SetOutput(w)
	fs.PrintDefaults()
}

// Main is `rtbd users recommend`: it loads the lines of -in into the user
// store the configuration names (Load) and prints a summary. Usage errors
// wrap ErrUsage; -h returns flag.ErrHelp; rejected or failed lines make
// an error wrapping ErrRejected once the rest is written.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var f flags
	fs := newFlags(&f)
	if err := cliflag.ParseNoArgs(fs, args, stderr, ErrUsage); err != nil {
		return err
	}
	if f.in == "" {
		return fmt.Errorf("%w: -in FILE (or -in - for stdin) is required", ErrUsage)
	}
	if f.workers < 1 || f.timeout <= 0 {
		return fmt.Errorf("%w: -workers must be >= 1 and -timeout > 0", ErrUsage)
	}
	if f.config == "" {
		f.config = os.Getenv(configs.EnvConfigPath)
	}
	cfg, err := configs.Load(f.config)
	if err != nil {
		return fmt.Errorf("%w: -config: %w", ErrUsage, err)
	}
	if f.data != "" {
		cfg.Bidder.DataDir = f.data
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("%w: -config %s: %w", ErrUsage, f.config, err)
	}
	in := io.Reader(os.Stdin)
	if f.in != "-" {
		file, err := os.Open(f.in)
		if err != nil {
			return fmt.Errorf("%w: -in: %w", ErrUsage, err)
		}
		defer file.Close()
		in = file
	}
	st, err := openStore(ctx, cfg, logger(stderr))
	if err != nil {
		return err
	}
	o := Options{Limits: st.Limits, Workers: f.workers, Timeout: f.timeout, Rejects: stderr}
	if st.Embedded != nil {
		o.Workers = 1
	}
	start := time.Now()
	sum, err := Load(ctx, st, in, o)
	if cerr := st.Close(); err == nil && cerr != nil {
		err = cerr
	}
	fmt.Fprintf(stdout, "users recommend: %d lines, %d users set (%d cleared), %d rejected, %d failed, to %s in %v\n",
		sum.Lines, sum.Set, sum.Cleared, sum.Rejected, sum.Failed, st.Where, time.Since(start).Round(time.Millisecond))
	if err != nil {
		return err
	}
	if n := sum.Rejected + sum.Failed; n > 0 {
		return fmt.Errorf("%w: %d of %d lines not written (the others were)", ErrRejected, n, sum.Lines)
	}
	return nil
}

// openStore opens the user store cfg configures (userstores.Open). A missing
// address is a usage error (ErrUsage); the embedded store held by a
// running bidder says to stop it for the load.
func openStore(ctx context.Context, cfg *configs.Config, log *zap.Logger) (*userstores.Opened, error) {
	st, err := userstores.Open(ctx, cfg, userstores.Options{Pebble: pebblestore.Options{Logger: log}})
	var ce *userstores.ConfigError
	switch {
	case errors.As(err, &ce):
		return nil, fmt.Errorf("%w: %w", ErrUsage, err)
	case errors.Is(err, userstores.ErrLocked):
		return nil, fmt.Errorf("recommended: stop the bidder for the load: %w", err)
	case err != nil:
		return nil, fmt.Errorf("recommended: %w", err)
	}
	return st, nil
}

// logger logs warnings and errors (Pebble's) to stderr.
func logger(stderr io.Writer) *zap.Logger {
	enc := zap.NewDevelopmentEncoderConfig()
	return zap.New(zapcore.NewCore(zapcore.NewConsoleEncoder(enc), zapcore.AddSync(stderr), zap.WarnLevel))
}
