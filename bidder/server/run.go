package server

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	as "github.com/aerospike/aerospike-client-go/v7"
	"github.com/redis/go-redis/v9"

	"github.com/rtbd/rtbd/admin"
	"github.com/rtbd/rtbd/bidder"
	"github.com/rtbd/rtbd/bidder/campaign"
	"github.com/rtbd/rtbd/bidder/campaign/pgsource"
	"github.com/rtbd/rtbd/bidder/creative"
	"github.com/rtbd/rtbd/bidder/exchange"
	"github.com/rtbd/rtbd/bidder/fraud"
	"github.com/rtbd/rtbd/bidder/fx"
	"github.com/rtbd/rtbd/bidder/internal/aero"
	"github.com/rtbd/rtbd/bidder/shading"
	"github.com/rtbd/rtbd/bidder/spend"
	"github.com/rtbd/rtbd/bidder/spend/aerostore"
	"github.com/rtbd/rtbd/bidder/spend/journal"
	"github.com/rtbd/rtbd/bidder/spend/pebblestore"
	"github.com/rtbd/rtbd/bidder/spend/redisstore"
	"github.com/rtbd/rtbd/bidder/supply"
	"github.com/rtbd/rtbd/bidder/token"
	"github.com/rtbd/rtbd/bidder/user/recommended"
	"github.com/rtbd/rtbd/bidder/usersync"
	"github.com/rtbd/rtbd/catalog"
	"github.com/rtbd/rtbd/catalog/remote"
	"github.com/rtbd/rtbd/configs"
	"github.com/rtbd/rtbd/overload"
	"github.com/rtbd/rtbd/rtb/money"
)

// secureImpsRefused reports whether c leaves no https base for secure
// imps: an http public_url and no secure_public_url.
func secureImpsRefused(c configs.Bidder) bool {
	return c.SecurePublicURL == "" && !creative.IsHTTPSURL(c.PublicURL)
}

// optionsFromConfig maps the bidder section of the configuration to
// Options (without the stores, Logger and Registerer): rates parsed, token
// keys built (a random key, with ephemeral true, when none is configured).
func optionsFromConfig(c configs.Bidder) (opts bidder.Options, ephemeral bool, err error) {
	rates, err := money.ParseRates(c.FXRates)
	if err != nil {
		return bidder.Options{}, false, err
	}
	var secrets [][]byte
	for _, k := range c.TokenKeys {
		secrets = append(secrets, []byte(k))
	}
	if len(secrets) == 0 {
		k := make([]byte, 32)
		if _, err := rand.Read(k); err != nil {
			return bidder.Options{}, false, fmt.Errorf("bidder: token key: %w", err)
		}
		secrets, ephemeral = [][]byte{k}, true
	}
	keys, err := token.NewKeys(secrets...)
	if err != nil {
		return bidder.Options{}, false, fmt.Errorf("bidder: bidder.token_keys: %w", err)
	}
	vendor := c.GDPRVendorID
	if vendor < 0 || vendor > 65535 {
		return bidder.Options{}, false, fmt.Errorf("%w: bidder.gdpr_vendor_id %d", bidder.ErrOptions, vendor)
	}
	return bidder.Options{
		Keys:            keys,
		PublicURL:       c.PublicURL,
		ImageResizeURL:  c.ImageResizeURL,
		SecurePublicURL: c.SecurePublicURL,
		NoticeURL:       c.NoticeURL,
		DemoImages:      c.DemoImages,
		Seat:            c.Seat,
		Currency:        c.Currency,
		Rates:           rates,
		DefaultTMax:     c.DefaultTMax,
		MaxTMax:         c.MaxTMax,
		TMaxMargin:      c.TMaxMargin,
		TMaxMarginRatio: c.TMaxMarginRatio,
		MinBudget:       c.MinBudget,
		MaxBodyBytes:    c.MaxBodyBytes,
		MaxDrainBytes:   cmp.Or(c.MaxDrainBytes, -1),
		DrainTimeout:    c.ReadTimeout,
		MaxInFlight:     c.MaxInFlight,
		Overload503:     c.OverloadResponse == "503",
		AbsoluteClicks:  c.ClickLinks == "absolute",
		BannerImpPixel:  c.BannerImpPixel,
		NBRBody:         c.NBRBody,
		GzipMinBytes:    c.GzipMinBytes,
		GDPRVendorID:    uint16(vendor),
		NoticeTTL:       c.NoticeTTL,
		ClickTTL:        c.ClickTTL,
		EventTimeout:    c.EventTimeout,
		AccessLogSample: c.AccessLogSample,
		MaxConns:        c.MaxConns,
		RateLimits:      rateLimitsFromConfig(c.RateLimits),
		DSADomain:       c.DSADomain,
	}, ephemeral, nil
}

