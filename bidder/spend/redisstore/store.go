// Package redisstore is the Redis spend.Store (github.com/redis/go-redis/v9),
// shared by a fleet of bidders.
//
// # Keys (Prefix default "rtbd:")
//
//	{P}spend:{C}:d:DAY      hash m (micros), i (impressions); expires after DayTTL
//	{P}spend:{C}:t          hash m, i: the campaign's lifetime totals, and
//	                        its outcome counters (spend.CountName: b, w,
//	                        l102, ...); no expiry
//	{P}freq:{C}:WINDOW:USER integer count; EXPIREAT the FreqDelta's expiry
//	{P}n:{C}:KEY            the Delta.Origin that charged notice KEY
//	                        (spend.NoticeKey: nonce and kind); expires at
//	                        the Notice's Expires
//	{P}spend:{C}:id:ID      "1": delta ID applied (deltas without notices
//	                        only); expires after spend.DedupeWindow
//	{P}lease:ID             the holder of the instance lease on
//	                        spend.instance_id ID (spend.LeaseStore);
//	                        expires after the lease's TTL
//
// Bid shading's counts (shading.Store) have keys {P}shade:...: see
// shading.go.
//
// C is the campaign id inside braces, a Redis Cluster hash tag: every key of
// one campaign lives in one slot, so each delta's script is valid on a
// cluster too.
//
// # Flush
//
// Each delta is one Lua script (EVALSHA). For a delta with notices (every
// delta of a spend.Writer): per notice, SET NX of its key with its expiry
// (PX); only the notices whose key is new add their micros and impression
// (HINCRBY of the day and total hashes) and their user count (INCRBY +
// EXPIREAT); a notice whose key exists is a duplicate (a replay seen by
// another bidder, a retried flush, a journal replay after a restart) and
// adds nothing. It returns the values after the add and the number of
// duplicates. Redis runs a script atomically, so a notice is charged with
// its key, completely or not at all, and at most once fleet-wide while its
// key lives, however often the flush is retried and whichever bidder sends
// it: a flush whose reply is lost (an unknown outcome) is sent again and
// finds its keys. A delta without notices (a caller of the Store other
// than the Writer) is applied once per Delta.ID instead: SET NX of its id
// key, then the adds only if the id is new.
//
// All the deltas of a Flush go in one pipeline: one round trip. A NOSCRIPT
// answer (a restarted Redis lost its script cache) reloads the scripts and
// sends the pipeline again, which the keys make safe. Deltas of one Flush
// are atomic one by one, not together: after an error some may be applied,
// and the caller's retry applies only the others.
//
// Durability is Redis's: only appendonly yes with appendfsync always keeps
// every acknowledged flush across a Redis crash (and so every charged
// notice's key); appendfsync everysec may lose the last second, and with
// it the keys, so a bidder's retry or replay of those notices charges them
// again, once; without persistence a Redis restart loses all totals.
// Configure production Redis with AOF.
//
// The client should be created with ContextTimeoutEnabled: true so that the
// Writer's flush timeout bounds a call to a hung Redis.
package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rtbd/rtbd/bidder/spend"
)

// Defaults of Options.
const (
	DefaultPrefix = "rtbd:"
	DefaultDayTTL = 400 * 24 * time.Hour
)

// Options configures New. The zero value is usable.
type Options struct {
	// Prefix starts every key. Default "rtbd:" (config redis.prefix).
	Prefix string
	// DayTTL is how long a day's hash is kept after its last write. Default 400 days.
	DayTTL time.Duration
}

// Store is the Redis spend store. Safe for concurrent use. It does not own
// the client: whoever created it closes it.
type Store struct {
	rdb     redis.UniversalClient
	opts    Options
	script  *redis.Script // deltas without notices
	notices *redis.Script // deltas with notices
}

// New returns a store on rdb.
func New(rdb redis.UniversalClient, opts Options) *Store {
	if opts.Prefix == "" {
		opts.Prefix = DefaultPrefix
	}
	if opts.DayTTL <= 0 {
		opts.DayTTL = DefaultDayTTL
	}
	return &Store{rdb: rdb, opts: opts, script: redis.NewScript(flushLua), notices: redis.NewScript(noticesLua)}
}

// addSpendLua defines addSpend(add, day, total, m, i, ttl): when add,
// HINCRBY m and i of the day and total hashes and EXPIRE the day's after
// ttl seconds; in any case return day m, day i, total m, total i.
const addSpendLua = `
local function addSpend(add, dk, tk, m, i, ttl)
  local r = {}
  if add then
    r[1] = redis.call('HINCRBY', dk, 'm', m)
    r[2] = redis.call('HINCRBY', dk, 'i', i)
    redis.call('EXPIRE', dk, ttl)
    r[3] = redis.call('HINCRBY', tk, 'm', m)
    r[4] = redis.call('HINCRBY', tk, 'i', i)
  else
    local d = redis.call('HMGET', dk, 'm', 'i')
    local t = redis.call('HMGET', tk, 'm', 'i')
    r[1] = tonumber(d[1]) or 0
    r[2] = tonumber(d[2]) or 0
    r[3] = tonumber(t[1]) or 0
    r[4] = tonumber(t[2]) or 0
  end
  return r
end
`

