package demo

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"go.uber.org/zap"

	"github.com/rtbd/rtbd/bidder/campaign"
	"github.com/rtbd/rtbd/bidder/demoimg"
	"github.com/rtbd/rtbd/catalog"
	"github.com/rtbd/rtbd/configs"
	"github.com/rtbd/rtbd/ingest"
	"github.com/rtbd/rtbd/ingest/feedgen"
	"github.com/rtbd/rtbd/rtb/money"
)

var (
	// ErrExists: Generate's directory exists and is not empty (and
	// Options.SkipExisting is false).
	ErrExists = errors.New("demo: output directory exists and is not empty")
	// ErrBadOptions is wrapped by every Options.Validate error.
	ErrBadOptions = errors.New("demo: bad options")
	// ErrUsage is wrapped by DemoMain's and UsersMain's errors for bad
	// flags or arguments.
	ErrUsage = errors.New("demo: usage")
)

// Names of the files and directories in a demo directory.
const (
	FeedFile          = "feed.csv.gz"
	CatalogDir        = "catalog"
	BidderDir         = "bidder"
	UsersDir          = "users" // inside BidderDir: the bidder's data_dir + "/users"
	CampaignsFile     = "campaigns.yaml"
	ConfigFile        = "rtbd.yaml"
	SampleRequestFile = "sample-request.json"
	ReadmeFile        = "README.txt"
)

// Options of a demo. Zero values take the defaults noted.
type Options struct {
	// Dir is the output directory (required). It must not exist or be
	// empty, unless SkipExisting.
	Dir string
	// Products in the feed. Default 20000; at least Groups.
	Products int
	// Groups is the number of product groups (ids 1..Groups). Default 8.
	Groups int
	// Users is the number of demo users. Default 1000.
	Users int
	// Seed selects the content; the same Options write the same content.
	// Default (and 0) 1.
	Seed int64
	// Currency (ISO 4217) of prices, campaigns and the sample request.
	// Default "USD".
	Currency string
	// SkipExisting lets Dir be non-empty and skips each step whose output
	// already exists (the feed file, a published index, the users store, a
	// file), trusting it was written with the same Options. Every output
	// is written atomically (temporary name, then rename), so a step that
	// was interrupted is redone.
	SkipExisting bool
	// Redis and Aerospike, when set, are written to the configuration
	// (redis.addr, aerospike.hosts), and the demo users are loaded into the
	// user store that then picks (user.store auto) instead of the bidder's
	// data directory, so the demo runs as a fleet member would.
	Redis, Aerospike string
	// AerospikeNamespace, when set, is aerospike.namespace.
	AerospikeNamespace string
	// ImageBase, when set, frames the products' image URLs as
	// ImageBase + "<group>/<id>.jpg" (feedgen's form), and the demo bidder
	// serves no pictures; "": the demo bidder's own pictures (plain http on
	// loopback: no product of the demo then fits a secure imp). An https
	// ImageBase makes the products eligible for secure imps, as a load
	// test of Prebid Server traffic needs.
	ImageBase string
}

// Defaults of Options.
const (
	DefaultProducts = 20000
	DefaultGroups   = 8
	DefaultUsers    = 1000
	DefaultSeed     = 1
	DefaultCurrency = "USD"
)

func (o Options) withDefaults() Options {
	if o.Products == 0 {
		o.Products = DefaultProducts
	}
	if o.Groups == 0 {
		o.Groups = DefaultGroups
	}
	if o.Users == 0 {
		o.Users = DefaultUsers
	}
	if o.Seed == 0 {
		o.Seed = DefaultSeed
	}
	if o.Currency == "" {
		o.Currency = DefaultCurrency
	}
	o.Currency = strings.ToUpper(o.Currency)
	return o
}

// maxGroups bounds Groups: every user has 1-3 groups and every group gets
// demo campaigns, so thousands of groups make no sense for a demo.
const maxGroups = 1000

// Validate returns every problem of o (after defaults), each naming its
// option and wrapping ErrBadOptions; nil if o is usable.
func (o Options) Validate() error { return o.validate(true) }

// validate is Validate, with Dir optional when !needDir (WriteUsers).
func (o Options) validate(needDir bool) error {
	o = o.withDefaults()
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrBadOptions}, args...)...))
	}
	if needDir && o.Dir == "" {
		bad("dir: required")
	}
	if o.Groups < 1 || o.Groups > maxGroups {
		bad("groups: must be 1..%d, got %d", maxGroups, o.Groups)
	}
	if o.Products < 1 {
		bad("products: must be >= 1, got %d", o.Products)
	} else if o.Products < o.Groups {
		bad("products: must be >= groups (%d) so that every group has products, got %d", o.Groups, o.Products)
	}
	if o.Users < 1 {
		bad("users: must be >= 1, got %d", o.Users)
	}
	if _, ok := money.Code(o.Currency); !ok {
		bad("currency: %q is not a known ISO 4217 code", o.Currency)
	}
	return errors.Join(errs...)
}