// noticeOptions maps the notice section to o.
func noticeOptions(c configs.Notice, o *bidder.Options) {
	o.ReplayWindow = c.ReplayWindow
	o.NoticeClockSkew = c.ClockSkew
	o.PriceEncryptionKey, _ = configs.DecodeKey(c.PriceKeys.Encryption)
	o.PriceIntegrityKey, _ = configs.DecodeKey(c.PriceKeys.Integrity)
}

// userIDFromConfig maps the exchanges map and the uid settings of the user
// section to Options.
func userIDFromConfig(cfg *configs.Config) ([]exchange.Exchange, usersync.Options) {
	var xs []exchange.Exchange
	for _, name := range cfg.Exchanges.Names() {
		x, _ := cfg.Exchanges.Get(name)
		billing, _ := token.ParseBilling(x.Billing) // validated
		enc, _ := configs.DecodeKey(x.PriceKeys.Encryption)
		integ, _ := configs.DecodeKey(x.PriceKeys.Integrity)
		xs = append(xs, exchange.Exchange{Name: name, UIDMacro: x.Macro(), Billing: billing, PriceEncryptionKey: enc, PriceIntegrityKey: integ,
			AllowCIDRs: x.Prefixes(), Domain: x.Domain,
			LossNotices: x.LossNotices, NoticeWait: x.NoticeWait})
	}
	u := cfg.User
	return xs, usersync.Options{CookieName: u.Cookie.Name, CookieDomain: u.Cookie.Domain, CookieMaxAge: u.Cookie.MaxAge,
		TrustQueryUID: u.TrustQueryUID, SyncRedirectHosts: u.SyncRedirectHosts}
}

// ErrDataDirLocked: bidder.data_dir is held by another process (a Pebble
// store's LOCK is taken).
var ErrDataDirLocked = errors.New("bidder: bidder.data_dir is locked")

// dataDirError wraps an error opening a store in bidder.data_dir; a store
// locked by another process (EAGAIN on its LOCK file) says so.
func dataDirError(dir, what string, err error) error {
	if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EWOULDBLOCK) {
		return fmt.Errorf("%w%s: another process holds %s (another rtbd with the same bidder.data_dir?): %w", ErrDataDirLocked, what, dir, err)
	}
	return fmt.Errorf("bidder: bidder.data_dir%s: %w", what, err)
}

// closableStore is a ProductStore the server opened and closes.
type closableStore interface {
	bidder.ProductStore
	Close() error
}

// Server is a running bidder: the stores opened from the configuration,
// the fasthttp server on bidder.http_listen and the admin listener. Start
// it with Start, stop it with Shutdown (or use Run).
type Server struct {
	cfg         *configs.Config
	log         *zap.Logger
	Bidder      *bidder.Bidder
	products    closableStore
	remote      *remote.Client // nil with the local index
	users       ProfileStore
	usersOpened userStoreInfo // the rest of what openUsers opened
	// loads ends when Shutdown begins: it stops a load of
	// POST /admin/users/recommended in progress.
	loads       context.Context
	stopLoads   context.CancelCauseFunc
	campaigns   campaignSource
	rdb         *redis.Client      // nil without redis.addr
	aero        *as.Client         // nil without aerospike.hosts
	spendDB     *pebblestore.Store // the embedded spend store, nil otherwise
	shadeStore  shading.Store      // the spend store's bid shading counts, nil when it has none
	spendW      *spend.Writer
	lease       *spend.Lease     // the instance lease in a shared spend store, nil otherwise
	journal     *journal.Journal // accepted notices until the store has them
	records     *recordsRun      // nil when records are off
	spendClosed bool             // by Shutdown
	budgets     *spend.Budgets
	fraud       *fraud.Lists  // nil without redis.addr
	fx          *fx.File      // nil without bidder.fx_file
	supply      *supply.Store // nil without supply.dir
	http        *fasthttp.Server
	ln          net.Listener
	public      *publicServer // bidder.public_listen's, nil without it
	admin       *admin.Server
	served      chan error

	// The startup spend gate (spendgate.go).
	gateStart time.Time
	gateErr   error       // the startup read's error: the spend store did not answer
	gateDone  atomic.Bool // the startup read finished or timed out
	gateStop  chan struct{}
	gateWG    sync.WaitGroup

	// The bid shading refresh loop (shading.go).
	shadingStop chan struct{}
	shadingWG   sync.WaitGroup
}

