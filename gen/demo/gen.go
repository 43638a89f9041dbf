package demo

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/rtbd/rtbd/bidder/campaign"
	"github.com/rtbd/rtbd/bidder/campaign/pgsource"
	"github.com/rtbd/rtbd/configs"
	"github.com/rtbd/rtbd/internal/cliflag"
)

func newDemoFlags(o *Options, toPostgres, hint *bool) *flag.FlagSet {
	fs := flag.NewFlagSet("rtbd gen -demo", flag.ContinueOnError)
	fs.BoolVar(hint, "hint", true, "print the commands that start the demo bidder and send it a bid request")
	fs.BoolVar(toPostgres, "campaigns-postgres", false, "also load the campaigns into the PostgreSQL database at $"+EnvCampaignsDSN+
		" (table "+pgsource.Table+", created if absent), for campaigns.source postgres")
	fs.Bool("demo", true, "write a complete demo environment (required for this form)")
	fs.StringVar(&o.Dir, "out", "", "output directory; must not exist or be empty (required)")
	fs.IntVar(&o.Products, "products", DefaultProducts, "number of products in the feed")
	fs.IntVar(&o.Groups, "groups", DefaultGroups, "number of product groups (ids 1..G)")
	fs.IntVar(&o.Users, "users", DefaultUsers, "number of demo users (demo-user-1 ..)")
	fs.Int64Var(&o.Seed, "seed", DefaultSeed, "seed: the same flags write the same content")
	fs.StringVar(&o.Currency, "currency", DefaultCurrency, "ISO 4217 currency of prices, bids and the sample request")
	fs.BoolVar(&o.SkipExisting, "skip-existing", false, "accept an existing -out and keep every output already there")
	fs.StringVar(&o.Redis, "redis", "", "shared Redis host:port: set redis.addr in the config and load the users there")
	fs.StringVar(&o.ImageBase, "image-base", "", "product image URLs: URL<group>/<id>.jpg (an https URL makes the demo's products fit secure imps); empty: pictures the demo bidder serves itself")
	fs.StringVar(&o.Aerospike, "aerospike", "", "shared Aerospike host[:port][,...]: set aerospike.hosts in the config and load the users there")
	fs.StringVar(&o.AerospikeNamespace, "aerospike-namespace", "", "with -aerospike: the namespace of rtbd's sets (aerospike.namespace; empty: its default)")
	return fs
}

type usersFlags struct {
	o      Options
	data   string
	config string
}

func newUsersFlags(u *usersFlags) *flag.FlagSet {
	fs := flag.NewFlagSet("rtbd gen -users", flag.ContinueOnError)
	fs.IntVar(&u.o.Users, "users", 0, "number of users to write: demo-user-1 .. demo-user-N (required)")
	fs.StringVar(&u.data, "data", "", "existing bidder data directory (bidder.data_dir); profiles go to DIR/users (required without -config)")
	fs.StringVar(&u.config, "config", "", "rtbd config file (with RTBD_* from the environment): write to the user store it configures (user.store, redis.addr, aerospike.hosts, user.ttl); -data overrides its bidder.data_dir")
	fs.IntVar(&u.o.Products, "products", DefaultProducts, "products of the feed the users' products come from")
	fs.IntVar(&u.o.Groups, "groups", DefaultGroups, "product groups of that feed")
	fs.Int64Var(&u.o.Seed, "seed", DefaultSeed, "seed of that feed")
	return fs
}

// Usage documents the demo forms of `rtbd gen` (DemoMain, UsersMain).
func Usage(w io.Writer) {
	fmt.Fprintln(w, "rtbd gen -demo -out DIR [flags]   write a complete demo: feed, index, users, campaigns, rtbd.yaml")
	fs := newDemoFlags(&Options{}, new(bool), new(bool))
	fs.SetOutput(w)
	fs.PrintDefaults()
	fmt.Fprintln(w, "rtbd gen -users N -data BIDDERDATA|-config FILE [flags]   write N demo user profiles matching the feed of the flags")
	fs = newUsersFlags(&usersFlags{})
	fs.SetOutput(w)
	fs.PrintDefaults()
}

