// Command rtbd is an OpenRTB bidder (DSP) with an embedded or remote
// product catalog. See README.md and `rtbd -h`.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	_ "time/tzdata" // campaign time zones work without a zoneinfo database on the host

	"go.uber.org/zap"

	"github.com/rtbd/rtbd/admin"
	"github.com/rtbd/rtbd/bench"
	"github.com/rtbd/rtbd/bidder/server"
	"github.com/rtbd/rtbd/bidder/user/recommended"
	"github.com/rtbd/rtbd/catalog/node"
	"github.com/rtbd/rtbd/configs"
	"github.com/rtbd/rtbd/gen/demo"
	"github.com/rtbd/rtbd/ingest"
	"github.com/rtbd/rtbd/records/report"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1 // runtime failure, aborted job
	exitUsage   = 2 // bad flags or config
)

// serverFlags map command-line flags to config keys.
var serverFlags = []struct{ name, key, usage string }{
	{"mode", "mode", "what to serve: bidder (default) or catalog"},
	{"data", "catalog.data", "product index data directory"},
	{"grpc-listen", "catalog.grpc_listen", "gRPC listen address (catalog mode)"},
	{"http-listen", "bidder.http_listen", "bid server listen address (bidder mode)"},
	{"admin-listen", "admin.listen", "admin listener: /healthz /readyz /metrics /debug/pprof"},
	{"catalog", "catalog.target", "remote catalog target (static:///h:p,h:p | dns:///name:port | file:///path); empty = embedded index"},
	{"redis", "redis.addr", "shared Redis host:port (user profiles, spend, frequency, notice keys, fraud lists); empty = embedded Pebble stores"},
	{"aerospike", "aerospike.hosts", "shared Aerospike host[:port],... (user profiles, spend, frequency, notice keys); empty = embedded Pebble stores"},
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, rest := args[0], args[1:]
		switch cmd {
		case "gen":
			return exit(stderr, genMain(ctx, rest, stdout, stderr))
		case "bench":
			return exit(stderr, bench.Main(ctx, rest, stdout, stderr))
		case "ingest":
			return exit(stderr, ingest.Main(ctx, rest, stdout, stderr))
		case "report":
			return exit(stderr, report.Main(ctx, rest, stdout, stderr))
		case "users":
			return exit(stderr, usersMain(ctx, rest, stdout, stderr))
		case "config":
			return exit(stderr, printConfig(rest, stdout, stderr))
		case "help":
			usage(stdout)
			return exitOK
		default:
			fmt.Fprintf(stderr, "rtbd: unknown command %q\n\n", cmd)
			usage(stderr)
			return exitUsage
		}
	}
	cfg, log, err := loadServerConfig("rtbd", args, stdout, stderr)
	if err != nil {
		return exit(stderr, err)
	}
	defer log.Sync()
	switch cfg.Mode {
	case configs.ModeCatalog:
		err = node.Run(ctx, cfg, log)
	case configs.ModeBidder:
		err = server.Run(ctx, cfg, log)
	}
	return exit(stderr, err) // printed once, without a stack trace
}