// flushLua applies one delta without notices; see the package comment.
// KEYS: id, day, total, freq keys...  ARGV: micros, imps, id ttl s, day ttl s, then count, expireat per freq key,
// then name, value per outcome counter (spend.Delta.Counts) to add to the total hash.
// Returns day m, day i, total m, total i, the freq counts, the counters.
const flushLua = addSpendLua + `
local fresh = redis.call('SET', KEYS[1], '1', 'NX', 'EX', ARGV[3])
local r = addSpend(fresh, KEYS[2], KEYS[3], ARGV[1], ARGV[2], ARGV[4])
for j = 4, #KEYS do
  local a = 5 + (j - 4) * 2
  if fresh then
    r[#r + 1] = redis.call('INCRBY', KEYS[j], ARGV[a])
    redis.call('EXPIREAT', KEYS[j], ARGV[a + 1])
  else
    r[#r + 1] = tonumber(redis.call('GET', KEYS[j])) or 0
  end
end
for a = 5 + (#KEYS - 3) * 2, #ARGV, 2 do
  if fresh then
    r[#r + 1] = redis.call('HINCRBY', KEYS[3], ARGV[a], ARGV[a + 1])
  else
    r[#r + 1] = tonumber(redis.call('HGET', KEYS[3], ARGV[a])) or 0
  end
end
return r
`

// noticesLua applies one delta with notices; see the package comment.
// KEYS: day, total, F freq keys, then one key per notice.
// ARGV: F, day ttl s, origin, F expireat values, then micros, freq ref
// (1-based, 0 none) and key ttl ms per notice.
// Returns day m, day i, total m, total i, the F freq counts, duplicates.
const noticesLua = addSpendLua + `
local F = tonumber(ARGV[1])
local dm, di, dup = 0, 0, 0
local fc = {}
for j = 1, F do fc[j] = 0 end
local nk = 3 + F
for k = 0, #KEYS - nk do
  local a = 4 + F + k * 3
  if redis.call('SET', KEYS[nk + k], ARGV[3], 'NX', 'PX', ARGV[a + 2]) then
    dm = dm + tonumber(ARGV[a])
    di = di + 1
    local f = tonumber(ARGV[a + 1])
    if f > 0 then fc[f] = fc[f] + 1 end
  else
    dup = dup + 1
  end
end
local r = addSpend(di > 0, KEYS[1], KEYS[2], string.format('%d', dm), string.format('%d', di), ARGV[2])
for j = 1, F do
  if fc[j] > 0 then
    r[#r + 1] = redis.call('INCRBY', KEYS[2 + j], fc[j])
    redis.call('EXPIREAT', KEYS[2 + j], ARGV[3 + j])
  else
    r[#r + 1] = tonumber(redis.call('GET', KEYS[2 + j])) or 0
  end
end
r[#r + 1] = dup
return r
`

func (s *Store) campaignKey(c string) string { return s.opts.Prefix + "spend:{" + c + "}:" }

// Flush implements spend.Store.
func (s *Store) Flush(ctx context.Context, deltas []spend.Delta) ([]spend.Total, error) {
	if err := spend.ValidateDeltas(deltas); err != nil {
		return nil, err
	}
	if len(deltas) == 0 {
		return []spend.Total{}, nil
	}
	idTTL := int64(spend.DedupeWindow / time.Second)
	dayTTL := int64(s.opts.DayTTL / time.Second)
	now := time.Now()
	var cmds []*redis.Cmd
	send := func() error {
		cmds = cmds[:0]
		_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i := range deltas {
				d := &deltas[i]
				if len(d.Notices) > 0 {
					cmds = append(cmds, s.noticesCmd(ctx, p, d, dayTTL, now))
					continue
				}
				ck := s.campaignKey(d.Campaign)
				keys := make([]string, 3, 3+len(d.Freq))
				keys[0], keys[1], keys[2] = ck+"id:"+d.ID, ck+"d:"+d.Day, ck+"t"
				args := make([]any, 4, 4+2*len(d.Freq))
				args[0], args[1], args[2], args[3] = d.Micros, d.Imps, idTTL, dayTTL
				fp := s.opts.Prefix + "freq:{" + d.Campaign + "}:"
				for _, f := range d.Freq {
					keys = append(keys, fp+strconv.FormatInt(f.Window, 10)+":"+f.User)
					args = append(args, f.Count, f.Expires.Unix())
				}
				if d.Counts != nil {
					for c, v := range d.Counts {
						args = append(args, spend.CountName(c), v)
					}
				}
				cmds = append(cmds, s.script.EvalSha(ctx, p, keys, args...))
			}
			return nil
		})
		return err
	}
	err := send()
	if err != nil && isNoScript(cmds) {
		for _, sc := range []*redis.Script{s.script, s.notices} {
			if lerr := sc.Load(ctx, s.rdb).Err(); lerr != nil {
				return nil, fmt.Errorf("redisstore: load script: %w", lerr)
			}
		}
		err = send()
	}
	if err != nil {
		return nil, fmt.Errorf("redisstore: flush: %w", err)
	}
	out := make([]spend.Total, len(deltas))
	for i, cmd := range cmds {
		d := &deltas[i]
		v, err := cmd.Int64Slice()
		if err != nil {
			return nil, fmt.Errorf("redisstore: flush: delta %d: %w", i, err)
		}
		want := 4 + len(d.Freq)
		if len(d.Notices) > 0 {
			want++
		}
		if d.Counts != nil {
			want += spend.NumCounts
		}
		if len(v) != want {
			return nil, fmt.Errorf("redisstore: flush: delta %d: script returned %d values, want %d", i, len(v), want)
		}
		out[i] = spend.Total{Campaign: d.Campaign, Day: d.Day, DayMicros: v[0], DayImps: v[1], TotalMicros: v[2], TotalImps: v[3]}
		if len(d.Freq) > 0 {
			out[i].Freq = v[4 : 4+len(d.Freq)]
		}
		if len(d.Notices) > 0 {
			out[i].Duplicates = v[len(v)-1]
		}
		if d.Counts != nil {
			copy(out[i].Counts[:], v[4+len(d.Freq):])
		}
	}
	return out, nil
}

