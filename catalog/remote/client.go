package remote

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	_ "google.golang.org/grpc/health" // client-side health checking (healthCheckConfig)
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"

	"github.com/rtbd/rtbd/catalog"
	"github.com/rtbd/rtbd/catalog/catalogpb"
)

// Defaults applied by New to zero Options fields.
const (
	DefaultConnsPerNode    = 2
	DefaultRefreshInterval = 30 * time.Second
	DefaultCallTimeout     = 50 * time.Millisecond
	DefaultNearCacheGrace  = 30 * time.Second
	DefaultNearCacheMaxAge = 5 * time.Minute
	DefaultVersionInterval = time.Second
	DefaultMaxIDs          = 1000

	maxConnsPerNode = 64
)

// ErrInvalidOptions is wrapped by New's error when Options (the target
// string included) are wrong.
var ErrInvalidOptions = errors.New("remote: invalid options")

// serviceConfig is every ClientConn's default service config:
//   - round_robin over all resolved nodes (one subchannel per node);
//   - client-side health checking on the server's overall health ("");
//     a node reporting NOT_SERVING (draining) is taken out of the picker;
//   - every method (GetProductMasters, GetProducts, GetChanges) is
//     idempotent, so UNAVAILABLE is retried on another node (3 attempts, 1-10 ms backoff) inside the caller's deadline, with
//     throttling so that a fleet-wide outage does not triple the load;
//   - waitForReady false: with no READY node, calls fail at once.
const serviceConfig = `{
  "loadBalancingConfig": [{"round_robin": {}}],
  "healthCheckConfig": {"serviceName": ""},
  "retryThrottling": {"maxTokens": 100, "tokenRatio": 0.1},
  "methodConfig": [{
    "name": [{"service": "rtbd.catalog.v1.Catalog"}],
    "waitForReady": false,
    "retryPolicy": {
      "maxAttempts": 3,
      "initialBackoff": "0.001s",
      "maxBackoff": "0.01s",
      "backoffMultiplier": 2,
      "retryableStatusCodes": ["UNAVAILABLE"]
    }
  }]
}`

// Options configure a Client. The zero value of each field but Target
// selects the documented default.
type Options struct {
	// Target names the catalog nodes:
	//   static:///host:port[,host:port...]  a fixed list
	//   dns:///name:port                    every A/AAAA record of name
	//   file:///absolute/path               one host:port per line
	// Required.
	Target string
	// ConnsPerNode is the number of HTTP/2 connections the client keeps to
	// every node; calls are multiplexed over them, so it does not grow with
	// concurrency. Default 2, at most 64.
	ConnsPerNode int
	// RefreshInterval is how often the target is resolved again.
	// Default 30s.
	RefreshInterval time.Duration
	// CallTimeout is the deadline of a call whose ctx has none. Default 50ms.
	CallTimeout time.Duration
	// TLS, when non-nil, is used for every connection; nil means cleartext
	// h2c (insecure credentials), the normal case inside a data centre.
	TLS *tls.Config
	// Logger receives resolution and node-set changes (never per call).
	// Nil: no logging.
	Logger *zap.Logger
	// Registerer, when non-nil, receives the rtbd_catalog_client_* metrics.
	Registerer prometheus.Registerer
	// DialOptions are appended after the client's own (tests, tuning).
	DialOptions []grpc.DialOption
	// NearCacheBytes bounds the near cache of decoded products and
	// absences (decoded size plus per-entry overhead); 0 turns it off, and
	// GetProductMasters is then one GetProductMasters call per request.
	NearCacheBytes int64
	// NearCacheGrace is how long entries of an index content that a newer
	// one replaced wholesale are still served (each retires at its own
	// point within it). Default 30s; at most NearCacheMaxAge.
	NearCacheGrace time.Duration
	// NearCacheMaxAge is the longest an entry is served. Default 5m.
	NearCacheMaxAge time.Duration
	// VersionInterval is how often, with the near cache on, the client asks
	// a node for its index version (GetChanges since the cache's), so that
	// a new version is followed even while every lookup is a hit and no
	// answer carries it. Default 1s.
	VersionInterval time.Duration
	// MaxIDs is the most product ids a request may carry (both lists), as
	// the nodes' catalog.max_ids; it is also the most ids one GetProducts
	// call asks for. Default 1000.
	MaxIDs int
}

