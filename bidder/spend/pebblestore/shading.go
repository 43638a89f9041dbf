package pebblestore

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/rtbd/rtbd/bidder/shading"
)

// Bid shading's counts (shading.Store): one bidder's own, kept across its
// restarts.
//
//	"h|" + slot (8 bytes BE unix s) + segment (4 bytes BE) -> counts: per
//	                                 non-zero count, uvarint kind x
//	                                 shading.NumBuckets + bucket, uvarint count
//	"hx|" + slot (8 bytes BE)        -> expires (8 bytes BE unix s)
//
// A slot's keys are dropped (one DeleteRange) by the first AddShading after
// its expiry; the segments of a slot are its keys, so no index is kept.

func shadeKey(slot int64, seg shading.SegmentID) []byte {
	k := make([]byte, 0, 14)
	k = append(k, "h|"...)
	k = binary.BigEndian.AppendUint64(k, uint64(slot))
	return binary.BigEndian.AppendUint32(k, uint32(seg))
}

func shadeSlotPrefix(slot int64) []byte {
	return binary.BigEndian.AppendUint64([]byte("h|"), uint64(slot))
}

func shadeExpiryKey(slot int64) []byte {
	return binary.BigEndian.AppendUint64([]byte("hx|"), uint64(slot))
}

func encodeShade(n *[shading.NumKinds][shading.NumBuckets]uint32) []byte {
	var out []byte
	for k := range shading.NumKinds {
		for b, v := range n[k] {
			if v != 0 {
				out = binary.AppendUvarint(out, uint64(k*shading.NumBuckets+b))
				out = binary.AppendUvarint(out, uint64(v))
			}
		}
	}
	return out
}

func decodeShade(v []byte, n *[shading.NumKinds][shading.NumBuckets]uint32) error {
	for len(v) > 0 {
		i, a := binary.Uvarint(v)
		if a <= 0 || i >= shading.NumKinds*shading.NumBuckets {
			return fmt.Errorf("pebblestore: corrupt shading counts")
		}
		c, b := binary.Uvarint(v[a:])
		if b <= 0 {
			return fmt.Errorf("pebblestore: corrupt shading counts")
		}
		n[i/shading.NumBuckets][i%shading.NumBuckets] += uint32(c)
		v = v[a+b:]
	}
	return nil
}

// AddShading implements shading.Store: a read-modify-write of each
// segment's key in one batch (serialised with Flush), and the sweep of the
// expired slots.
func (s *Store) AddShading(ctx context.Context, slot int64, counts []shading.SlotCounts, _ []shading.SegmentID, expires time.Time) error {
	if err := shading.ValidateAdd(slot, counts, expires); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	b := s.db.NewBatch()
	defer b.Close()
	if err := s.sweepShading(b, s.opts.Now()); err != nil {
		return err
	}
	for i := range counts {
		if counts[i].Empty() {
			continue
		}
		k := shadeKey(slot, counts[i].Segment)
		n := counts[i].N
		if err := s.getShade(k, &n); err != nil {
			return err
		}
		if err := b.Set(k, encodeShade(&n), nil); err != nil {
			return err
		}
	}
	old, err := s.getUint(shadeExpiryKey(slot))
	if err != nil {
		return err
	}
	if exp := uint64(expires.Unix()); exp > old {
		if err := b.Set(shadeExpiryKey(slot), binary.BigEndian.AppendUint64(nil, exp), nil); err != nil {
			return err
		}
	}
	if err := b.Commit(s.wo); err != nil {
		return fmt.Errorf("pebblestore: add shading counts: %w", err)
	}
	return nil
}

// getShade adds the stored counts of k to n.
func (s *Store) getShade(k []byte, n *[shading.NumKinds][shading.NumBuckets]uint32) error {
	v, c, err := s.db.Get(k)
	if err == pebble.ErrNotFound {
		return nil
	}
	if err != nil {
		return fmt.Errorf("pebblestore: shading counts: %w", err)
	}
	defer c.Close()
	return decodeShade(v, n)
}

func (s *Store) getUint(k []byte) (uint64, error) {
	v, c, err := s.db.Get(k)
	if err == pebble.ErrNotFound {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("pebblestore: %w", err)
	}
	defer c.Close()
	if len(v) != 8 {
		return 0, fmt.Errorf("pebblestore: corrupt value of %q", k)
	}
	return binary.BigEndian.Uint64(v), nil
}

// sweepShading drops the slots whose expiry has passed.
func (s *Store) sweepShading(b *pebble.Batch, now time.Time) error {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte("hx|"), UpperBound: []byte("hx}")})
	if err != nil {
		return err
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		k, v := it.Key(), it.Value()
		if len(k) != 11 || len(v) != 8 || binary.BigEndian.Uint64(v) > uint64(now.Unix()) {
			continue
		}
		slot := int64(binary.BigEndian.Uint64(k[3:]))
		if err := b.DeleteRange(shadeSlotPrefix(slot), shadeSlotPrefix(slot+1), nil); err != nil {
			return err
		}
		if err := b.Delete(bytes.Clone(k), nil); err != nil {
			return err
		}
	}
	return it.Error()
}

// expired reports whether slot's expiry has passed (its keys may linger
// until the next AddShading sweeps them).
func (s *Store) expiredSlot(slot int64) (bool, error) {
	exp, err := s.getUint(shadeExpiryKey(slot))
	if err != nil {
		return false, err
	}
	return exp != 0 && exp <= uint64(s.opts.Now().Unix()), nil
}

// ReadShading implements shading.Store.
func (s *Store) ReadShading(ctx context.Context, segs []shading.SegmentID, slots []int64) ([]shading.SlotCounts, error) {
	if err := shading.ValidateSlots(slots); err != nil {
		return nil, err
	}
	if err := s.open(ctx); err != nil {
		return nil, err
	}
	var out []shading.SlotCounts
	for _, sl := range slots {
		if gone, err := s.expiredSlot(sl); err != nil || gone {
			if err != nil {
				return nil, err
			}
			continue
		}
		for _, g := range segs {
			c := shading.SlotCounts{Segment: g, Slot: sl}
			if err := s.getShade(shadeKey(sl, g), &c.N); err != nil {
				return nil, err
			}
			if !c.Empty() {
				out = append(out, c)
			}
		}
	}
	return out, nil
}

// ShadingSegments implements shading.Store: the keys of the slots.
func (s *Store) ShadingSegments(ctx context.Context, slots []int64) ([]shading.SegmentID, error) {
	if err := shading.ValidateSlots(slots); err != nil {
		return nil, err
	}
	if err := s.open(ctx); err != nil {
		return nil, err
	}
	seen := map[shading.SegmentID]bool{}
	var out []shading.SegmentID
	for _, sl := range slots {
		if gone, err := s.expiredSlot(sl); err != nil || gone {
			if err != nil {
				return nil, err
			}
			continue
		}
		it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: shadeSlotPrefix(sl), UpperBound: shadeSlotPrefix(sl + 1)})
		if err != nil {
			return nil, err
		}
		for it.First(); it.Valid(); it.Next() {
			if k := it.Key(); len(k) == 14 {
				g := shading.SegmentID(binary.BigEndian.Uint32(k[10:]))
				if !seen[g] {
					seen[g] = true
					out = append(out, g)
				}
			}
		}
		if err := it.Close(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// open fails when ctx ended or the store is closed.
func (s *Store) open(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	return nil
}