// Start opens the product store (the local index at catalog.data, or the
// remote nodes of catalog.target), the user store (user.store) and the
// campaigns (campaigns.source: the watched file, or the PostgreSQL table),
// then serves the bid endpoint and the admin listener (/metrics, /readyz,
// POST /admin/debug/bid, POST /admin/users/recommended, and POST
// /admin/catalog/refresh with a remote catalog). Every failure names the
// setting it comes from; what was opened is closed again.
func Start(cfg *configs.Config, log *zap.Logger) (*Server, error) {
	return StartRegistry(cfg, log, prometheus.NewRegistry())
}

// Registry is where a Server registers its metrics and what its admin
// listener's /metrics serves (a *prometheus.Registry).
type Registry interface {
	prometheus.Registerer
	prometheus.Gatherer
}

// StartRegistry is Start with the metrics in reg, a registry of the
// caller's with nothing registered yet (Start makes a new one).
func StartRegistry(cfg *configs.Config, log *zap.Logger, reg Registry) (_ *Server, err error) {
	if log == nil {
		log = zap.NewNop()
	}
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	s := &Server{cfg: cfg, log: log, served: make(chan error, 1)}
	s.loads, s.stopLoads = context.WithCancelCause(context.Background())
	defer func() {
		if err != nil {
			s.fx.Close()
			s.supply.Close()
			s.stopSpendGate()
			s.stopShading()
			s.closeStores()
		}
	}()
	opts, ephemeral, err := optionsFromConfig(cfg.Bidder)
	if err != nil {
		return nil, err
	}
	opts.Exchanges, opts.UserID = userIDFromConfig(cfg)
	if cfg.Bidder.FXFile != "" {
		if s.fx, opts.Rates, err = fx.NewFile(cfg.Bidder, opts.Rates, log, reg); err != nil {
			return nil, err
		}
	}
	if ephemeral {
		log.Warn("bidder.token_keys is empty: signing with a random key; win, bill and click URLs stop verifying on restart and on other bidders")
	}
	if secureImpsRefused(cfg.Bidder) {
		log.Warn("bidder.public_url is http and bidder.secure_public_url is unset: secure imps (imp.secure=1, every imp from Prebid Server) get no bid (nbr 509)",
			zap.String("public_url", cfg.Bidder.PublicURL))
	}
	if cfg.Catalog.Target == "" {
		local, err := catalog.OpenLocal(cfg.Catalog.Data, catalog.LocalOptionsFromConfig(cfg.Catalog, log, reg))
		if err != nil {
			return nil, fmt.Errorf("bidder: catalog.data: %w", err)
		}
		s.products = local
		// The hot cache hands out the same immutable products, which is
		// what the banner cell cache is keyed by; as many cells as it
		// holds products (0 when catalog.hot_cache_entries is 0).
		opts.CellCache = int(local.Stats().HotCapacity)
	} else {
		ro := remoteOptions(cfg)
		ro.Logger, ro.Registerer = log, reg
		if t := cfg.Catalog.TLS; t.CAFile != "" || t.Enabled() {
			if ro.TLS, err = catalog.ClientTLS(t.CertFile, t.KeyFile, t.CAFile); err != nil {
				return nil, fmt.Errorf("bidder: catalog.tls: %w", err)
			}
		}
		rc, err := remote.New(ro)
		if err != nil {
			return nil, fmt.Errorf("bidder: catalog.target: %w", err)
		}
		s.products, s.remote = rc, rc
		// The near cache, like the local hot cache, hands out the same
		// immutable product until it evicts or retires it: keep the banner
		// cells of catalog.hot_cache_entries products, at most as many as
		// the near cache can hold (none when it is off).
		opts.CellCache = min(cfg.Catalog.HotCacheEntries, rc.NearCacheMaxEntries())
	}
	if s.campaigns, err = openCampaigns(cfg, log, reg); err != nil {
		return nil, err
	}
	if err := s.openSpend(cfg, log, reg); err != nil {
		return nil, err
	}
	if err := s.openUsers(cfg, log, reg); err != nil {
		return nil, err
	}
	s.startSpendGate()
	opts.Spend, opts.Budgets = s.spendW, s.budgets
	if s.fraud != nil {
		opts.Fraud = s.fraud
	}
	if cfg.Supply.Dir != "" {
		if s.supply, err = supply.Open(supply.Options{Dir: cfg.Supply.Dir, Log: log, Registerer: reg}); err != nil {
			return nil, fmt.Errorf("bidder: supply.dir: %w", err)
		}
		s.supply.Start(cfg.Supply.RefreshInterval)
	}
	opts.Supply = s.supply
	if s.journal != nil {
		opts.Journal = s.journal
	}
	opts.Records = s.records.recorder()
	noticeOptions(cfg.Notice, &opts)
	opts.Products, opts.Users, opts.Campaigns = s.products, s.users, s.campaigns
	opts.Logger, opts.Registerer = log, reg
	if cfg.Bidder.GCFloorMB != 0 {
		log.Warn("deprecated config key: it has no effect", zap.String("key", "bidder.gc_floor_mb"), zap.Int("value", cfg.Bidder.GCFloorMB))
	}
	if cfg.Bidder.AdmissionLatency > 0 {
		ao := admissionOptions(cfg)
		ao.Registerer = reg
		opts.Admission = overload.NewAdmission(ao)
	}
	opts.Shading = shadingFromConfig(cfg.Shading)
	if s.Bidder, err = bidder.New(opts); err != nil {
		return nil, err
	}
	s.startShading(cfg.Shading)
	if s.fx != nil {
		s.fx.Start(s.Bidder)
	}
	s.http = s.Bidder.NewServer()
	if cfg.Bidder.PublicListen != "" {
		s.http.Handler = s.Bidder.ExchangeHandler()
	}
	s.http.ReadTimeout = cfg.Bidder.ReadTimeout
	s.http.WriteTimeout = cfg.Bidder.WriteTimeout
	s.http.IdleTimeout = cfg.Bidder.IdleTimeout
	s.http.CloseOnShutdown = true
	s.ln, err = net.Listen("tcp", cfg.Bidder.HTTPListen)
	if err != nil {
		return nil, fmt.Errorf("bidder: bidder.http_listen %s: %w", cfg.Bidder.HTTPListen, err)
	}
	s.admin = admin.New(admin.Options{Addr: cfg.AdminListen(), Logger: log, Gatherer: reg, Checks: s.readyChecks(),
		NoPprof: !cfg.Admin.Pprof})
	s.admin.Handle("POST /admin/debug/bid", s.Bidder.DebugHandler())
	s.admin.Handle("GET /admin/campaigns", s.Bidder.CampaignsHandler())
	s.admin.Handle("GET /admin/shading", s.Bidder.ShadingHandler())
	s.admin.Handle("POST "+recommended.Path, s.recommendedHandler(reg))
	if s.remote != nil {
		s.admin.Handle("POST /admin/catalog/refresh", http.HandlerFunc(s.refresh))
	}
	if s.public, err = s.startPublic(cfg, reg); err != nil {
		s.ln.Close()
		return nil, err
	}
	if err := s.admin.Start(); err != nil {
		s.ln.Close()
		s.public.close()
		return nil, fmt.Errorf("bidder: admin.listen: %w", err)
	}
	bidLn := bidder.Listen(s.ln)
	if allow := s.Bidder.SourceFilter(); allow != nil && s.public != nil {
		if bidLn, err = sourceFilterListener(bidLn, allow, reg); err != nil {
			s.ln.Close()
			s.public.close()
			return nil, fmt.Errorf("bidder: metrics: %w", err)
		}
	}
	go func() { s.served <- s.http.Serve(bidLn) }()
	s.public.serve()
	catalogDesc := "local " + cfg.Catalog.Data
	if s.remote != nil {
		catalogDesc = "remote " + cfg.Catalog.Target
	}
	log.Info("bidder serving", zap.String("http", s.Addr()), zap.String("public", s.PublicAddr()), zap.String("admin", s.admin.Addr()),
		zap.String("catalog", catalogDesc), zap.String("campaigns", campaignsDesc(cfg)),
		zap.Int("campaigns_loaded", s.campaigns.Current().Len()), zap.String("public_url", cfg.Bidder.PublicURL))
	return s, nil
}

