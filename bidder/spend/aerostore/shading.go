package aerostore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"time"

	as "github.com/aerospike/aerospike-client-go/v7"
	"github.com/aerospike/aerospike-client-go/v7/types"

	"github.com/rtbd/rtbd/bidder/shading"
)

// Bid shading's counts (shading.Store), shared by the fleet, in the spend
// set:
//
//	|h|SLOT|SEG  bins KIND BUCKET (shading.CountName: the kind and the price
//	             bucket, e.g. "w17"), integers: the fleet's counts of segment SEG
//	             (hex) in the slot starting at SLOT (unix s)
//	|hx|SLOT     bin s, a blob: the ids (4 bytes BE each) of the segments
//	             with counts in SLOT, appended once per bidder and slot (a
//	             retried add may append one twice: readers dedupe)
//
// The leading '|' keeps them apart from the campaigns' records (a campaign
// id has no '|'). An add is one BatchOperate: per segment, ADD of its non-zero counts;
// APPEND of the new segments to the slot's index; every record with the
// TTL left until the add's expiry (a write with a TTL, so the namespace
// needs nsup-period, as for the day records: ErrTTLRefused). A read is one
// BatchGet. The server's rules this respects: the bin names are at most
// 4 x 128 distinct names of 4 bytes (the namespace's bin-name limit of
// servers before 7.0 is 65,535); an index record holds 4 bytes per
// segment per bidder (10 bidders x 4,096 segments: 160 KiB, below the 1
// MiB default record size); a slot's index record is a hot key written by
// every bidder once per flush with new segments, so KEY_BUSY is retried
// like the spend records'. Counts are statistics: a record that fails
// after the others of the batch were applied fails the add, and its retry
// adds those again.

const shadeIndexBin = "s"

func shadeRecKey(slot int64, seg shading.SegmentID) string {
	return "|h|" + strconv.FormatInt(slot, 10) + "|" + strconv.FormatUint(uint64(seg), 16)
}

func shadeIndexKey(slot int64) string { return "|hx|" + strconv.FormatInt(slot, 10) }

// AddShading implements shading.Store.
func (s *Store) AddShading(ctx context.Context, slot int64, counts []shading.SlotCounts, index []shading.SegmentID, expires time.Time) error {
	if err := shading.ValidateAdd(slot, counts, expires); err != nil {
		return err
	}
	ttl := time.Until(expires).Round(time.Second)
	if ttl < time.Second {
		return nil // already expired: nothing to keep
	}
	wp := as.NewBatchWritePolicy()
	wp.Expiration = uint32(ttl / time.Second)
	var ops []as.BatchRecordIfc
	var keys []*as.Key
	for i := range counts {
		c := &counts[i]
		var bins []*as.Operation
		for name, v := range c.NonZero() {
			bins = append(bins, as.AddOp(as.NewBin(name, int64(v))))
		}
		if len(bins) == 0 {
			continue
		}
		key, err := s.key(s.opts.SpendSet, shadeRecKey(slot, c.Segment))
		if err != nil {
			return err
		}
		ops, keys = append(ops, as.NewBatchWrite(wp, key, bins...)), append(keys, key)
	}
	if len(index) > 0 {
		ids := make([]byte, 0, 4*len(index))
		for _, g := range index {
			ids = binary.BigEndian.AppendUint32(ids, uint32(g))
		}
		key, err := s.key(s.opts.SpendSet, shadeIndexKey(slot))
		if err != nil {
			return err
		}
		ops, keys = append(ops, as.NewBatchWrite(wp, key, as.AppendOp(as.NewBin(shadeIndexBin, ids)))), append(keys, key)
	}
	if len(ops) == 0 {
		return nil
	}
	if err := s.operate(ctx, ops); err != nil {
		return fmt.Errorf("aerostore: add shading counts: %w", err)
	}
	var failed []error
	for i, o := range ops {
		if r := o.BatchRec(); r.ResultCode != types.OK {
			failed = append(failed, recordErr(r, keys[i]))
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("aerostore: add shading counts: %d of %d records failed: %w", len(failed), len(ops), errors.Join(failed...))
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
	keys := make([]*as.Key, 0, len(segs)*len(slots))
	for _, sl := range slots {
		for _, g := range segs {
			key, err := s.key(s.opts.SpendSet, shadeRecKey(sl, g))
			if err != nil {
				return nil, err
			}
			keys = append(keys, key)
		}
	}
	recs, err := s.batchGet(ctx, keys)
	if err != nil {
		return nil, fmt.Errorf("aerostore: read shading counts: %w", err)
	}
	found := 0
	for _, r := range recs {
		if r != nil && len(r.Bins) > 0 {
			found++
		}
	}
	out := make([]shading.SlotCounts, 0, found) // sized once: an entry is 2 KiB
	for i, r := range recs {
		if r == nil || len(r.Bins) == 0 {
			continue
		}
		out = append(out, shading.SlotCounts{Segment: segs[i%len(segs)], Slot: slots[i/len(segs)]})
		c := &out[len(out)-1]
		for name := range r.Bins {
			kind, b, ok := shading.ParseCountName(name)
			if !ok {
				return nil, fmt.Errorf("aerostore: shading counts %v: bad bin %q", keys[i].Value(), name)
			}
			v, err := intBin(r.Bins, name)
			if err != nil || v < 0 || v > 1<<32-1 {
				return nil, fmt.Errorf("aerostore: shading counts %v: bin %q: %v", keys[i].Value(), name, r.Bins[name])
			}
			c.N[kind][b] = uint32(v)
		}
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
	keys := make([]*as.Key, len(slots))
	for i, sl := range slots {
		key, err := s.key(s.opts.SpendSet, shadeIndexKey(sl))
		if err != nil {
			return nil, err
		}
		keys[i] = key
	}
	recs, err := s.batchGet(ctx, keys)
	if err != nil {
		return nil, fmt.Errorf("aerostore: read shading index: %w", err)
	}
	seen := map[shading.SegmentID]bool{}
	var out []shading.SegmentID
	for i, r := range recs {
		if r == nil {
			continue
		}
		ids, ok := r.Bins[shadeIndexBin].([]byte)
		if !ok || len(ids)%4 != 0 {
			return nil, fmt.Errorf("aerostore: shading index %v: bin %s is %T of %d bytes", keys[i].Value(), shadeIndexBin, r.Bins[shadeIndexBin], len(ids))
		}
		for j := 0; j < len(ids); j += 4 {
			if g := shading.SegmentID(binary.BigEndian.Uint32(ids[j:])); !seen[g] {
				seen[g] = true
				out = append(out, g)
			}
		}
	}
	return out, nil
}

// batchGet reads keys in one BatchGet: a nil record for a key not found.
func (s *Store) batchGet(ctx context.Context, keys []*as.Key) ([]*as.Record, error) {
	t, err := s.timeout(ctx)
	if err != nil {
		return nil, err
	}
	p := s.batchPolicy(t)
	p.MaxRetries = 2 // reads are safe to retry
	recs, aerr := s.c.BatchGet(p, keys)
	if aerr != nil && !aerr.Matches(types.KEY_NOT_FOUND_ERROR) {
		return nil, aerr
	}
	if len(recs) != len(keys) {
		return nil, fmt.Errorf("%d records for %d keys", len(recs), len(keys))
	}
	return recs, nil
}
