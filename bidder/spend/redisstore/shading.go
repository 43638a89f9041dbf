package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rtbd/rtbd/bidder/shading"
)

// Bid shading's counts (shading.Store), shared by the fleet:
//
//	{P}shade:SLOT:SEG      hash: field KIND BUCKET (shading.CountName: the
//	                       kind and the price bucket, e.g. "w17") -> the fleet's count;
//	                       EXPIREAT the add's expiry
//	{P}shade:SLOT:idx      set of the segments (decimal) with counts in SLOT;
//	                       EXPIREAT the add's expiry
//
// SLOT is the slot's start (unix s), SEG the segment id in hex. An add is
// one pipeline of HINCRBY, SADD and EXPIREAT (no script: counts are
// statistics, and a retry after a lost reply may add them twice); a read
// one pipeline of HGETALL (SMEMBERS for ShadingSegments). The keys are
// bounded by the fleet's segments times the slots within the expiry.

func (s *Store) shadeKey(slot int64, seg shading.SegmentID) string {
	return s.opts.Prefix + "shade:" + strconv.FormatInt(slot, 10) + ":" + strconv.FormatUint(uint64(seg), 16)
}

func (s *Store) shadeIndexKey(slot int64) string {
	return s.opts.Prefix + "shade:" + strconv.FormatInt(slot, 10) + ":idx"
}

// AddShading implements shading.Store.
func (s *Store) AddShading(ctx context.Context, slot int64, counts []shading.SlotCounts, index []shading.SegmentID, expires time.Time) error {
	if err := shading.ValidateAdd(slot, counts, expires); err != nil {
		return err
	}
	p := s.rdb.Pipeline()
	exp := expires.Truncate(time.Second)
	for i := range counts {
		c := &counts[i]
		if c.Empty() {
			continue
		}
		k := s.shadeKey(slot, c.Segment)
		for name, v := range c.NonZero() {
			p.HIncrBy(ctx, k, name, int64(v))
		}
		p.ExpireAt(ctx, k, exp)
	}
	if len(index) > 0 {
		members := make([]any, len(index))
		for i, g := range index {
			members[i] = strconv.FormatUint(uint64(g), 10)
		}
		ik := s.shadeIndexKey(slot)
		p.SAdd(ctx, ik, members...)
		p.ExpireAt(ctx, ik, exp)
	}
	if p.Len() == 0 {
		return nil
	}
	if _, err := p.Exec(ctx); err != nil {
		return fmt.Errorf("redisstore: add shading counts: %w", err)
	}
	return nil
}

// ReadShading implements shading.Store.
func (s *Store) ReadShading(ctx context.Context, segs []shading.SegmentID, slots []int64) ([]shading.SlotCounts, error) {
	if err := shading.ValidateSlots(slots); err != nil {
		return nil, err
	}
	if len(segs) == 0 || len(slots) == 0 {
		return nil, nil
	}
	p := s.rdb.Pipeline()
	cmds := make([]*redis.MapStringStringCmd, 0, len(segs)*len(slots))
	for _, sl := range slots {
		for _, g := range segs {
			cmds = append(cmds, p.HGetAll(ctx, s.shadeKey(sl, g)))
		}
	}
	if _, err := p.Exec(ctx); err != nil {
		return nil, fmt.Errorf("redisstore: read shading counts: %w", err)
	}
	found := 0
	for _, cmd := range cmds {
		if len(cmd.Val()) > 0 {
			found++
		}
	}
	out := make([]shading.SlotCounts, 0, found) // sized once: an entry is 2 KiB
	for i, cmd := range cmds {
		m := cmd.Val()
		if len(m) == 0 {
			continue
		}
		c := shading.SlotCounts{Segment: segs[i%len(segs)], Slot: slots[i/len(segs)]}
		for f, v := range m {
			kind, b, ok := shading.ParseCountName(f)
			n, err := strconv.ParseUint(v, 10, 32)
			if !ok || err != nil {
				return nil, fmt.Errorf("redisstore: shading counts: bad field %q = %q", f, v)
			}
			c.N[kind][b] = uint32(n)
		}
		out = append(out, c)
	}
	return out, nil
}

// ShadingSegments implements shading.Store.
func (s *Store) ShadingSegments(ctx context.Context, slots []int64) ([]shading.SegmentID, error) {
	if err := shading.ValidateSlots(slots); err != nil {
		return nil, err
	}
	if len(slots) == 0 {
		return nil, nil
	}
	p := s.rdb.Pipeline()
	cmds := make([]*redis.StringSliceCmd, len(slots))
	for i, sl := range slots {
		cmds[i] = p.SMembers(ctx, s.shadeIndexKey(sl))
	}
	if _, err := p.Exec(ctx); err != nil {
		return nil, fmt.Errorf("redisstore: read shading index: %w", err)
	}
	seen := map[shading.SegmentID]bool{}
	var out []shading.SegmentID
	for _, cmd := range cmds {
		for _, v := range cmd.Val() {
			n, err := strconv.ParseUint(v, 10, 32)
			if err != nil {
				return nil, fmt.Errorf("redisstore: shading index: bad member %q", v)
			}
			if g := shading.SegmentID(n); !seen[g] {
				seen[g] = true
				out = append(out, g)
			}
		}
	}
	return out, nil
}