// openSpend opens the spend store chosen by spend.store (auto: aerospike
// when aerospike.hosts is set, else redis when redis.addr is set, else the
// embedded Pebble store in bidder.data_dir/spend), the spend Writer and
// Budgets, and the fraud lists when redis.addr is set (loaded once before
// serving; a failed first load is logged and the lists sync later).
func (s *Server) openSpend(cfg *configs.Config, log *zap.Logger, reg prometheus.Registerer) error {
	if cfg.Redis.Addr != "" {
		s.rdb = redis.NewClient(&redis.Options{Addr: cfg.Redis.Addr, ContextTimeoutEnabled: true})
	}
	if cfg.Aerospike.Hosts != "" {
		c, err := aero.Connect(cfg.Aerospike.Hosts, nil)
		if err != nil {
			return fmt.Errorf("bidder: aerospike.hosts: %w", err)
		}
		s.aero = c
	}
	kind := cfg.Spend.Store
	if kind == "" || kind == configs.SpendStoreAuto {
		switch {
		case s.aero != nil:
			kind = configs.SpendStoreAerospike
		case s.rdb != nil:
			kind = configs.SpendStoreRedis
		default:
			kind = configs.SpendStorePebble
		}
	}
	var store spend.Store
	switch kind {
	case configs.SpendStoreRedis:
		if s.rdb == nil {
			return fmt.Errorf("%w: spend.store redis needs redis.addr", bidder.ErrOptions)
		}
		store = redisstore.New(s.rdb, redisstore.Options{Prefix: cfg.Redis.Prefix})
	case configs.SpendStoreAerospike:
		if s.aero == nil {
			return fmt.Errorf("%w: spend.store aerospike needs aerospike.hosts", bidder.ErrOptions)
		}
		st := aerostore.New(s.aero, aero.Options{Namespace: cfg.Aerospike.Namespace})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := st.Check(ctx)
		cancel()
		if err != nil {
			return fmt.Errorf("bidder: aerospike.namespace: %w", err)
		}
		store = st
	default:
		db, err := pebblestore.Open(filepath.Join(cfg.Bidder.DataDir, "spend"), pebblestore.Options{Logger: log})
		if err != nil {
			return dataDirError(cfg.Bidder.DataDir, " (spend)", err)
		}
		s.spendDB, store = db, db
	}
	if st, ok := store.(shading.Store); ok {
		s.shadeStore = st
	}
	instance, err := instanceID(cfg, log)
	if err != nil {
		return err
	}
	if err := s.takeInstanceLease(cfg, store, instance, log); err != nil {
		return err
	}
	if s.records, err = openRecords(cfg, instance, log, reg); err != nil {
		return err
	}
	jo := journalOptions(cfg)
	jo.Logger, jo.Registerer = log, reg
	s.records.journalOptions(cfg, &jo)
	if s.journal, err = journal.Open(cfg.JournalDir(), jo); err != nil {
		return dataDirError(cfg.JournalDir(), " (spend.journal_dir)", err)
	}
	s.records.startExport(s.journal)
	so := spendOptions(cfg)
	so.InstanceID, so.Confirmed, so.Logger, so.Registerer = instance, s.journal.Confirm, log, reg
	w, err := spend.NewWriter(store, so)
	if err != nil {
		return fmt.Errorf("bidder: spend: %w", err)
	}
	s.spendW = w
	if err := replayJournal(s.journal, w, log); err != nil {
		return fmt.Errorf("bidder: spend.journal_dir %s: %w", cfg.JournalDir(), err)
	}
	s.budgets = spend.NewBudgets(w, budgetOptions(cfg))
	if s.rdb != nil {
		fo := fraudOptions(cfg)
		fo.Logger, fo.Registerer = log, reg
		l, err := fraud.New(s.rdb, fo)
		if err != nil {
			return fmt.Errorf("bidder: fraud: %w", err)
		}
		s.fraud = l
		fctx, fcancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = l.Start(fctx)
		fcancel()
		if err != nil {
			log.Warn("bidder: first load of the fraud lists failed; bidding without them until a sync succeeds", zap.Error(err))
		}
	}
	log.Info("spend store", zap.String("store", kind))
	return nil
}