// validate applies defaults and returns every problem found.
func (o *Options) validate() (target, error) {
	var errs []error
	t, err := parseTarget(o.Target)
	if err != nil {
		errs = append(errs, fmt.Errorf("Target: %w", err))
	}
	switch {
	case o.ConnsPerNode == 0:
		o.ConnsPerNode = DefaultConnsPerNode
	case o.ConnsPerNode < 0 || o.ConnsPerNode > maxConnsPerNode:
		errs = append(errs, fmt.Errorf("ConnsPerNode: must be 1..%d (0 = %d), got %d", maxConnsPerNode, DefaultConnsPerNode, o.ConnsPerNode))
	}
	defaultIfZero(&errs, "RefreshInterval", &o.RefreshInterval, DefaultRefreshInterval)
	defaultIfZero(&errs, "CallTimeout", &o.CallTimeout, DefaultCallTimeout)
	if o.NearCacheBytes < 0 {
		errs = append(errs, fmt.Errorf("NearCacheBytes: must be >= 0 (0 = off), got %d", o.NearCacheBytes))
	}
	defaultIfZero(&errs, "NearCacheGrace", &o.NearCacheGrace, DefaultNearCacheGrace)
	defaultIfZero(&errs, "NearCacheMaxAge", &o.NearCacheMaxAge, DefaultNearCacheMaxAge)
	defaultIfZero(&errs, "VersionInterval", &o.VersionInterval, DefaultVersionInterval)
	if o.NearCacheGrace > 0 && o.NearCacheMaxAge > 0 && o.NearCacheGrace > o.NearCacheMaxAge {
		errs = append(errs, fmt.Errorf("NearCacheGrace: must be at most NearCacheMaxAge (%s), got %s", o.NearCacheMaxAge, o.NearCacheGrace))
	}
	defaultIfZero(&errs, "MaxIDs", &o.MaxIDs, DefaultMaxIDs)
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if len(errs) > 0 {
		return target{}, fmt.Errorf("%w: %w", ErrInvalidOptions, errors.Join(errs...))
	}
	return t, nil
}

// defaultIfZero gives an unset (0) option its default and adds an error
// naming key when the option is negative.
func defaultIfZero[T int | time.Duration](errs *[]error, key string, v *T, def T) {
	switch {
	case *v == 0:
		*v = def
	case *v < 0:
		*errs = append(*errs, fmt.Errorf("%s: must be > 0 (0 = %v), got %v", key, def, *v))
	}
}

// Client is the remote product store: it calls GetProductMasters on the
// catalog nodes named by Options.Target, round-robin, over a fixed number of
// HTTP/2 connections per node. A Client is safe for concurrent use; Close it
// when done.
type Client struct {
	conns       []*grpc.ClientConn
	next        atomic.Uint32
	hub         *hub
	reach       *reach
	callTimeout time.Duration
	m           *metrics
	closed      atomic.Bool
	closeOnce   sync.Once
	closeErr    error

	maxIDs  int
	log     *zap.Logger
	near    *nearCache // nil: off
	scratch sync.Pool  // *batchScratch
	vt      versionTracker
	// legacyUntil (unix ns): nodes answered GetProducts with UNIMPLEMENTED
	// (not upgraded yet), so requests use GetProductMasters until then.
	legacyUntil atomic.Int64
}

// New validates opts and starts the client. It does not wait for any node:
// connections are made in the background, and a call made before a node is
// ready fails fast with ErrUnavailable (or waits for the first resolution,
// which for static and file targets is immediate). Errors wrap
// ErrInvalidOptions and name the bad field or part of the target.
func New(opts Options) (*Client, error) {
	t, err := opts.validate()
	if err != nil {
		return nil, err
	}
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	h := newHub(t, opts.RefreshInterval, opts.Logger, m)

	creds := insecure.NewCredentials()
	if opts.TLS != nil {
		creds = credentials.NewTLS(opts.TLS)
	}
	dopts := []grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithResolvers(&builder{scheme: t.scheme, hub: h}),
		grpc.WithDefaultServiceConfig(serviceConfig),
		// Nodes are inside the data centre: never through an HTTP proxy.
		grpc.WithNoProxy(),
		// A bidder is never idle long; keep connections up, no reconnect
		// latency after a quiet spell.
		grpc.WithIdleTimeout(0),
		// Big static windows: responses never wait for WINDOW_UPDATE and no
		// BDP ping traffic. Window size is credit, not memory allocated.
		grpc.WithStaticStreamWindowSize(1 << 20),
		grpc.WithStaticConnWindowSize(16 << 20),
		// Find a node that vanished without closing its connections (host
		// down, partition): ping after 10s without traffic, give up on the
		// connection 3s later. Catalog nodes (catalog.NewGRPCServer) permit
		// pings every 5s, streams or not; a server with grpc-go's default
		// enforcement (5 min) would answer these pings with GOAWAY.
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: 10 * time.Second, Timeout: 3 * time.Second, PermitWithoutStream: true}),
		// A restarted node is reconnected within seconds, not grpc's 2 min.
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 5 * time.Second},
			MinConnectTimeout: 2 * time.Second,
		}),
		grpc.WithUserAgent("rtbd-catalog-client"),
		// Responses decode with one string allocation for all products
		// (clientCodec) instead of one per field.
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(newClientCodec())),
	}
	dopts = append(dopts, opts.DialOptions...)

	c := &Client{hub: h, callTimeout: opts.CallTimeout, m: m, maxIDs: opts.MaxIDs, log: opts.Logger,
		near: newNearCache(opts.NearCacheBytes, opts.NearCacheGrace, opts.NearCacheMaxAge, m)}
	c.vt.init()
	if c.near != nil {
		c.vt.wg.Add(2)
		go c.pollVersions(opts.VersionInterval)
		go c.refresher()
	}
	// The gRPC target only selects the resolver builder; the builder already
	// holds the parsed target (file paths need not be valid URLs).
	grpcTarget := t.scheme + ":///rtbd-catalog"
	for range opts.ConnsPerNode {
		cc, err := grpc.NewClient(grpcTarget, dopts...)
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("remote: %w", err)
		}
		cc.Connect() // start connecting now, without waiting
		c.conns = append(c.conns, cc)
	}
	c.reach = newReach(len(c.conns))
	c.reach.watch(c.conns)
	return c, nil
}