// feedOptions are the feedgen options of the demo feed.
func (o Options) feedOptions() feedgen.Options {
	return feedgen.Options{Products: o.Products, Groups: o.Groups, Seed: o.Seed, Currency: o.Currency}
}

// Result says what Generate wrote. Paths are absolute.
type Result struct {
	Dir           string
	Feed          string // DIR/feed.csv.gz
	Catalog       string // DIR/catalog (catalog.data)
	BidderData    string // DIR/bidder (bidder.data_dir)
	Users         string // DIR/bidder/users, or "redis ADDR" / "aerospike HOSTS" (Options.Redis, Options.Aerospike)
	Campaigns     string // DIR/campaigns.yaml (bidder.campaigns)
	Config        string // DIR/rtbd.yaml
	SampleRequest string // DIR/sample-request.json
	Readme        string // DIR/README.txt

	Products, Groups, UserCount int
	// IndexVersion is the published index version; "" when skipped.
	IndexVersion string
	// Rejected is the number of feed rows the ingest rejected (0 expected).
	Rejected int64
	// Skipped lists the outputs left as they were (SkipExisting).
	Skipped []string
	// Curl is a shell command posting the sample request to the bidder
	// configured in rtbd.yaml.
	Curl string
}

// Generate writes the demo o describes into o.Dir (created if needed) and
// returns what it wrote. log may be nil. It stops early, with ctx's error,
// when ctx is done. Errors wrap ErrBadOptions or ErrExists for bad input;
// others are I/O or ingest failures, each naming its step ("demo: index:
// ...").
func Generate(ctx context.Context, o Options, log *zap.Logger) (*Result, error) {
	if err := o.validate(true); err != nil {
		return nil, err
	}
	o = o.withDefaults()
	if log == nil {
		log = zap.NewNop()
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	if err := checkDir(dir, o.SkipExisting); err != nil {
		return nil, err
	}
	r := &Result{
		Dir:           dir,
		Feed:          filepath.Join(dir, FeedFile),
		Catalog:       filepath.Join(dir, CatalogDir),
		BidderData:    filepath.Join(dir, BidderDir),
		Users:         filepath.Join(dir, BidderDir, UsersDir),
		Campaigns:     filepath.Join(dir, CampaignsFile),
		Config:        filepath.Join(dir, ConfigFile),
		SampleRequest: filepath.Join(dir, SampleRequestFile),
		Readme:        filepath.Join(dir, ReadmeFile),
		Products:      o.Products,
		Groups:        o.Groups,
		UserCount:     o.Users,
	}
	cfg, err := configFor(r, o)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(r.BidderData, 0o755); err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	skip := func(path string) bool {
		if !o.SkipExisting {
			return false
		}
		if _, err := os.Stat(path); err != nil {
			return false
		}
		r.Skipped = append(r.Skipped, path)
		log.Info("demo: kept existing output", zap.String("path", path))
		return true
	}

	// 1. The feed.
	if !skip(r.Feed) {
		fo := o.feedOptions()
		fo.ImageBase = strings.TrimSuffix(cfg.Bidder.PublicURL, "/") + demoimg.PathPrefix
		fo.ImageExt = demoimg.Ext
		if o.ImageBase != "" {
			fo.ImageBase, fo.ImageExt = o.ImageBase, ""
		}
		if err := feedgen.WriteFile(r.Feed, fo); err != nil {
			return nil, fmt.Errorf("demo: feed: %w", err)
		}
		log.Info("demo: feed written", zap.String("path", r.Feed), zap.Int("products", o.Products))
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	// 2. The index: kept only when a version is published.
	published := false
	if o.SkipExisting {
		if _, err := catalog.ReadPointer(r.Catalog, catalog.CurrentFile); err == nil {
			published = skip(r.Catalog)
		}
	}
	if !published {
		sum, err := ingest.Run(ctx, ingest.Options{Data: r.Catalog, MaxRejectRatio: 0.01}, []string{r.Feed}, nil)
		if err != nil {
			return nil, fmt.Errorf("demo: index: %w", err)
		}
		r.IndexVersion, r.Rejected = sum.Version, sum.RejectedTotal
		if sum.RejectedTotal > 0 {
			log.Warn("demo: ingest rejected rows", zap.Int64("rejected", sum.RejectedTotal), zap.String("rejects", sum.RejectFile))
		}
		log.Info("demo: index published", zap.String("dir", r.Catalog), zap.String("version", sum.Version), zap.Int64("products", sum.Accepted))
	}

	// 3. The users, written beside and renamed into place when complete.
	if cfg.UserStoreKind() != configs.UserStorePebble {
		n, where, err := LoadUsers(ctx, cfg, o, log)
		if err != nil {
			return nil, err
		}
		r.Users = where
		log.Info("demo: users written", zap.String("store", where), zap.Int("users", n))
	} else if !skip(r.Users) {
		tmp := filepath.Join(dir, BidderDir, "."+UsersDir+".tmp")
		if err := os.RemoveAll(tmp); err != nil {
			return nil, fmt.Errorf("demo: users: %w", err)
		}
		if _, err := WriteUsers(ctx, tmp, o, log); err != nil {
			return nil, err
		}
		if err := os.Rename(tmp, r.Users); err != nil {
			return nil, fmt.Errorf("demo: users: %w", err)
		}
		log.Info("demo: users written", zap.String("dir", r.Users), zap.Int("users", o.Users))
	}

	// 4. The campaigns.
	if !skip(r.Campaigns) {
		groups := make([]int64, o.Groups)
		for i := range groups {
			groups[i] = int64(i + 1)
		}
		data, err := campaign.Marshal(Campaigns(groups, o.Currency))
		if err != nil {
			return nil, fmt.Errorf("demo: campaigns: %w", err)
		}
		if err := writeFileAtomic(r.Campaigns, data); err != nil {
			return nil, fmt.Errorf("demo: campaigns: %w", err)
		}
	}

	// 5. The configuration (built first, above, so that a currency the
	// bidder cannot convert fails before anything is written).
	if !skip(r.Config) {
		data, err := cfg.YAML()
		if err != nil {
			return nil, fmt.Errorf("demo: config: %w", err)
		}
		data = append([]byte("# The rtbd demo's configuration, written by `rtbd gen -demo` (see README.txt).\n"), data...)
		if err := writeFileAtomic(r.Config, data); err != nil {
			return nil, fmt.Errorf("demo: config: %w", err)
		}
	}
	r.Curl = curlLine(r.SampleRequest, bidURL(cfg.Bidder.HTTPListen))

	// 6. The sample request and the README.
	if !skip(r.SampleRequest) {
		if err := writeFileAtomic(r.SampleRequest, SampleRequest(o.Currency)); err != nil {
			return nil, fmt.Errorf("demo: sample request: %w", err)
		}
	}
	if !skip(r.Readme) {
		if err := writeFileAtomic(r.Readme, readme(r, o, cfg.Bidder.HTTPListen)); err != nil {
			return nil, fmt.Errorf("demo: readme: %w", err)
		}
	}
	return r, nil
}

// checkDir refuses an existing non-empty directory unless skipExisting.
func checkDir(dir string, skipExisting bool) error {
	st, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("demo: %s exists and is not a directory", dir)
	}
	if skipExisting {
		return nil
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if len(ents) > 0 {
		return fmt.Errorf("%w: %s (remove it, choose another -out, or pass -skip-existing to keep what is there and redo the rest)", ErrExists, dir)
	}
	return nil
}

// configFor returns the demo's configuration: the defaults with the demo's
// paths and currency (bidder.currency, which needs a rate in the default
// bidder.fx_rates unless it is USD), checked with Validate.
func configFor(r *Result, o Options) (*configs.Config, error) {
	currency := o.Currency
	cfg, err := configs.Default()
	if err != nil {
		return nil, fmt.Errorf("demo: config: %w", err)
	}
	for _, kv := range [][2]string{
		{"catalog.data", r.Catalog},
		{"bidder.data_dir", r.BidderData},
		{"bidder.campaigns", r.Campaigns},
		{"bidder.demo_images", strconv.FormatBool(o.ImageBase == "")},
		{"bidder.currency", currency},
		{"redis.addr", o.Redis},
		{"aerospike.hosts", o.Aerospike},
		{"aerospike.namespace", o.AerospikeNamespace},
	} {
		if kv[1] == "" {
			continue // an option not given keeps the default
		}
		if err := cfg.Set(kv[0], kv[1]); err != nil {
			return nil, fmt.Errorf("demo: config: %w", err)
		}
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("%w: the demo configuration does not validate (has currency %s a rate in bidder.fx_rates?):\n%w", ErrBadOptions, currency, err)
	}
	return cfg, nil
}

// bidURL is the bid endpoint of a bidder listening on listen, as a client
// on this machine reaches it.
func bidURL(listen string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "http://" + listen + "/openrtb2/bid"
	}
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/openrtb2/bid"
}

func curlLine(requestPath, url string) string {
	return "curl -s -H 'Content-Type: application/json' --data @" + shellQuote(requestPath) + " " + url
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+:,@%=", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// writeFileAtomic writes data to a temporary file beside path, syncs it and
// renames it over path.
func writeFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o644)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
	}
	return err
}