// instanceID is spend.instance_id, or the host name when it is empty.
func instanceID(cfg *configs.Config, log *zap.Logger) (string, error) {
	if cfg.Spend.InstanceID != "" {
		return cfg.Spend.InstanceID, nil
	}
	return defaultInstanceID(log)
}

// replayJournal hands the spend Writer, before the bidder serves, every
// notice the journal holds from earlier runs (accepted and not yet
// confirmed by the store); the store applies each notice's key once, so
// those it already has add nothing. A record the Writer refuses as invalid
// is logged and dropped.
func replayJournal(j *journal.Journal, w *spend.Writer, log *zap.Logger) error {
	var invalid []uint64
	st, err := j.Replay(func(campaign string, n *spend.Notice) error {
		err := w.AddNotice(campaign, n)
		if errors.Is(err, spend.ErrInvalid) {
			log.Error("bidder: journal record refused by the spend Writer; dropped", zap.Uint64("seq", n.Seq), zap.Error(err))
			invalid = append(invalid, n.Seq)
			return nil
		}
		return err
	})
	j.Confirm(invalid)
	if err != nil {
		return err
	}
	log.Info("spend journal replayed", zap.Int("notices", st.Replayed), zap.Int("corrupt", len(st.Corrupt)),
		zap.Int64("pending", j.Pending()))
	return nil
}

