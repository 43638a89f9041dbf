package recommended

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
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
	in, config, data, bidder string
	workers                  int
	timeout                  time.Duration
}

func newFlags(f *flags) *flag.FlagSet {
	fs := flag.NewFlagSet("rtbd users recommend", flag.ContinueOnError)
	fs.StringVar(&f.in, "in", "", "JSON Lines of {\"uid\": U, \"recommended\": [{\"group\": G, \"ids\": [ID, ...]}, ...]}; - for stdin (required)")
	fs.StringVar(&f.config, "config", "", "rtbd config file (default $RTBD_CONFIG; with RTBD_* from the environment): the user store it configures (user.store, redis.addr, aerospike.hosts, user.ttl, user.max_groups)")
	fs.StringVar(&f.data, "data", "", "bidder data directory (bidder.data_dir) of the embedded store: profiles in DIR/users; overrides the config's")
	fs.StringVar(&f.bidder, "bidder", "", "a running bidder's admin listener (http://HOST:PORT): post -in to its POST "+Path+", into that bidder's own user store (the embedded one too, while the bidder runs); not with -config, -data, -workers or -timeout")
	fs.IntVar(&f.workers, "workers", 16, "writes at once (Redis and Aerospike; the embedded store uses 1)")
	fs.DurationVar(&f.timeout, "timeout", 5*time.Second, "bound of each write")
	return fs
}

// FlagSets returns the flag set of `rtbd users recommend`, for listing its
// flags (the documentation test).
func FlagSets() []*flag.FlagSet { return []*flag.FlagSet{newFlags(&flags{})} }

// Usage documents `rtbd users recommend`.
func Usage(w io.Writer) {
	fmt.Fprintln(w, "rtbd users recommend -in FILE [-config FILE | -bidder URL] [flags]   set users' Recommended products from an outside recommender (JSON Lines)")
	fs := newFlags(&flags{})
	fs.SetOutput(w)
	fs.PrintDefaults()
}

// Main is `rtbd users recommend`: it loads the lines of -in into the user
// store the configuration names (Load), or with -bidder posts them to a
// running bidder's admin route (Handler), and prints a summary. Usage errors
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
	if f.bidder != "" {
		var set []string
		fs.Visit(func(fl *flag.Flag) {
			switch fl.Name {
			case "config", "data", "workers", "timeout":
				set = append(set, "-"+fl.Name)
			}
		})
		if len(set) > 0 {
			return fmt.Errorf("%w: -bidder loads through the bidder's own user store: %s does not apply", ErrUsage, strings.Join(set, ", "))
		}
		if err := checkBidderURL(f.bidder); err != nil {
			return err
		}
		return viaBidder(ctx, f, stdout, stderr)
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
	in, closeIn, err := openIn(f.in)
	if err != nil {
		return err
	}
	defer closeIn()
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

// viaBidder is Main with -bidder: it streams -in to the bidder's route and
// reports its Answer as Main reports a load of its own.
func viaBidder(ctx context.Context, f flags, stdout, stderr io.Writer) error {
	in, closeIn, err := openIn(f.in)
	if err != nil {
		return err
	}
	defer closeIn()
	start := time.Now()
	a, err := post(ctx, f.bidder, in)
	if a != nil {
		for _, r := range a.Rejects {
			fmt.Fprintln(stderr, r)
		}
		if n := a.Rejected + a.Failed; n > len(a.Rejects) {
			fmt.Fprintf(stderr, "(%d more rejected lines are counted, not shown)\n", n-len(a.Rejects))
		}
		where := f.bidder
		if a.Store != "" {
			where = a.Store + " through the bidder at " + f.bidder
		}
		fmt.Fprintf(stdout, "users recommend: %d lines, %d users set (%d cleared), %d rejected, %d failed, to %s in %v\n",
			a.Lines, a.Set, a.Cleared, a.Rejected, a.Failed, where, time.Since(start).Round(time.Millisecond))
	}
	if err != nil {
		return err
	}
	if n := a.Rejected + a.Failed; n > 0 {
		return fmt.Errorf("%w: %d of %d lines not written (the others were)", ErrRejected, n, a.Lines)
	}
	return nil
}

// openIn opens -in (- for stdin).
func openIn(name string) (io.Reader, func(), error) {
	if name == "-" {
		return os.Stdin, func() {}, nil
	}
	file, err := os.Open(name)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: -in: %w", ErrUsage, err)
	}
	return file, func() { file.Close() }, nil
}

// openStore opens the user store cfg configures (userstores.Open). A missing
// address is a usage error (ErrUsage); the embedded store held by a
// running bidder says to load through it (-bidder) or stop it.
func openStore(ctx context.Context, cfg *configs.Config, log *zap.Logger) (*userstores.Opened, error) {
	st, err := userstores.Open(ctx, cfg, userstores.Options{Pebble: pebblestore.Options{Logger: log}})
	var ce *userstores.ConfigError
	switch {
	case errors.As(err, &ce):
		return nil, fmt.Errorf("%w: %w", ErrUsage, err)
	case errors.Is(err, userstores.ErrLocked):
		return nil, fmt.Errorf("recommended: load through the running bidder (-bidder http://ADMIN_LISTEN), or stop it for the load: %w", err)
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