// loadServerConfig parses the server flags, loads and validates the config.
func loadServerConfig(name string, args []string, stdout, stderr io.Writer) (*configs.Config, *zap.Logger, error) {
	fs, path, vals, sets := newServerFlags(name)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage(stdout)
			return nil, nil, errHelp
		}
		return nil, nil, usageErr(err)
	}
	if fs.NArg() > 0 {
		return nil, nil, usageErr(fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	cfg, err := configs.Load(*path)
	if err != nil {
		return nil, nil, usageErr(err)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for i, f := range serverFlags {
		if set[f.name] {
			if err := cfg.Set(f.key, *vals[i]); err != nil {
				return nil, nil, usageErr(fmt.Errorf("-%s: %w", f.name, err))
			}
		}
	}
	var argvSecrets []string // secrets given in clear on the command line
	for _, kv := range *sets {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, nil, usageErr(fmt.Errorf("-set %q: want key=value", kv))
		}
		if err := cfg.Set(k, v); err != nil {
			return nil, nil, usageErr(fmt.Errorf("-set: %w", err))
		}
		if configs.IsSecret(k) && !strings.HasSuffix(k, configs.FileSuffix) {
			argvSecrets = append(argvSecrets, k)
		}
	}
	if err := cfg.Validate(); err != nil {
		return nil, nil, usageErr(fmt.Errorf("invalid configuration:\n%w", err))
	}
	log, err := admin.NewLogger(cfg.Log, admin.IsTerminal(os.Stderr))
	if err != nil {
		return nil, nil, usageErr(err)
	}
	for _, k := range argvSecrets {
		log.Warn("secret given with -set: the command line is visible to other processes and in /debug/pprof/cmdline; give it in the environment or as "+k+configs.FileSuffix,
			zap.String("key", k), zap.String("env", configs.EnvName(k)))
	}
	return cfg, log, nil
}

// newServerFlags returns the flag set of the servers (and of `rtbd
// config`): -config (default $RTBD_CONFIG), one flag per serverFlags entry
// (vals, in its order) and the repeatable -set.
func newServerFlags(name string) (fs *flag.FlagSet, path *string, vals []*string, sets *multiFlag) {
	fs = flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	path = fs.String("config", os.Getenv(configs.EnvConfigPath), "config file (YAML); defaults: configs/rtbd.yaml, embedded")
	vals = make([]*string, len(serverFlags))
	for i, f := range serverFlags {
		vals[i] = fs.String(f.name, "", f.usage+" ("+f.key+")")
	}
	sets = new(multiFlag)
	fs.Var(sets, "set", "override any setting: -set key=value (repeatable), e.g. -set catalog.block_cache_mb=128")
	return fs, path, vals, sets
}

func printConfig(args []string, stdout, stderr io.Writer) error {
	cfg, _, err := loadServerConfig("rtbd config", args, stdout, stderr)
	if err != nil {
		return err
	}
	b, err := cfg.YAML()
	if err != nil {
		return err
	}
	_, err = stdout.Write(b)
	return err
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

var errHelp = errors.New("help")

// usageError is an error in how rtbd was called (exit code 2); cmd, when
// set, is the command it names ("rtbd gen"), and the text is err's without
// its package's usage prefix.
type usageError struct {
	cmd string
	err error
}

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }
func usageErr(err error) error     { return usageError{err: err} }

// cmdUsageErr labels a usage error of a command (one that wraps a
// package's ErrUsage, "ingest: usage: ...") with the command's name.
func cmdUsageErr(cmd string, err error) error {
	return usageError{cmd: cmd, err: err}
}

// message is the text of a usage error, after its command's name.
func (e usageError) message() string {
	msg := e.err.Error()
	if e.cmd != "" {
		for _, u := range []error{ingest.ErrUsage, demo.ErrUsage, recommended.ErrUsage} {
			msg = strings.TrimPrefix(msg, u.Error()+": ")
		}
	}
	return msg
}

// exit prints err and maps it to an exit code.
func exit(stderr io.Writer, err error) int {
	var ue usageError
	switch {
	case err == nil, errors.Is(err, errHelp), errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.As(err, &ue) && ue.cmd != "":
		fmt.Fprintf(stderr, "%s: %s\n(%s -h for usage)\n", ue.cmd, ue.message(), ue.cmd)
		return exitUsage
	case errors.As(err, &ue), errors.Is(err, ingest.ErrUsage), errors.Is(err, demo.ErrUsage), errors.Is(err, bench.ErrUsage),
		errors.Is(err, report.ErrUsage):
		fmt.Fprintf(stderr, "rtbd: %v\n(rtbd -h for usage)\n", err)
		return exitUsage
	default:
		fmt.Fprintf(stderr, "rtbd: %v\n", err)
		return exitFailure
	}
}

func usage(w io.Writer) {
	fmt.Fprint(w, `rtbd: an OpenRTB 2.6 bidder (DSP) with an embedded or remote product catalog.

Servers (long-running; SIGTERM/SIGINT stop them gracefully):
  rtbd [-config FILE] [-mode=bidder|catalog] [flags]
      bidder   (default) answers OpenRTB bid requests on -http-listen, reading
               products from the embedded index (-data) or remote catalog
               nodes (-catalog TARGET)
      catalog  serves the product index in -data over gRPC on -grpc-listen
               (h2c, health, reflection)

Server flags (each overrides a config key; so does RTBD_<KEY>, e.g.
RTBD_CATALOG_DATA=/srv/idx; precedence: defaults < -config file < env < flags):
  -config FILE        config file (YAML); the defaults are configs/rtbd.yaml
`)
	for _, f := range serverFlags {
		fmt.Fprintf(w, "  -%-18s %s\n  %-19s (%s)\n", f.name+" V", f.usage, "", f.key)
	}
	fmt.Fprint(w, `  -set KEY=VALUE      any setting by its key, e.g. -set catalog.hot_cache_entries=500000

Jobs:
  rtbd gen [flags]              write a synthetic product feed, or (-demo) a whole demo setup
  rtbd ingest [flags] FEED...   load a product feed into a new index version
  rtbd bench SCENARIO [flags]   measure deployments side by side: store, bidder, all, render, compare (rtbd bench -h)
  rtbd report -records DIR [-by DIMS] [-format F] [-check]  bids, wins, spend... from the log-level records
  rtbd users recommend -in FILE  set users' Recommended products from an outside recommender (JSON Lines)
  rtbd config [server flags]    print the effective configuration (YAML)
  rtbd help                     this text

`)
	genUsage(w)
	fmt.Fprintln(w)
	ingest.Usage(w)
	fmt.Fprintln(w)
	usersUsage(w)
	fmt.Fprint(w, `
Exit codes: 0 success, 1 failure (server error, ingest aborted), 2 usage or
configuration error.
`)
}
