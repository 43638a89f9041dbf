// Package e2e runs rtbd bench's scenarios end to end: real catalog nodes,
// bidders and redis-server as child processes on 127.0.0.1, driven through
// bench.Main as `rtbd bench` would be. The children are this test binary
// re-executed as a small rtbd (fakeRTBD below), so the tests need neither a
// built rtbd binary nor main's wiring of the bench command.
package e2e

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
	"testing"

	"github.com/rtbd/rtbd/admin"
	"github.com/rtbd/rtbd/bidder/server"
	"github.com/rtbd/rtbd/catalog/node"
	"github.com/rtbd/rtbd/configs"
	"github.com/rtbd/rtbd/gen/demo"
)

// asRTBD makes the test binary act as rtbd when re-executed by the bench.
const asRTBD = "BENCH_E2E_AS_RTBD" // not RTBD_*: configs rejects unknown RTBD_ variables

func TestMain(m *testing.M) {
	if os.Getenv(asRTBD) == "1" {
		os.Exit(fakeRTBD(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// fakeRTBD is the part of main.go the bench's children use: `gen` (the
// demo: -demo), and the catalog and bidder servers with main's server flags.
func fakeRTBD(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if len(args) > 1 && args[0] == "gen" && args[1] == "-demo" {
		if err := demo.DemoMain(ctx, args[1:], os.Stdout, os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, "rtbd gen:", err)
			return 1
		}
		return 0
	}
	fs := flag.NewFlagSet("rtbd", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	path := fs.String("config", "", "")
	keys := map[string]string{"mode": "mode", "data": "catalog.data", "grpc-listen": "catalog.grpc_listen",
		"http-listen": "bidder.http_listen", "admin-listen": "admin.listen", "catalog": "catalog.target"}
	vals := map[string]*string{}
	for f := range keys {
		vals[f] = fs.String(f, "", "")
	}
	var sets multi
	fs.Var(&sets, "set", "")
	if err := fs.Parse(args); err != nil {
		fmt.Fprintln(os.Stderr, "rtbd:", err)
		return 2
	}
	cfg, err := configs.Load(*path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "rtbd:", err)
		return 2
	}
	fs.Visit(func(f *flag.Flag) {
		if k, ok := keys[f.Name]; ok && err == nil {
			err = cfg.Set(k, *vals[f.Name])
		}
	})
	for _, kv := range sets {
		k, v, _ := strings.Cut(kv, "=")
		if err == nil {
			err = cfg.Set(k, v)
		}
	}
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "rtbd:", err)
		return 2
	}
	log, err := admin.NewLogger(cfg.Log, false)
	if err != nil {
		fmt.Fprintln(os.Stderr, "rtbd:", err)
		return 2
	}
	defer log.Sync()
	switch cfg.Mode {
	case configs.ModeCatalog:
		err = node.Run(ctx, cfg, log)
	case configs.ModeBidder:
		err = server.Run(ctx, cfg, log)
	default:
		err = errors.New("unknown mode " + cfg.Mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "rtbd:", err)
		return 1
	}
	return 0
}

type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }
