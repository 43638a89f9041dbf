package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc/resolver"
)

// lookupTimeout bounds one resolution (a DNS query, a file read).
const lookupTimeout = 5 * time.Second

// maxResolveNowRate is the shortest gap between two resolutions asked for by
// gRPC's ResolveNow (it asks on every failed connection attempt); periodic
// ticks and Client.Refresh are not limited by it.
const maxResolveNowRate = time.Second

// lookupFunc returns the current node addresses (host:port, sorted, unique).
type lookupFunc func(ctx context.Context) ([]string, error)

func (t target) lookup() lookupFunc {
	switch t.scheme {
	case schemeStatic:
		addrs := t.addrs
		return func(context.Context) ([]string, error) { return slices.Clone(addrs), nil }
	case schemeDNS:
		return func(ctx context.Context) ([]string, error) {
			ips, err := net.DefaultResolver.LookupHost(ctx, t.host)
			if err != nil {
				return nil, err
			}
			if len(ips) == 0 {
				return nil, fmt.Errorf("lookup %s: no addresses", t.host)
			}
			out := make([]string, len(ips))
			for i, ip := range ips {
				out[i] = net.JoinHostPort(ip, t.port)
			}
			return normalize(out), nil
		}
	default: // schemeFile
		return func(context.Context) ([]string, error) {
			f, err := os.Open(t.path)
			if err != nil {
				return nil, err
			}
			defer f.Close()
			data, err := io.ReadAll(io.LimitReader(f, maxNodeFileBytes+1))
			if err != nil {
				return nil, err
			}
			if len(data) > maxNodeFileBytes {
				return nil, fmt.Errorf("%s: larger than %d bytes", t.path, maxNodeFileBytes)
			}
			nodes, err := parseNodeFile(data)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", t.path, err)
			}
			return nodes, nil
		}
	}
}

// hub is the refreshable name resolver (the talk's RefreshableNameResolver)
// shared by the Client's ClientConns: one goroutine resolves the target at
// start, every interval, on Client.Refresh and (rate limited) on gRPC's
// ResolveNow, and pushes each changed node list to every subscribed
// resolver.Resolver. One resolution feeds all ConnsPerNode channels, so they
// always agree on the node set and a DNS name is looked up once per period,
// not once per channel.
type hub struct {
	scheme     string
	lookup     lookupFunc
	serverName func(addr string) string
	interval   time.Duration
	log        *zap.Logger
	m          *metrics

	refreshCh    chan chan struct{} // Client.Refresh: a channel closed when done
	resolveNowCh chan struct{}      // gRPC ResolveNow, capacity 1 (coalesced)
	ctx          context.Context    // cancelled by close
	cancel       context.CancelFunc
	done         chan struct{} // closed when run returns

	mu       sync.Mutex
	version  uint64 // bumped on every state that is pushed
	resolved bool   // a lookup has succeeded at least once
	nodes    []string
	lastErr  error // error of the last lookup, nil after a success
	subs     map[*hubResolver]struct{}

	zero atomic.Bool // resolved && len(nodes) == 0, read on every call
}

func newHub(t target, interval time.Duration, log *zap.Logger, m *metrics) *hub {
	ctx, cancel := context.WithCancel(context.Background())
	h := &hub{
		scheme:       t.scheme,
		lookup:       t.lookup(),
		interval:     interval,
		log:          log,
		m:            m,
		refreshCh:    make(chan chan struct{}),
		resolveNowCh: make(chan struct{}, 1),
		ctx:          ctx,
		cancel:       cancel,
		done:         make(chan struct{}),
		subs:         make(map[*hubResolver]struct{}),
	}
	if t.scheme == schemeDNS {
		// Every node answers for the service name (TLS and :authority).
		name := net.JoinHostPort(t.host, t.port)
		h.serverName = func(string) string { return name }
	} else {
		h.serverName = func(addr string) string { return addr }
	}
	go h.run()
	return h
}

func (h *hub) run() {
	defer close(h.done)
	tick := time.NewTicker(h.interval)
	defer tick.Stop()
	var waiters []chan struct{}
	for {
		h.resolveOnce()
		last := time.Now()
		for _, w := range waiters {
			close(w)
		}
		waiters = waiters[:0]
		select {
		case <-h.ctx.Done():
			return
		case <-tick.C:
		case w := <-h.refreshCh:
			waiters = append(waiters, w)
		case <-h.resolveNowCh:
			if gap := maxResolveNowRate - time.Since(last); gap > 0 {
				t := time.NewTimer(gap)
				select {
				case <-h.ctx.Done():
					t.Stop()
					return
				case <-t.C:
				case <-tick.C:
				case w := <-h.refreshCh:
					waiters = append(waiters, w)
				}
				t.Stop()
			}
		}
	}
}