// Spend is the spend Writer.
func (s *Server) Spend() *spend.Writer { return s.spendW }

// Addr is the address the bid server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// AdminAddr is the admin listener's address.
func (s *Server) AdminAddr() string { return s.admin.Addr() }

// AdminRoutes returns the patterns the admin listener serves
// ("GET /healthz", "POST /admin/debug/bid", ...).
func (s *Server) AdminRoutes() []string { return s.admin.Patterns() }

// Campaigns is the campaign source: the file watcher, or the PostgreSQL
// table of campaigns.source postgres.
func (s *Server) Campaigns() bidder.CampaignSource { return s.campaigns }

// campaignSource is a CampaignSource the server opened and closes.
type campaignSource interface {
	bidder.CampaignSource
	Close() error
}

// openCampaigns opens the campaign source of campaigns.source: the watched
// file (campaigns.file, else bidder.campaigns) or the PostgreSQL table at
// campaigns.postgres.dsn, read every campaigns.refresh_interval.
func openCampaigns(cfg *configs.Config, log *zap.Logger, reg prometheus.Registerer) (campaignSource, error) {
	if cfg.Campaigns.Source == configs.CampaignsPostgres {
		ctx, cancel := context.WithTimeout(context.Background(), cfg.Campaigns.RefreshInterval+10*time.Second)
		defer cancel()
		po := pgsourceOptions(cfg)
		po.Logger, po.Registerer = log, reg
		src, err := pgsource.Open(ctx, po)
		if err != nil {
			return nil, fmt.Errorf("bidder: campaigns.postgres.dsn: %w", err)
		}
		return src, nil
	}
	key := "bidder.campaigns"
	if cfg.Campaigns.File != "" {
		key = "campaigns.file"
	}
	w, err := campaign.NewWatcher(cfg.CampaignsFile(), log, reg)
	if err != nil {
		return nil, fmt.Errorf("bidder: %s: %w", key, err)
	}
	return w, nil
}

// campaignsDesc says where the campaigns come from, for the log.
func campaignsDesc(cfg *configs.Config) string {
	if cfg.Campaigns.Source == configs.CampaignsPostgres {
		return "postgres table " + pgsource.Table
	}
	return "file " + cfg.CampaignsFile()
}

// Users is the user store (user.store).
func (s *Server) Users() ProfileStore { return s.users }

// refresh is POST /admin/catalog/refresh: re-resolve the remote target now.
func (s *Server) refresh(w http.ResponseWriter, _ *http.Request) {
	s.remote.Refresh()
	// Resolution is asynchronous: give it a moment so the answer usually
	// shows the new node list.
	time.Sleep(100 * time.Millisecond)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"refreshed": true, "nodes": s.remote.Nodes()})
}

