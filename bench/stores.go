package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	as "github.com/aerospike/aerospike-client-go/v7"
	ast "github.com/aerospike/aerospike-client-go/v7/types"
	"github.com/redis/go-redis/v9"

	"github.com/rtbd/rtbd/catalog"
	"github.com/rtbd/rtbd/catalog/catalogpb"
)

// productStore is what the store scenario needs from a product store:
// catalog.Local, the catalog/remote client, and the Redis and Aerospike
// stores below all answer it with the catalog's semantics.
type productStore interface {
	GetProductMasters(ctx context.Context, req *catalogpb.ProductMastersRequest) (*catalogpb.ProductMastersResponse, error)
}

// storeTarget sends the scenario's request stream to one store.
type storeTarget struct {
	name   string
	store  productStore
	stream *requestStream
	// delay is TestOnlyCatalogDelay: slept before every lookup.
	delay time.Duration
}

func (t *storeTarget) Name() string { return t.name }

func (t *storeTarget) Do(ctx context.Context, w *Worker) Outcome {
	if t.delay > 0 {
		time.Sleep(t.delay)
	}
	req := t.stream.take()
	cctx, cancel := ctx, context.CancelFunc(nil)
	if !w.Deadline.IsZero() {
		cctx, cancel = context.WithDeadline(ctx, w.Deadline)
	}
	resp, err := t.store.GetProductMasters(cctx, req)
	if cancel != nil {
		cancel()
	}
	if err != nil {
		return classifyStoreError(err)
	}
	if len(resp.Product1S)+len(resp.Product2S) == 0 {
		return NoBid // answered, no product to show
	}
	return OK
}

// warmStore asks st for every request once, one after another: the
// steady state of a cache in front of a store (the near cache of a bidder
// that has run for a while). It returns the time it took.
func warmStore(ctx context.Context, st productStore, reqs []*catalogpb.ProductMastersRequest) (time.Duration, error) {
	start := time.Now()
	for _, req := range reqs {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := st.GetProductMasters(cctx, req)
		cancel()
		if err != nil {
			return 0, err
		}
	}
	return time.Since(start), nil
}

// classifyStoreError maps a store's error to an outcome: deadline = timeout,
// unavailable or a network failure = conn, invalid argument = 4xx, an
// error reply from Redis or Aerospike = 5xx.
func classifyStoreError(err error) Outcome {
	var ne net.Error
	var rerr redis.Error
	var aerr *as.AerospikeError
	switch {
	case errors.Is(err, catalog.ErrDeadline), errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		return ErrTimeout
	case errors.Is(err, catalog.ErrInvalidArgument):
		return ErrStatus4xx
	case errors.Is(err, catalog.ErrUnavailable):
		return ErrConn
	case errors.As(err, &aerr):
		switch aerr.ResultCode {
		case ast.TIMEOUT:
			return ErrTimeout
		case ast.NETWORK_ERROR, ast.SERVER_NOT_AVAILABLE, ast.NO_AVAILABLE_CONNECTIONS_TO_NODE, ast.INVALID_NODE_ERROR:
			return ErrConn
		}
		return ErrStatus5xx
	case errors.As(err, &ne) && ne.Timeout():
		return ErrTimeout
	case errors.As(err, &ne):
		return ErrConn
	case errors.As(err, &rerr):
		return ErrStatus5xx
	}
	return ErrOther
}

