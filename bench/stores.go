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

// productStore is what the store scenario needs from a product store:
// catalog.Local, the catalog/remote client, and the Redis and Aerospike
// stores below all answer it with the catalog's semantics and errors.
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

// classifyStoreError maps a store's error to an outcome: deadline =
// timeout, unavailable = conn, invalid argument = 4xx, an error reply from
// Redis or Aerospike = 5xx.
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

// storeError wraps a Redis or Aerospike client error the way the catalog's
// stores report theirs: the caller's deadline (or a client timeout) is
// catalog.ErrDeadline, a network failure catalog.ErrUnavailable; an error
// reply of the server is returned as it is.
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

// kvMaxIDs bounds the ids of a request to the key-value stores, as
// catalog.ValidateRequest checks them.
const kvMaxIDs = 1000

// kvGet answers req from a key-value store holding every product as
// catalog.AppendValue's encoding under a key of its group and id: one
// multi-get (mget returns a value per id, nil when absent) of all the
// request's ids, decoded and filtered by the catalog's rules.
func kvGet(ctx context.Context, req *catalogpb.ProductMastersRequest,
	mget func(ctx context.Context, group int64, ids []int64) ([][]byte, error)) (*catalogpb.ProductMastersResponse, error) {
	if err := catalog.ValidateRequest(req, kvMaxIDs); err != nil {
		return nil, err
	}
	ids := slices.Concat(req.Product1Ids, req.Product2Ids)
	if len(ids) == 0 {
		return &catalogpb.ProductMastersResponse{}, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", catalog.ErrDeadline, err)
	}
	vals, err := mget(ctx, req.ProductGroupId, ids)
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

// resolveList applies the catalog's answer rules (package catalog: order
// asked, skip absent and out-of-stock ids, each id once, at most atMost) to
// values fetched by id: vals[i] is the encoded value of ids[i], nil when
// absent.
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

// productKey is a product's key in Redis ("p:" first) and Aerospike:
// "{group}:{id}".
func productKey(group, id int64) string {
	return strconv.FormatInt(group, 10) + ":" + strconv.FormatInt(id, 10)
}

// loadBatched hands products to write in batches of size; it returns how
// many it handed over.
func loadBatched(products iter.Seq[*catalogpb.Product], size int, write func([]*catalogpb.Product) error) (int, error) {
	var batch []*catalogpb.Product
	n := 0
	for p := range products {
		batch = append(batch, p)
		n++
		if len(batch) == size {
			if err := write(batch); err != nil {
				return n, err
			}
			batch = batch[:0]
		}
	}
	if len(batch) > 0 {
		return n, write(batch)
	}
	return n, nil
}

// redisStore serves product masters from Redis: every product is a string
// key "p:{group}:{id}" holding catalog.AppendValue's encoding; a lookup is
// one MGET. Safe for concurrent use (go-redis pools connections).
type redisStore struct{ rdb *redis.Client }

func newRedisStore(addr string, poolSize int) *redisStore {
	return &redisStore{rdb: redis.NewClient(&redis.Options{Addr: addr, PoolSize: poolSize, MinIdleConns: min(poolSize, 4),
		ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second, ContextTimeoutEnabled: true, DisableIdentity: true})}
}

func (s *redisStore) GetProductMasters(ctx context.Context, req *catalogpb.ProductMastersRequest) (*catalogpb.ProductMastersResponse, error) {
	return kvGet(ctx, req, func(ctx context.Context, group int64, ids []int64) ([][]byte, error) {
		keys := make([]string, len(ids))
		for i, id := range ids {
			keys[i] = "p:" + productKey(group, id)
		}
		res, err := s.rdb.MGet(ctx, keys...).Result()
		if err != nil {
			return nil, storeError("redis: mget", ctx, err)
		}
		vals := make([][]byte, len(ids))
		for i, v := range res[:min(len(res), len(ids))] {
			if s, ok := v.(string); ok {
				vals[i] = []byte(s)
			}
		}
		return vals, nil
	})
}

// load writes products to Redis, pipelined 2,000 at a time.
func (s *redisStore) load(ctx context.Context, products iter.Seq[*catalogpb.Product]) (int, error) {
	return loadBatched(products, 2000, func(ps []*catalogpb.Product) error {
		pipe := s.rdb.Pipeline()
		for _, p := range ps {
			pipe.Set(ctx, "p:"+productKey(p.ProductGroupId, p.ProductId), catalog.AppendValue(nil, p), 0)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return fmt.Errorf("redis: load: %w", err)
		}
		return nil
	})
}

func (s *redisStore) Close() error { return s.rdb.Close() }

// aerospikeStore serves product masters from Aerospike: every product is a
// record of set "products" keyed "{group}:{id}" with one blob bin "v"
// holding catalog.AppendValue's encoding; a lookup is one BatchGet (the
// client splits it per node: the round trips the talk counted against
// Aerospike). Safe for concurrent use.
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

func (s *aerospikeStore) key(group, id int64) (*as.Key, error) {
	k, aerr := as.NewKey(s.ns, aerospikeSet, productKey(group, id))
	if aerr != nil {
		return nil, fmt.Errorf("aerospike: key: %w", aerr)
	}
	return k, nil
}

func (s *aerospikeStore) GetProductMasters(ctx context.Context, req *catalogpb.ProductMastersRequest) (*catalogpb.ProductMastersResponse, error) {
	return kvGet(ctx, req, func(ctx context.Context, group int64, ids []int64) ([][]byte, error) {
		keys := make([]*as.Key, len(ids))
		for i, id := range ids {
			var err error
			if keys[i], err = s.key(group, id); err != nil {
				return nil, err
			}
		}
		bp := as.NewBatchPolicy()
		if d, ok := ctx.Deadline(); ok {
			bp.TotalTimeout = time.Until(d)
			if bp.TotalTimeout <= 0 {
				return nil, fmt.Errorf("%w: %w", catalog.ErrDeadline, context.DeadlineExceeded)
			}
			bp.SocketTimeout = bp.TotalTimeout
		}
		recs, aerr := s.c.BatchGet(bp, keys, aerospikeBin)
		if aerr != nil && !aerr.Matches(ast.KEY_NOT_FOUND_ERROR) {
			return nil, storeError("aerospike: batch get", ctx, aerr)
		}
		vals := make([][]byte, len(ids))
		for i, r := range recs[:min(len(recs), len(ids))] {
			if r != nil {
				vals[i], _ = r.Bins[aerospikeBin].([]byte)
			}
		}
		return vals, nil
	})
}

// load writes products with BatchOperate, 500 at a time.
func (s *aerospikeStore) load(ctx context.Context, products iter.Seq[*catalogpb.Product]) (int, error) {
	return loadBatched(products, 500, func(ps []*catalogpb.Product) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		recs := make([]as.BatchRecordIfc, len(ps))
		for i, p := range ps {
			k, err := s.key(p.ProductGroupId, p.ProductId)
			if err != nil {
				return err
			}
			recs[i] = as.NewBatchWrite(nil, k, as.PutOp(as.NewBin(aerospikeBin, catalog.AppendValue(nil, p))))
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
