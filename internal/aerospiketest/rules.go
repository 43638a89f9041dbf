package aerospiketest

import (
	"math"
	"sync/atomic"
)

// Result codes a real server returns that RecordHook callers commonly inject.
const (
	ResultKeyBusy   = 14 // KEY_BUSY: too many concurrent commands on one record (a hot key)
	ResultForbidden = 22 // FAIL_FORBIDDEN: for example a TTL write under nsup-period 0
	ResultParameter = 4  // PARAMETER_ERROR: for example a TTL above max-ttl, or a set beyond the namespace's 4,095
)

// RecordCall describes one record command about to execute: a
// single-record command, or one record of a batch message.
type RecordCall struct {
	// Batch is true for a record inside a batch message.
	Batch bool
	// Index is the record's position in its batch message (0 for a
	// single-record command). The v7 client splits a batch per node and
	// sends a batch of one key as a single-record command.
	Index int
	// Write is true for a command that writes (Put, Operate with writes,
	// Delete, Touch, BatchWrite, BatchDelete).
	Write bool
	// Set and Digest name the record; compare Digest with as.Key.Digest().
	Set    string
	Digest [digestLength]byte
}

// SetRecordHook installs f, called once per record command (each record of
// a batch on its own) before it executes. A non-zero result code from f is
// that record's answer and the record is left unchanged; the other records
// of the same batch still execute and answer their own result, as a real
// server applies a batch record by record (the client's default
// BatchPolicy.RespondAllKeys). nil removes the hook. f is called
// concurrently.
func (s *Server) SetRecordHook(f func(RecordCall) int) {
	if f == nil {
		s.recHook.Store(nil)
		return
	}
	s.recHook.Store(&f)
}

// FailRecords returns a record hook that answers code to the first times
// record commands for which match is true, then lets every command
// execute: a failure that recovers. A nil match matches every record. It is
// safe for concurrent use.
func FailRecords(code, times int, match func(RecordCall) bool) func(RecordCall) int {
	var left atomic.Int64
	left.Store(int64(times))
	return func(c RecordCall) int {
		if match != nil && !match(c) {
			return 0
		}
		if left.Add(-1) < 0 {
			left.Store(-1)
			return 0
		}
		return code
	}
}

// recordFault returns the result code the record hook injects for req, 0
// for none.
func (s *Server) recordFault(req *recordReq, batch bool, index int) byte {
	hp := s.recHook.Load()
	if hp == nil || !req.hasDigest {
		return 0
	}
	code := (*hp)(RecordCall{Batch: batch, Index: index, Write: req.info2&info2Write != 0, Set: req.set, Digest: req.digest})
	if code <= 0 || code > math.MaxUint8 {
		return 0
	}
	s.count(KindRecordFault, 1)
	return byte(code)
}

// ttlForbidden reports whether a write with this TTL is refused because
// the namespace has nsup-period 0 (Options.NsupPeriodZero): a real server
// then refuses every write that would give the record an expiry, unless
// allow-ttl-without-nsup is set. TTL -1 (never expire) and -2 (keep the
// current one) are accepted, and so is 0 (the namespace default) while
// default-ttl is 0.
func (s *Server) ttlForbidden(ttl uint32) bool {
	if !s.opts.NsupPeriodZero {
		return false
	}
	switch ttl {
	case math.MaxUint32, math.MaxUint32 - 1:
		return false
	case 0:
		return s.opts.DefaultTTL > 0
	}
	return true
}

// setAllowed reports whether a record may be stored in set, adding set to
// the namespace's sets: no once the namespace holds Options.MaxSets sets
// and set is not one of them. The null set ("") is not counted. Called
// with s.mu held.
func (s *Server) setAllowed(set string) bool {
	if set == "" {
		return true
	}
	if _, ok := s.sets[set]; ok {
		return true
	}
	limit := s.opts.MaxSets
	if limit == 0 {
		limit = DefaultMaxSets
	}
	if len(s.sets) >= limit {
		return false
	}
	s.sets[set] = struct{}{}
	return true
}