// storeError wraps a Redis or Aerospike client error the way the catalog's
// stores report theirs: the caller's deadline (or a client timeout) is
// catalog.ErrDeadline, a network failure catalog.ErrUnavailable; an error
// reply of the server is returned as it is.
func storeError(op string, ctx context.Context, err error) error {
	var ne net.Error
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("%w: %s: %w", catalog.ErrDeadline, op, err)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return fmt.Errorf("%w: %s: %w", catalog.ErrDeadline, op, err)
	case errors.As(err, &ne):
		return fmt.Errorf("%w: %s: %w", catalog.ErrUnavailable, op, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// resolveList applies the catalog's answer rules (package catalog: order
// asked, skip absent and out-of-stock ids, each id once, at most atMost) to
// values fetched by id: vals[i] is the encoded value (catalog.AppendValue) of
// ids[i], nil when absent.
func resolveList(group int64, ids []int64, vals [][]byte, atMost int32) ([]*catalogpb.Product, error) {
	if atMost <= 0 || len(ids) == 0 {
		return nil, nil
	}
	n := min(int(atMost), len(ids))
	out := make([]*catalogpb.Product, 0, n)
next:
	for i, id := range ids {
		if len(out) == n {
			break
		}
		if vals[i] == nil || id <= 0 {
			continue
		}
		for _, p := range out {
			if p.ProductId == id {
				continue next
			}
		}
		p := new(catalogpb.Product)
		if err := catalog.DecodeValue(group, id, vals[i], p); err != nil {
			return nil, err
		}
		if p.InStock {
			out = append(out, p)
		}
	}
	return out, nil
}

// answer builds a response from the values of both lists fetched in one
// round trip (product1 ids first, then product2 ids).
func answer(req *catalogpb.ProductMastersRequest, vals [][]byte) (*catalogpb.ProductMastersResponse, error) {
	n1 := len(req.Product1Ids)
	p1, err := resolveList(req.ProductGroupId, req.Product1Ids, vals[:n1], req.Product1QuantityAtMost)
	if err != nil {
		return nil, err
	}
	p2, err := resolveList(req.ProductGroupId, req.Product2Ids, vals[n1:], req.Product2QuantityAtMost)
	if err != nil {
		return nil, err
	}
	return &catalogpb.ProductMastersResponse{Product1S: p1, Product2S: p2}, nil
}

// requestKeys validates req and returns the keys key makes of its ids,
// in the order answer reads their values: none when req has no ids, and
// catalog.ErrDeadline when ctx is done.
func requestKeys[K any](ctx context.Context, req *catalogpb.ProductMastersRequest, maxIDs int, key func(group, id int64) (K, error)) ([]K, error) {
	if err := catalog.ValidateRequest(req, maxIDs); err != nil {
		return nil, err
	}
	n := len(req.Product1Ids) + len(req.Product2Ids)
	if n == 0 {
		return nil, nil
	}
	keys := make([]K, 0, n)
	for _, l := range [2][]int64{req.Product1Ids, req.Product2Ids} {
		for _, id := range l {
			k, err := key(req.ProductGroupId, id)
			if err != nil {
				return nil, err
			}
			keys = append(keys, k)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", catalog.ErrDeadline, err)
	}
	return keys, nil
}

// redisKey is the key of a product in Redis: "p:{group}:{id}".
func redisKey(dst []byte, group, id int64) []byte {
	dst = append(dst, "p:"...)
	dst = strconv.AppendInt(dst, group, 10)
	dst = append(dst, ':')
	return strconv.AppendInt(dst, id, 10)
}

// redisStore serves product masters from Redis: every product is a string
// key "p:{group}:{id}" holding catalog.AppendValue's encoding; a lookup is
// one MGET of all the request's ids, decoded and filtered with the
// catalog's rules. Safe for concurrent use (go-redis pools connections).
type redisStore struct {
	rdb    *redis.Client
	maxIDs int
}

func newRedisStore(addr string, poolSize int) *redisStore {
	return &redisStore{
		rdb: redis.NewClient(&redis.Options{Addr: addr, PoolSize: poolSize, MinIdleConns: min(poolSize, 4),
			ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second, ContextTimeoutEnabled: true, DisableIdentity: true}),
		maxIDs: 1000,
	}
}

func (s *redisStore) GetProductMasters(ctx context.Context, req *catalogpb.ProductMastersRequest) (*catalogpb.ProductMastersResponse, error) {
	var kb []byte
	keys, err := requestKeys(ctx, req, s.maxIDs, func(group, id int64) (string, error) {
		kb = redisKey(kb[:0], group, id)
		return string(kb), nil
	})
	if err != nil {
		return nil, err
	}
	n := len(keys)
	if n == 0 {
		return &catalogpb.ProductMastersResponse{}, nil
	}
	res, err := s.rdb.MGet(ctx, keys...).Result()
	if err != nil {
		return nil, storeError("redis: mget", ctx, err)
	}
	if len(res) != n {
		return nil, fmt.Errorf("redis: mget: %d values for %d keys", len(res), n)
	}
	vals := make([][]byte, n)
	for i, v := range res {
		if s, ok := v.(string); ok {
			vals[i] = []byte(s)
		}
	}
	return answer(req, vals)
}

// load writes products to Redis pipelined, batch at a time.
func (s *redisStore) load(ctx context.Context, products func(yield func(*catalogpb.Product) error) error) (int, error) {
	const batch = 2000
	pipe := s.rdb.Pipeline()
	n, pending := 0, 0
	var kb, vb []byte
	flush := func() error {
		if pending == 0 {
			return nil
		}
		_, err := pipe.Exec(ctx)
		pending = 0
		if err != nil {
			return fmt.Errorf("redis: load: %w", err)
		}
		return nil
	}
	err := products(func(p *catalogpb.Product) error {
		kb = redisKey(kb[:0], p.ProductGroupId, p.ProductId)
		vb = catalog.AppendValue(vb[:0], p)
		pipe.Set(ctx, string(kb), string(vb), 0)
		n++
		pending++
		if pending == batch {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	return n, err
}

func (s *redisStore) ping(ctx context.Context) error { return s.rdb.Ping(ctx).Err() }

func (s *redisStore) Close() error { return s.rdb.Close() }

// aerospikeStore serves product masters from Aerospike: every product is a
// record of set "products" keyed "{group}:{id}" with one blob bin "v"
// holding catalog.AppendValue's encoding; a lookup is one BatchGet of all
// the request's ids (the client splits it per node: the round trips the
// talk counted against Aerospike). Safe for concurrent use.
type aerospikeStore struct {
	c      *as.Client
	ns     string
	maxIDs int
}

const (
	aerospikeSet = "products"
	aerospikeBin = "v"
)

func newAerospikeStore(hosts, namespace string) (*aerospikeStore, error) {
	hs, aerr := as.NewHosts(splitList(hosts)...)
	if aerr != nil {
		return nil, fmt.Errorf("aerospike: hosts %q: %w", hosts, aerr)
	}
	cp := as.NewClientPolicy()
	cp.Timeout = 5 * time.Second
	c, aerr := as.NewClientWithPolicyAndHost(cp, hs...)
	if aerr != nil {
		return nil, fmt.Errorf("aerospike: connect %s: %w", hosts, aerr)
	}
	return &aerospikeStore{c: c, ns: namespace, maxIDs: 1000}, nil
}

func (s *aerospikeStore) key(group, id int64) (*as.Key, error) {
	k, aerr := as.NewKey(s.ns, aerospikeSet, strconv.FormatInt(group, 10)+":"+strconv.FormatInt(id, 10))
	if aerr != nil {
		return nil, fmt.Errorf("aerospike: key: %w", aerr)
	}
	return k, nil
}

func (s *aerospikeStore) GetProductMasters(ctx context.Context, req *catalogpb.ProductMastersRequest) (*catalogpb.ProductMastersResponse, error) {
	keys, err := requestKeys(ctx, req, s.maxIDs, s.key)
	if err != nil {
		return nil, err
	}
	n := len(keys)
	if n == 0 {
		return &catalogpb.ProductMastersResponse{}, nil
	}
	bp := as.NewBatchPolicy()
	if d, ok := ctx.Deadline(); ok {
		left := time.Until(d)
		if left <= 0 {
			return nil, fmt.Errorf("%w: %w", catalog.ErrDeadline, context.DeadlineExceeded)
		}
		bp.TotalTimeout, bp.SocketTimeout = left, left
	}
	recs, aerr := s.c.BatchGet(bp, keys, aerospikeBin)
	if aerr != nil && !aerr.Matches(ast.KEY_NOT_FOUND_ERROR) {
		if aerr.Matches(ast.TIMEOUT) {
			return nil, fmt.Errorf("%w: aerospike: batch get: %w", catalog.ErrDeadline, aerr)
		}
		return nil, storeError("aerospike: batch get", ctx, aerr)
	}
	vals := make([][]byte, n)
	for i, r := range recs {
		if i < n && r != nil {
			if b, ok := r.Bins[aerospikeBin].([]byte); ok {
				vals[i] = b
			}
		}
	}
	return answer(req, vals)
}

// load writes products with BatchOperate, batch at a time.
func (s *aerospikeStore) load(ctx context.Context, products func(yield func(*catalogpb.Product) error) error) (int, error) {
	const batch = 500
	recs := make([]as.BatchRecordIfc, 0, batch)
	n := 0
	flush := func() error {
		if len(recs) == 0 {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		bp := as.NewBatchPolicy()
		bp.TotalTimeout = 30 * time.Second
		if aerr := s.c.BatchOperate(bp, recs); aerr != nil {
			return fmt.Errorf("aerospike: load: %w", aerr)
		}
		for _, r := range recs {
			if rc := r.BatchRec().ResultCode; rc != ast.OK {
				return fmt.Errorf("aerospike: load: record %v: result code %d", r.BatchRec().Key, rc)
			}
		}
		recs = recs[:0]
		return nil
	}
	err := products(func(p *catalogpb.Product) error {
		k, err := s.key(p.ProductGroupId, p.ProductId)
		if err != nil {
			return err
		}
		recs = append(recs, as.NewBatchWrite(nil, k, as.PutOp(as.NewBin(aerospikeBin, catalog.AppendValue(nil, p)))))
		n++
		if len(recs) == batch {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	return n, err
}

func (s *aerospikeStore) Close() error { s.c.Close(); return nil }