// DemoMain is `rtbd gen -demo`: it writes a demo environment (Generate)
// and prints what it wrote. Usage errors wrap ErrUsage; -h returns
// flag.ErrHelp.
func DemoMain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var o Options
	var toPostgres, hint bool
	fs := newDemoFlags(&o, &toPostgres, &hint)
	if err := cliflag.ParseNoArgs(fs, args, stderr, ErrUsage); err != nil {
		return err
	}
	dsn := os.Getenv(EnvCampaignsDSN)
	if toPostgres && dsn == "" {
		return fmt.Errorf("%w: -campaigns-postgres needs the database's DSN in $%s", ErrUsage, EnvCampaignsDSN)
	}
	if o.Dir == "" {
		return fmt.Errorf("%w: -demo needs -out DIR", ErrUsage)
	}
	if err := o.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrUsage, err)
	}
	r, err := Generate(ctx, o, genLogger(stderr))
	if err != nil {
		if errors.Is(err, ErrExists) || errors.Is(err, ErrBadOptions) {
			return fmt.Errorf("%w: %w", ErrUsage, err)
		}
		return err
	}
	fmt.Fprintf(stdout, "demo written to %s\n", r.Dir)
	fmt.Fprintf(stdout, "  feed       %s (%d products in %d groups)\n", r.Feed, r.Products, r.Groups)
	if r.IndexVersion != "" {
		fmt.Fprintf(stdout, "  index      %s (version %s)\n", r.Catalog, r.IndexVersion)
	} else {
		fmt.Fprintf(stdout, "  index      %s\n", r.Catalog)
	}
	fmt.Fprintf(stdout, "  users      %s (demo-user-1 .. demo-user-%d)\n", r.Users, r.UserCount)
	fmt.Fprintf(stdout, "  campaigns  %s\n", r.Campaigns)
	if toPostgres {
		n, err := loadCampaigns(ctx, dsn, r.Campaigns)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "  campaigns  %d in PostgreSQL table %s (run with RTBD_CAMPAIGNS_SOURCE=postgres and $%s)\n",
			n, pgsource.Table, EnvCampaignsDSN)
	}
	fmt.Fprintf(stdout, "  config     %s\n", r.Config)
	for _, s := range r.Skipped {
		fmt.Fprintf(stdout, "  kept as it was: %s\n", s)
	}
	if hint {
		fmt.Fprintf(stdout, "run:  rtbd -config %s\nthen: %s\n", shellQuote(r.Config), r.Curl)
	}
	return nil
}

// EnvCampaignsDSN holds the DSN of -campaigns-postgres: the variable the
// bidder reads campaigns.postgres.dsn from, so the secret stays off the
// command line.
const EnvCampaignsDSN = "RTBD_CAMPAIGNS_POSTGRES_DSN"

// loadCampaigns writes the campaigns of the file at path into the campaigns
// table at dsn and returns how many.
func loadCampaigns(ctx context.Context, dsn, path string) (int, error) {
	set, err := campaign.LoadFile(path)
	if err != nil {
		return 0, err
	}
	specs, err := campaign.Specs(set.All())
	if err != nil {
		return 0, err
	}
	if err := pgsource.Load(ctx, dsn, specs); err != nil {
		return 0, fmt.Errorf("demo: campaigns into PostgreSQL: %w", err)
	}
	return len(specs), nil
}

// UsersMain is `rtbd gen -users N -data BIDDERDATA` (without -demo): it
// writes demo user profiles into an existing bidder data directory
// (WriteUsers). Usage errors wrap ErrUsage; -h returns flag.ErrHelp.
func UsersMain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var u usersFlags
	fs := newUsersFlags(&u)
	if err := cliflag.ParseNoArgs(fs, args, stderr, ErrUsage); err != nil {
		return err
	}
	if u.config != "" && u.o.Users > 0 {
		return usersToConfigured(ctx, u, stdout, stderr)
	}
	if u.o.Users <= 0 || u.data == "" {
		return fmt.Errorf("%w: rtbd gen -users N needs N >= 1 and -data BIDDERDATA (or -demo -out DIR for a whole demo)", ErrUsage)
	}
	if err := u.o.validate(false); err != nil {
		return fmt.Errorf("%w: %w", ErrUsage, err)
	}
	if st, err := os.Stat(u.data); err != nil || !st.IsDir() {
		return fmt.Errorf("%w: -data %s: not an existing directory (the bidder's data_dir)", ErrUsage, u.data)
	}
	dir := filepath.Join(u.data, UsersDir)
	n, err := WriteUsers(ctx, dir, u.o, genLogger(stderr))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %d user profiles (demo-user-1 .. demo-user-%d) to %s\n", n, n, dir)
	return nil
}

// usersToConfigured is UsersMain with -config: the profiles go to the user
// store the configuration names (LoadUsers).
func usersToConfigured(ctx context.Context, u usersFlags, stdout, stderr io.Writer) error {
	if err := u.o.validate(false); err != nil {
		return fmt.Errorf("%w: %w", ErrUsage, err)
	}
	cfg, err := configs.Load(u.config)
	if err != nil {
		return fmt.Errorf("%w: -config: %w", ErrUsage, err)
	}
	if u.data != "" {
		cfg.Bidder.DataDir = u.data
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("%w: -config %s: %w", ErrUsage, u.config, err)
	}
	n, where, err := LoadUsers(ctx, cfg, u.o, genLogger(stderr))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %d user profiles (demo-user-1 .. demo-user-%d) to %s\n", n, n, where)
	return nil
}

// genLogger logs warnings and errors (Pebble's, the ingest's) to stderr.
func genLogger(stderr io.Writer) *zap.Logger {
	enc := zap.NewDevelopmentEncoderConfig()
	return zap.New(zapcore.NewCore(zapcore.NewConsoleEncoder(enc), zapcore.AddSync(stderr), zap.WarnLevel))
}

// FlagSets returns the flag sets of `rtbd gen -demo` and `rtbd gen -users`,
// as their commands parse them (each named by its command); for listing
// the flags (the documentation test).
func FlagSets() []*flag.FlagSet {
	return []*flag.FlagSet{newDemoFlags(&Options{}, new(bool), new(bool)), newUsersFlags(&usersFlags{})}
}
