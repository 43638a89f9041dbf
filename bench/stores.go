package bench

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net"
	"os"
	"slices"
	"strconv"
	"time"

	as "github.com/aerospike/aerospike-client-go/v7"
	ast "github.com/aerospike/aerospike-client-go/v7/types"
	"github.com/redis/go-redis/v9"

	"github.com/rtbd/rtbd/catalog"
	"github.com/rtbd/rtbd/catalog/catalogpb"
)

// productStore is what the store scenario needs from a product store: catalog.Local, the
// catalog/remote client, and the Redis and Aerospike stores below, with the catalog's semantics and errors.
type productStore interface {
	GetProductMasters(ctx context.Context, req *catalogpb.ProductMastersRequest) (*catalogpb.ProductMastersResponse, error)
}

// storeTarget sends the scenario's request stream to one store.
type storeTarget struct {
	name   string
	store  productStore
	stream *requestStream
}

func (t *storeTarget) Name() string { return t.name }

func (t *storeTarget) Do(ctx context.Context, w *Worker) Outcome {
	if !w.Deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, w.Deadline)
		defer cancel()
	}
	resp, err := t.store.GetProductMasters(ctx, t.stream.take())
	switch {
	case err != nil:
		return classifyStoreError(err)
	case len(resp.Product1S)+len(resp.Product2S) == 0:
		return NoBid // answered, no product to show
	}
	return OK
}

// classifyStoreError maps a store's error to an outcome; an error reply from Redis or Aerospike
// is a 5xx.
func classifyStoreError(err error) Outcome {
	var rerr redis.Error
	var aerr *as.AerospikeError
	switch {
	case errors.Is(err, catalog.ErrDeadline), errors.Is(err, context.DeadlineExceeded):
		return ErrTimeout
	case errors.Is(err, catalog.ErrInvalidArgument):
		return ErrStatus4xx
	case errors.Is(err, catalog.ErrUnavailable):
		return ErrConn
	case errors.As(err, &rerr), errors.As(err, &aerr):
		return ErrStatus5xx
	}
	return ErrOther
}

