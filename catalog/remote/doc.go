// Package remote is the bidder's client for remote catalog nodes: the
// product store that reads ad product masters over gRPC (catalogpb) from
// replicas of the index instead of the local Pebble store, as in Logicad's
// talk (JJUG CCC 2018): client-side round-robin, a name resolver refreshed
// periodically or on demand, and a connection count that stays flat as load
// rises. Answers are decoded by its own codec (codec.go): all of a
// response's strings share one allocation.
//
// # Targets
//
// Options.Target names the nodes in one of three forms:
//
//	static:///10.0.0.1:7070,10.0.0.2:7070   a fixed list (refresh is a no-op)
//	dns:///catalog.internal:7070            every A and AAAA record of the
//	                                        name, with the port
//	file:///etc/rtbd/catalog-nodes.txt      one host:port per line; blank
//	                                        lines and '#' comments ignored
//
// New checks the syntax and names the bad part; it never waits for a node.
//
// # Resolution
//
// One goroutine per Client resolves the target at start, every
// RefreshInterval (default 30s), on Client.Refresh (the admin endpoint) and,
// at most once a second, when gRPC asks (a connection failed). Each resolution
// is pushed to the resolvers the custom builders (one per scheme, given to
// each ClientConn with grpc.WithResolvers, nothing registered globally) built,
// so nodes are added and removed without an external load balancer. grpc-go's
// own dns resolver does not re-resolve periodically; this one does.
//
// A failed resolution (DNS error, node file missing or unreadable, a bad line
// in it) keeps the last good node list and is logged and counted. A node file
// that parses but lists no node means zero nodes: calls then fail at once with
// catalog.ErrUnavailable. DNS never goes to zero nodes (an empty answer is
// treated as a failure). Replace a node file atomically (write a temporary
// file, rename it), so a reader never sees half of it.
//
// # Connections and balancing
//
// The Client holds ConnsPerNode (default 2) gRPC ClientConns. Each uses the
// round_robin policy over all nodes and keeps exactly one HTTP/2 connection
// per node, so a node sees ConnsPerNode connections from a bidder whatever
// the concurrency: calls are multiplexed as HTTP/2 streams. A call picks a
// ClientConn with an atomic counter, the ClientConn picks the next READY node.
// Connections are cleartext h2c unless Options.TLS is set.
//
// Client-side health checking (grpc.health.v1, service "") is on: a node
// that reports NOT_SERVING, as a catalog node does while draining before
// shutdown, gets no new calls; a node without the health service counts as
// healthy.
//
// Client.Reachable says whether any node is READY on some ClientConn now,
// and since when none has been; it follows gRPC's connectivity state
// (a goroutine per ClientConn waits for state changes), so it needs no
// failed call. A bidder's /readyz turns unready on it after a grace.
//
// # Near cache
//
// With Options.NearCacheBytes > 0 (nearcache.go, products.go,
// versions.go) the client caches decoded products, and absences (an id a
// group does not hold), and answers GetProductMasters itself: every id of
// both lists is looked up, the missing ones are asked of a node in one
// GetProducts call (raw index records, decoded with catalog.DecodeValue),
// the answers inserted, and the rules of catalog's package comment applied
// locally (catalog.ValidateRequest with Options.MaxIDs first). A request
// whose products are all cached makes no call and, through
// GetProductMastersBatch with reused responses, allocates nothing.
// GetProductMastersBatch answers many requests with one GetProducts call
// for all their missing ids (several, one after the other, only beyond
// MaxIDs ids). A similar_to_viewed request (no product2_ids) is resolved
// from cached similar lists when every viewed product's list is cached
// (kept from the similar_lists of a node's earlier answer, per epoch and
// within NearCacheMaxAge); otherwise it is one GetProductMasters call, made
// beside the batch's GetProducts call, whose node resolves the lists.
// GetProductMastersCached answers a request from the cache
// alone, looking up each list's ids only until its quantity is met, or
// reports that it cannot, asking nothing.
//
// The cache is bounded in bytes (each decoded product's struct and string
// bytes plus a fixed per-entry overhead; entries follow from that), split
// into up to 64 shards by key hash, each with a read-write lock, a map and
// a CLOCK (second-chance) ring. A cached product is one immutable
// *catalogpb.Product, shared by every answer until it is evicted or retired
// (the bidder's banner cell cache is keyed by that pointer).
//
// Versions: every GetProducts answer carries the node's IndexVersion. An
// answer of the cache's content (same content_hash) is inserted; one of an
// older content (lower generation: a node not yet on the newest index) is
// served and not inserted; one of a newer content is served, not inserted,
// and makes a background goroutine ask GetChanges since the cache's
// version (up to 5 attempts, round-robin, until a node on a newer content
// answers). A delta retires exactly the changed ids at once. Full, or
// GetChanges failing, starts a new epoch: entries of the old one are still
// served, each until the time the newer version was first seen plus a
// per-key offset spread evenly over NearCacheGrace, so the cache turns over
// gradually and nothing older is served past the grace. Every entry also
// expires within NearCacheMaxAge (between 3/4 of it and all of it, by key
// hash). Stale entries are misses at lookup and reclaimed first by the
// CLOCK hand. A hit in the last eighth of an entry's max age still serves
// it and queues its key (once; the queue holds 4,096) for a background
// goroutine, which asks GetProducts for every key waiting and inserts the
// answers with the rules above: entries in use are replaced before they
// expire, so max age costs requests no misses, and entries no request asks
// for expire. Client.NearCacheStats gives hits, misses and the rest.
//
// A GetProducts attempt that runs out of its own time (half of what
// remains for each attempt but the third and last) while the caller's
// deadline allows is retried on another node. When nodes answer GetProducts
// with UNIMPLEMENTED (older than the client), requests use
// GetProductMasters for 30s, then GetProducts is tried again.
//
// # Calls, retries and errors
//
// Every call carries the caller's deadline, or Options.CallTimeout (default
// 50ms) when ctx has none. Every method is idempotent: a call failing
// with UNAVAILABLE (a node killed mid-call, a connection reset) is retried on
// another node, up to 3 attempts with 1-10ms backoff, inside that same
// deadline (throttled when most calls fail). With no READY node a call fails
// at once rather than waiting (waitForReady false).
//
// Errors wrap a catalog sentinel and the gRPC status, message kept:
// codes.InvalidArgument is catalog.ErrInvalidArgument; DeadlineExceeded,
// Canceled or a done ctx is catalog.ErrDeadline; Unavailable and every other
// code is catalog.ErrUnavailable; any call after Close is catalog.ErrClosed.
// status.Code(err) still gives the gRPC code.
//
// # Metrics
//
// With Options.Registerer set: rtbd_catalog_client_calls_total{code} (gRPC
// code names, every method), rtbd_catalog_client_method_calls_total{method},
// rtbd_catalog_client_call_seconds (histogram, retries included),
// rtbd_catalog_client_nodes (gauge),
// rtbd_catalog_client_resolves_total{result="ok"|"error"}, and for the near
// cache rtbd_catalog_client_near_cache_lookups_total{result="hit"|
// "hit_absent"|"miss"}, _near_cache_entries and _near_cache_bytes (gauges,
// updated per request), _near_cache_evictions_total,
// _near_cache_retired_total{cause="delta"|"epoch"|"max_age"},
// rtbd_catalog_client_index_changes_total{kind="delta"|"full"} and
// rtbd_catalog_client_deadline_retries_total.
//
// # Keepalive
//
// The client pings a connection after 10s without traffic and drops it when
// no answer comes within 3s, so a node that vanished without closing its
// connections (host down, partition) is noticed. The catalog node's server
// (catalog.NewGRPCServer) permits pings every 5s with or without streams; a
// gRPC server left at grpc-go's default enforcement (5 min) would answer them
// with GOAWAY (too_many_pings).
package remote