// GetProductMasters answers req. With the near cache on, it looks up every
// id of both lists in the cache, asks the nodes (one GetProducts call) only
// for the ids it lacks, and applies GetProductMasters' rules itself; a
// request whose products are all cached makes no call. The products in the
// response are shared with the cache and must not be modified; the
// response itself belongs to the caller.
//
// With the near cache off it asks one catalog node (round-robin) for req's
// products, and the response is the caller's. The call carries ctx's deadline, or CallTimeout when ctx has none; a call
// that fails with UNAVAILABLE (node gone, draining) is retried on another
// node within that deadline. The response belongs to the caller.
//
// Errors wrap the catalog sentinels and the gRPC status (status.Code(err)
// works): catalog.ErrInvalidArgument (InvalidArgument), catalog.ErrDeadline
// (DeadlineExceeded, Canceled, or ctx done), catalog.ErrUnavailable (no
// node up, and every other code), catalog.ErrClosed (after Close).
func (c *Client) GetProductMasters(ctx context.Context, req *catalogpb.ProductMastersRequest) (*catalogpb.ProductMastersResponse, error) {
	if c.closed.Load() {
		return nil, catalog.ErrClosed
	}
	if req == nil {
		return nil, fmt.Errorf("%w: remote: nil request", catalog.ErrInvalidArgument)
	}
	if c.near != nil && !c.legacy() {
		return c.getProductMastersNear(ctx, req)
	}
	return c.getProductMastersRPC(ctx, req)
}

// getProductMastersRPC is one GetProductMasters call.
func (c *Client) getProductMastersRPC(ctx context.Context, req *catalogpb.ProductMastersRequest) (*catalogpb.ProductMastersResponse, error) {
	if c.hub.zeroNodes() {
		c.m.call(codes.Unavailable, 0)
		return nil, fmt.Errorf("%w: remote: no catalog nodes", catalog.ErrUnavailable)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.callTimeout)
		defer cancel()
	}
	var start time.Time
	if c.m != nil {
		start = time.Now()
	}
	cc := c.conns[int(c.next.Add(1))%len(c.conns)]
	resp := new(catalogpb.ProductMastersResponse)
	err := cc.Invoke(ctx, catalogpb.Catalog_GetProductMasters_FullMethodName, req, resp)
	if c.m != nil {
		c.m.call(status.Code(err), time.Since(start).Seconds())
	}
	if err != nil {
		return nil, c.mapError(ctx, err)
	}
	return resp, nil
}

// mapError wraps a gRPC error in the matching catalog sentinel, keeping the
// status message and the status itself.
func (c *Client) mapError(ctx context.Context, err error) error {
	var sentinel error
	switch code := status.Code(err); {
	case c.closed.Load():
		sentinel = catalog.ErrClosed
	case code == codes.InvalidArgument:
		sentinel = catalog.ErrInvalidArgument
	case code == codes.DeadlineExceeded, code == codes.Canceled, ctx.Err() != nil:
		sentinel = catalog.ErrDeadline
	default:
		sentinel = catalog.ErrUnavailable
	}
	return fmt.Errorf("%w: remote: %w", sentinel, err)
}

// Refresh resolves the target again now and returns when that resolution
// has finished (at most a few seconds, the lookup timeout), so Nodes then
// shows its outcome. Safe for concurrent use; a no-op after Close.
func (c *Client) Refresh() { c.hub.refresh() }

// Nodes returns the node addresses (host:port, sorted) of the last good
// resolution; nil before the first one. The slice belongs to the caller.
func (c *Client) Nodes() []string {
	nodes, _ := c.hub.snapshot()
	return nodes
}

// Close stops resolution and closes every connection. Calls in flight fail
// with catalog.ErrClosed, as do later calls. Close is idempotent.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		c.closed.Store(true)
		c.vt.stop()
		c.hub.close()
		if c.reach != nil {
			c.reach.stop()
		}
		var errs []error
		for _, cc := range c.conns {
			if err := cc.Close(); err != nil {
				errs = append(errs, err)
			}
		}
		if len(errs) > 0 {
			c.closeErr = fmt.Errorf("remote: close: %w", errors.Join(errs...))
		}
	})
	return c.closeErr
}