// Shutdown stops the server gracefully: readiness fails first and the
// bidder goes on serving for bidder.shutdown_delay (or until ctx ends),
// then the bid server stops accepting and waits for in-flight requests (up
// to bidder.shutdown_timeout, or ctx), then the stores are closed.
func (s *Server) Shutdown(ctx context.Context) error {
	s.stopLoads(errShuttingDown)
	s.shutdownDelay(ctx)
	s.stopSpendGate()
	s.stopShading()
	sctx, cancel := context.WithTimeout(ctx, s.cfg.Bidder.ShutdownTimeout)
	defer cancel()
	herr := errors.Join(s.http.ShutdownWithContext(sctx), s.public.shutdown(sctx))
	if herr != nil {
		herr = fmt.Errorf("bidder: draining connections: %w", herr)
	}
	actx, acancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer acancel()
	aerr := s.admin.Shutdown(actx)
	// Flush every accepted notice before the stores close. What the store
	// does not confirm in time stays in the journal for the next start:
	// nothing accepted is lost.
	var werr error
	if s.spendW != nil {
		wctx, wcancel := context.WithTimeout(ctx, s.cfg.Bidder.ShutdownTimeout)
		werr = s.spendW.Close(wctx)
		wcancel()
		s.spendClosed = true
		werr = s.settleJournal(werr)
	}
	s.fx.Close()
	s.supply.Close()
	cerr := s.closeStores()
	s.log.Info("bidder stopped")
	return errors.Join(herr, aerr, werr, cerr)
}

// settleJournal is the journal's part of a shutdown, given the spend
// Writer's Close error: with nothing left unflushed the store has every
// notice, so the journal is emptied; with notices unflushed (the store
// unreachable) they stay in the journal, are replayed at the next start,
// and the shutdown is not a failure.
func (s *Server) settleJournal(werr error) error {
	switch {
	case s.journal == nil:
	case werr == nil:
		if err := s.journal.ConfirmAll(); err != nil {
			s.log.Warn("bidder: emptying the spend journal; its notices are replayed at the next start (the store applies each once)", zap.Error(err))
		}
		return nil
	case errors.Is(werr, spend.ErrUnflushed):
		s.log.Warn("bidder: spend not confirmed by the store at shutdown stays in the journal and is replayed at the next start",
			zap.String("journal", s.cfg.JournalDir()), zap.Int64("notices", s.journal.Pending()), zap.Error(werr))
		return nil
	}
	if werr != nil {
		return fmt.Errorf("bidder: flushing spend: %w", werr)
	}
	return nil
}

func (s *Server) closeStores() error {
	var errs []error
	if s.spendW != nil && !s.spendClosed { // Start failed after opening it
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Bidder.ShutdownTimeout)
		errs = append(errs, s.spendW.Close(ctx))
		cancel()
	}
	if s.fraud != nil {
		s.fraud.Close()
	}
	errs = append(errs, s.records.close()) // its exporters read the journal
	if s.journal != nil {                  // after the Writer: its last confirmations
		errs = append(errs, s.journal.Close())
	}
	errs = append(errs, s.releaseInstanceLease()) // after the Writer's last flush
	if s.spendDB != nil {
		errs = append(errs, s.spendDB.Close())
	}
	if s.rdb != nil {
		errs = append(errs, s.rdb.Close())
	}
	if s.aero != nil {
		s.aero.Close()
	}
	if s.campaigns != nil {
		errs = append(errs, s.campaigns.Close())
	}
	if s.users != nil {
		errs = append(errs, s.users.Close())
	}
	if s.products != nil {
		errs = append(errs, s.products.Close())
	}
	return errors.Join(errs...)
}

// Run serves until ctx is cancelled (SIGTERM/SIGINT in main), then shuts
// down gracefully: stop accepting, drain in-flight requests, close stores.
func Run(ctx context.Context, cfg *configs.Config, log *zap.Logger) error {
	s, err := Start(cfg, log)
	if err != nil {
		return err
	}
	select {
	case <-ctx.Done():
	case err := <-s.served:
		_ = s.Shutdown(context.Background())
		return fmt.Errorf("bidder: http server stopped: %w", err)
	}
	return s.Shutdown(context.Background())
}