// noticesCmd queues the script of delta d, which has notices.
func (s *Store) noticesCmd(ctx context.Context, p redis.Pipeliner, d *spend.Delta, dayTTL int64, now time.Time) *redis.Cmd {
	ck := s.campaignKey(d.Campaign)
	fp := s.opts.Prefix + "freq:{" + d.Campaign + "}:"
	np := s.opts.Prefix + "n:{" + d.Campaign + "}:"
	keys := make([]string, 0, 2+len(d.Freq)+len(d.Notices))
	keys = append(keys, ck+"d:"+d.Day, ck+"t")
	args := make([]any, 0, 3+len(d.Freq)+3*len(d.Notices))
	args = append(args, len(d.Freq), dayTTL, d.Origin)
	for _, f := range d.Freq {
		keys = append(keys, fp+strconv.FormatInt(f.Window, 10)+":"+f.User)
		args = append(args, f.Expires.Unix())
	}
	for k := range d.Notices {
		n := &d.Notices[k]
		keys = append(keys, np+spend.NoticeKey(n))
		ttl := max(n.Expires.Sub(now).Milliseconds(), 1000)
		args = append(args, n.Micros, n.FreqRef, ttl)
	}
	return s.notices.EvalSha(ctx, p, keys, args...)
}

func isNoScript(cmds []*redis.Cmd) bool {
	for _, c := range cmds {
		if err := c.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			return true
		}
	}
	return false
}

// Read implements spend.Store: one pipeline of HMGETs.
func (s *Store) Read(ctx context.Context, campaigns []string, day string) ([]spend.Total, error) {
	if err := spend.ValidateRead(campaigns, day); err != nil {
		return nil, err
	}
	out := make([]spend.Total, len(campaigns))
	if len(campaigns) == 0 {
		return out, nil
	}
	cmds := make([]*redis.SliceCmd, 0, 2*len(campaigns))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, c := range campaigns {
			ck := s.campaignKey(c)
			cmds = append(cmds, p.HMGet(ctx, ck+"d:"+day, "m", "i"), p.HMGet(ctx, ck+"t", totalFields...))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("redisstore: read: %w", err)
	}
	for i, c := range campaigns {
		var d [2]int64
		var t [2 + spend.NumCounts]int64
		err1 := ints(cmds[2*i], d[:])
		err2 := ints(cmds[2*i+1], t[:])
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("redisstore: read %q: %w", c, err)
		}
		out[i] = spend.Total{Campaign: c, Day: day, DayMicros: d[0], DayImps: d[1], TotalMicros: t[0], TotalImps: t[1]}
		copy(out[i].Counts[:], t[2:])
	}
	return out, nil
}

// totalFields are the fields Read reads of a total hash: m, i, then the
// outcome counters.
var totalFields = func() []string {
	f := []string{"m", "i"}
	for c := range spend.NumCounts {
		f = append(f, spend.CountName(c))
	}
	return f
}()

// ints parses the integers of an HMGET answer into out (a missing field is 0).
func ints(cmd *redis.SliceCmd, out []int64) error {
	v, err := cmd.Result()
	if err != nil {
		return err
	}
	for i := 0; i < len(out) && i < len(v); i++ {
		switch x := v[i].(type) {
		case nil:
		case string:
			n, err := strconv.ParseInt(x, 10, 64)
			if err != nil {
				return fmt.Errorf("not an integer: %q", x)
			}
			out[i] = n
		default:
			return fmt.Errorf("unexpected %T", x)
		}
	}
	return nil
}