// storeError wraps a Redis or Aerospike client error as the catalog's stores report theirs: a
// deadline or client timeout is catalog.ErrDeadline, a network failure catalog.ErrUnavailable, a
// server's error reply stays as it is.
func storeError(op string, ctx context.Context, err error) error {
	var ne net.Error
	var aerr *as.AerospikeError
	switch {
	case ctx.Err() != nil, errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded), errors.As(err, &ne) && ne.Timeout(),
		errors.As(err, &aerr) && aerr.Matches(ast.TIMEOUT):
		return fmt.Errorf("%w: %s: %w", catalog.ErrDeadline, op, err)
	case errors.As(err, &ne), errors.As(err, &aerr) && aerr.Matches(ast.NETWORK_ERROR, ast.SERVER_NOT_AVAILABLE,
		ast.NO_AVAILABLE_CONNECTIONS_TO_NODE, ast.INVALID_NODE_ERROR):
		return fmt.Errorf("%w: %s: %w", catalog.ErrUnavailable, op, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// productKey is a product's key in the key-value stores.
func productKey(group, id int64) string {
	return "p:" + strconv.FormatInt(group, 10) + ":" + strconv.FormatInt(id, 10)
}

// kvGet answers req from a key-value store holding every product as catalog.AppendValue's
// encoding under its productKey: one multi-get of all the request's ids (mget returns a value per
// key, nil when absent), decoded and filtered by the catalog's rules.
func kvGet(ctx context.Context, req *catalogpb.ProductMastersRequest,
	mget func(ctx context.Context, keys []string) ([][]byte, error)) (*catalogpb.ProductMastersResponse, error) {
	if err := catalog.ValidateRequest(req, 1000); err != nil { // catalog.LocalOptions.MaxIDs' default
		return nil, err
	}
	ids := slices.Concat(req.Product1Ids, req.Product2Ids)
	if len(ids) == 0 {
		return &catalogpb.ProductMastersResponse{}, nil
	}
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = productKey(req.ProductGroupId, id)
	}
	vals, err := mget(ctx, keys)
	if err != nil {
		return nil, err
	}
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

// resolveList applies the catalog's answer rules (order asked, skip absent and out-of-stock ids,
// each id once, at most atMost) to vals, the encoded value of each of ids (nil when absent).
func resolveList(group int64, ids []int64, vals [][]byte, atMost int32) ([]*catalogpb.Product, error) {
	var out []*catalogpb.Product
	for i, id := range ids {
		if len(out) >= int(atMost) {
			break
		}
		if vals[i] == nil || id <= 0 || slices.ContainsFunc(out, func(p *catalogpb.Product) bool { return p.ProductId == id }) {
			continue
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

// kvLoad hands products to put in batches of size, as their keys and encoded values; it returns
// how many it handed over.
func kvLoad(products iter.Seq[*catalogpb.Product], size int, put func(keys []string, vals [][]byte) error) (int, error) {
	var keys []string
	var vals [][]byte
	n := 0
	for p := range products {
		keys = append(keys, productKey(p.ProductGroupId, p.ProductId))
		vals = append(vals, catalog.AppendValue(nil, p))
		n++
		if len(keys) == size {
			if err := put(keys, vals); err != nil {
				return n, err
			}
			keys, vals = keys[:0], vals[:0]
		}
	}
	if len(keys) > 0 {
		return n, put(keys, vals)
	}
	return n, nil
}

// redisStore is a key-value product store in Redis: a string per product, a lookup one MGET.
type redisStore struct{ rdb *redis.Client }

func newRedisStore(addr string, poolSize int) *redisStore {
	return &redisStore{rdb: redis.NewClient(&redis.Options{Addr: addr, PoolSize: poolSize, MinIdleConns: min(poolSize, 4),
		ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second, ContextTimeoutEnabled: true, DisableIdentity: true})}
}

func (s *redisStore) GetProductMasters(ctx context.Context, req *catalogpb.ProductMastersRequest) (*catalogpb.ProductMastersResponse, error) {
	return kvGet(ctx, req, func(ctx context.Context, keys []string) ([][]byte, error) {
		res, err := s.rdb.MGet(ctx, keys...).Result()
		if err != nil {
			return nil, storeError("redis: mget", ctx, err)
		}
		vals := make([][]byte, len(keys))
		for i, v := range res[:min(len(res), len(keys))] {
			if s, ok := v.(string); ok {
				vals[i] = []byte(s)
			}
		}
		return vals, nil
	})
}

// load writes products to Redis, pipelined 2,000 at a time.
func (s *redisStore) load(ctx context.Context, products iter.Seq[*catalogpb.Product]) (int, error) {
	return kvLoad(products, 2000, func(keys []string, vals [][]byte) error {
		pipe := s.rdb.Pipeline()
		for i, k := range keys {
			pipe.Set(ctx, k, vals[i], 0)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return fmt.Errorf("redis: load: %w", err)
		}
		return nil
	})
}

func (s *redisStore) Close() error { return s.rdb.Close() }

// aerospikeStore is a key-value product store in Aerospike: a record of set "products" with one
// blob bin "v" per product, a lookup one BatchGet (which the client splits per node: the round
// trips the talk counted against Aerospike).
type aerospikeStore struct {
	c  *as.Client
	ns string
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
	return &aerospikeStore{c: c, ns: namespace}, nil
}

// recordKeys are the Aerospike keys of keys.
func (s *aerospikeStore) recordKeys(keys []string) ([]*as.Key, error) {
	out := make([]*as.Key, len(keys))
	for i, k := range keys {
		var aerr as.Error
		if out[i], aerr = as.NewKey(s.ns, aerospikeSet, k); aerr != nil {
			return nil, fmt.Errorf("aerospike: key: %w", aerr)
		}
	}
	return out, nil
}

func (s *aerospikeStore) GetProductMasters(ctx context.Context, req *catalogpb.ProductMastersRequest) (*catalogpb.ProductMastersResponse, error) {
	return kvGet(ctx, req, func(ctx context.Context, keys []string) ([][]byte, error) {
		rks, err := s.recordKeys(keys)
		if err != nil {
			return nil, err
		}
		bp := as.NewBatchPolicy()
		if d, ok := ctx.Deadline(); ok {
			bp.TotalTimeout = time.Until(d)
			if bp.TotalTimeout <= 0 {
				return nil, fmt.Errorf("%w: %w", catalog.ErrDeadline, context.DeadlineExceeded)
			}
			bp.SocketTimeout = bp.TotalTimeout
		}
		recs, aerr := s.c.BatchGet(bp, rks, aerospikeBin)
		if aerr != nil && !aerr.Matches(ast.KEY_NOT_FOUND_ERROR) {
			return nil, storeError("aerospike: batch get", ctx, aerr)
		}
		vals := make([][]byte, len(keys))
		for i, r := range recs[:min(len(recs), len(keys))] {
			if r != nil {
				vals[i], _ = r.Bins[aerospikeBin].([]byte)
			}
		}
		return vals, nil
	})
}

// load writes products with BatchOperate, 500 at a time.
func (s *aerospikeStore) load(ctx context.Context, products iter.Seq[*catalogpb.Product]) (int, error) {
	return kvLoad(products, 500, func(keys []string, vals [][]byte) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		rks, err := s.recordKeys(keys)
		if err != nil {
			return err
		}
		recs := make([]as.BatchRecordIfc, len(keys))
		for i, k := range rks {
			recs[i] = as.NewBatchWrite(nil, k, as.PutOp(as.NewBin(aerospikeBin, vals[i])))
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
		return nil
	})
}

func (s *aerospikeStore) Close() error { s.c.Close(); return nil }