// resolveOnce runs one lookup and publishes its outcome.
func (h *hub) resolveOnce() {
	ctx, cancel := context.WithTimeout(h.ctx, lookupTimeout)
	nodes, err := h.lookup(ctx)
	cancel()
	if h.ctx.Err() != nil {
		return // closing; a lookup cut short is not a failure
	}
	h.mu.Lock()
	if err != nil {
		first := h.lastErr == nil
		h.lastErr = err
		var subs []*hubResolver
		var v uint64
		if !h.resolved {
			// Nothing good to keep: tell gRPC, so calls fail fast.
			h.version++
			v = h.version
			subs = h.subsLocked()
		}
		kept := len(h.nodes)
		h.mu.Unlock()
		h.m.resolve(false)
		if first {
			h.log.Warn("catalog remote: resolving nodes failed, keeping the last good list",
				zap.String("scheme", h.scheme), zap.Int("kept_nodes", kept), zap.Error(err))
		} else {
			h.log.Debug("catalog remote: resolving nodes still failing",
				zap.String("scheme", h.scheme), zap.Error(err))
		}
		for _, s := range subs {
			s.reportError(v, err)
		}
		return
	}
	recovered := h.lastErr != nil
	h.lastErr = nil
	changed := !h.resolved || !slices.Equal(h.nodes, nodes)
	old := h.nodes
	var subs []*hubResolver
	var v uint64
	if changed {
		h.resolved = true
		h.nodes = nodes
		h.zero.Store(len(nodes) == 0)
		h.version++
		v = h.version
		subs = h.subsLocked()
	}
	h.mu.Unlock()
	h.m.resolve(true)
	if recovered {
		h.log.Info("catalog remote: resolving nodes works again", zap.String("scheme", h.scheme))
	}
	if !changed {
		return
	}
	h.m.setNodes(len(nodes))
	added, removed := diff(old, nodes)
	h.log.Info("catalog remote: node set changed", zap.String("scheme", h.scheme),
		zap.Strings("nodes", nodes), zap.Strings("added", added), zap.Strings("removed", removed))
	for _, s := range subs {
		s.update(v, h.state(nodes)) // each ClientConn gets its own copy
	}
}

func (h *hub) subsLocked() []*hubResolver {
	out := make([]*hubResolver, 0, len(h.subs))
	for s := range h.subs {
		out = append(out, s)
	}
	return out
}

// state builds a resolver state for nodes: one endpoint per node, so
// round_robin keeps one subchannel (one HTTP/2 connection) per node per
// ClientConn. nodes is never modified once published.
func (h *hub) state(nodes []string) resolver.State {
	eps := make([]resolver.Endpoint, len(nodes))
	for i, n := range nodes {
		eps[i] = resolver.Endpoint{Addresses: []resolver.Address{{Addr: n, ServerName: h.serverName(n)}}}
	}
	return resolver.State{Endpoints: eps}
}

// snapshot reports the current nodes (a copy) and whether a lookup ever
// succeeded.
func (h *hub) snapshot() (nodes []string, resolved bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.nodes), h.resolved
}

// zeroNodes reports whether the last good resolution returned no node.
func (h *hub) zeroNodes() bool { return h.zero.Load() }

// refresh asks for a resolution now and waits until one that started after
// the call has finished (or the hub is closed).
func (h *hub) refresh() {
	w := make(chan struct{})
	select {
	case h.refreshCh <- w:
	case <-h.done:
		return
	}
	select {
	case <-w:
	case <-h.done:
	}
}

// resolveNow is gRPC's hint that a resolution may help; it never blocks.
func (h *hub) resolveNow() {
	select {
	case h.resolveNowCh <- struct{}{}:
	default:
	}
}

func (h *hub) close() {
	h.cancel()
	<-h.done
}

// subscribe registers r and hands it the current state, if there is one.
func (h *hub) subscribe(r *hubResolver) {
	h.mu.Lock()
	h.subs[r] = struct{}{}
	v := h.version
	var st resolver.State
	var err error
	switch {
	case h.resolved:
		st = h.state(h.nodes)
	case h.lastErr != nil:
		err = h.lastErr
	default:
		v = 0 // nothing yet; the first lookup will push
	}
	h.mu.Unlock()
	switch {
	case v == 0:
	case err != nil:
		r.reportError(v, err)
	default:
		r.update(v, st)
	}
}

func (h *hub) unsubscribe(r *hubResolver) {
	h.mu.Lock()
	delete(h.subs, r)
	h.mu.Unlock()
}

func diff(old, cur []string) (added, removed []string) {
	for _, n := range cur {
		if _, ok := slices.BinarySearch(old, n); !ok {
			added = append(added, n)
		}
	}
	for _, n := range old {
		if _, ok := slices.BinarySearch(cur, n); !ok {
			removed = append(removed, n)
		}
	}
	return added, removed
}

// builder is the resolver.Builder for one scheme (static, dns or file),
// handed to each ClientConn with grpc.WithResolvers; every resolver it
// builds is fed by the Client's hub.
type builder struct {
	scheme string
	hub    *hub
}

func (b *builder) Scheme() string { return b.scheme }

func (b *builder) Build(_ resolver.Target, cc resolver.ClientConn, _ resolver.BuildOptions) (resolver.Resolver, error) {
	if b.hub.ctx.Err() != nil {
		return nil, errors.New("catalog remote: client closed")
	}
	r := &hubResolver{hub: b.hub, cc: cc}
	b.hub.subscribe(r)
	return r, nil
}

// hubResolver is the resolver.Resolver of one ClientConn. Pushes carry the
// hub's version so a state computed earlier never overwrites a newer one.
type hubResolver struct {
	hub    *hub
	cc     resolver.ClientConn
	mu     sync.Mutex
	last   uint64
	closed bool
}

func (r *hubResolver) update(v uint64, st resolver.State) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || v <= r.last {
		return
	}
	r.last = v
	// An empty node list makes round_robin report ErrBadResolverState and
	// fail calls fast; that is the intended outcome, so the error is dropped.
	_ = r.cc.UpdateState(st)
}

func (r *hubResolver) reportError(v uint64, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || v <= r.last {
		return
	}
	r.last = v
	r.cc.ReportError(err)
}

// ResolveNow implements resolver.Resolver.
func (r *hubResolver) ResolveNow(resolver.ResolveNowOptions) { r.hub.resolveNow() }

// Close implements resolver.Resolver.
func (r *hubResolver) Close() {
	r.hub.unsubscribe(r)
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
}
