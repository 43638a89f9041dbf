package aerospiketest

import (
	"bytes"
	"encoding/binary"
	"math"
	"time"
)

// recKey identifies a record in the namespace. The digest already covers the
// set name (the client hashes set + key), the set is kept for truncate.
type recKey struct {
	set    string
	digest [digestLength]byte
}

// bin is one named value. Its value slice is never modified after the bin is
// stored, so results may share it after the store lock is released.
type bin struct {
	name  string
	ptype byte
	value []byte
}

type record struct {
	bins       []bin // replaced, never modified in place
	gen        uint32
	expireAt   time.Time // zero: never expires
	lastUpdate time.Time
	userKey    []byte // KEY field as sent with SendKey: particle type + value
}

func (r *record) expired(now time.Time) bool {
	return !r.expireAt.IsZero() && !now.Before(r.expireAt)
}

// result is the outcome of one record command.
type result struct {
	code     byte
	gen      uint32
	voidTime uint32 // seconds since 2010-01-01 UTC; 0 = never expires
	bins     []bin  // returned as ops, in order
}

func (r *result) size() int {
	n := msgHeaderSize
	for _, b := range r.bins {
		n += 8 + len(b.name) + len(b.value)
	}
	return n
}

func failed(code byte) result { return result{code: code} }

func voidTime(t time.Time) uint32 {
	if t.IsZero() {
		return 0
	}
	secs := t.Unix() - citrusleafEpoch // whole seconds, like the server's void-time
	if secs < 1 {
		return 1
	}
	if secs > math.MaxUint32-1 {
		return math.MaxUint32 - 1
	}
	return uint32(secs)
}

func findBin(bins []bin, name string) int {
	for i := range bins {
		if bins[i].name == name {
			return i
		}
	}
	return -1
}

func isWriteOp(code byte) bool {
	switch code {
	case opWrite, opIncr, opAppend, opPrepend, opTouch, opDelete:
		return true
	}
	return false
}

// checkOps validates operation codes, bin names and particles before anything
// is executed, so a bad operation never leaves a half-applied record.
func checkOps(req *recordReq, isWrite bool) byte {
	for i := range req.ops {
		o := &req.ops[i]
		if len(o.name) > maxBinNameLen {
			return rcBinNameTooLong
		}
		switch o.code {
		case opRead:
		case opWrite:
			switch o.ptype {
			case ptNull:
				if len(o.value) != 0 {
					return rcParameter
				}
			case ptInteger, ptFloat:
				if len(o.value) != 8 {
					return rcParameter
				}
			case ptBool:
				if len(o.value) != 1 {
					return rcParameter
				}
			case ptString, ptBlob, ptList, ptMap:
			case ptGeoJSON, ptHLL:
				return rcUnsupported
			default:
				return rcParameter
			}
			if len(o.name) == 0 {
				return rcParameter
			}
		case opIncr:
			if (o.ptype != ptInteger && o.ptype != ptFloat) || len(o.value) != 8 || len(o.name) == 0 {
				return rcParameter
			}
		case opAppend, opPrepend:
			if (o.ptype != ptString && o.ptype != ptBlob) || len(o.name) == 0 {
				return rcParameter
			}
		case opTouch, opDelete:
		case opCDTRead, opCDTModify, opExpRead, opExpModify, opBitRead, opBitModify, opHLLRead, opHLLModify:
			return rcUnsupported
		default:
			return rcParameter
		}
		if isWriteOp(o.code) && !isWrite {
			return rcParameter
		}
	}
	return rcOK
}

// execute runs one record command against the store.
func (s *Server) execute(req *recordReq) result {
	if req.bad || req.ns == "" || !req.hasDigest || len(req.set) > maxSetNameLen {
		return failed(rcParameter)
	}
	if req.ns != s.opts.Namespace {
		return failed(rcInvalidNS)
	}
	isWrite := req.info2&info2Write != 0
	if !isWrite && req.info1&info1Read == 0 {
		return failed(rcParameter)
	}
	if code := checkOps(req, isWrite); code != rcOK {
		return failed(code)
	}
	now := s.opts.Now()
	key := recKey{set: req.set, digest: req.digest}

	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.records[key]
	if old != nil && old.expired(now) {
		delete(s.records, key)
		old = nil
	}
	if isWrite {
		return s.write(req, key, old, now)
	}
	return read(req, old)
}

func read(req *recordReq, rec *record) result {
	if rec == nil {
		return failed(rcKeyNotFound)
	}
	res := result{gen: rec.gen, voidTime: voidTime(rec.expireAt)}
	switch {
	case req.info1&info1NoBinData != 0:
	case req.info1&info1GetAll != 0:
		res.bins = rec.bins
	default:
		respondAll := req.info2&info2RespondAllOps != 0
		for _, o := range req.ops {
			if len(o.name) == 0 {
				res.bins = append(res.bins, rec.bins...)
				continue
			}
			if i := findBin(rec.bins, string(o.name)); i >= 0 {
				res.bins = append(res.bins, rec.bins[i])
			} else if respondAll {
				res.bins = append(res.bins, bin{name: string(o.name)})
			}
		}
	}
	return res
}

// write runs a write command (Put, Delete, Touch, Operate with writes).
// Caller holds s.mu.
func (s *Server) write(req *recordReq, key recKey, old *record, now time.Time) result {
	exists := old != nil
	if req.info2&info2CreateOnly != 0 && exists {
		return failed(rcKeyExists)
	}
	if req.info3&(info3UpdateOnly|info3ReplaceOnly) != 0 && !exists {
		return failed(rcKeyNotFound)
	}
	if exists {
		if req.info2&info2Generation != 0 && req.generation != old.gen {
			return failed(rcGeneration)
		}
		if req.info2&info2GenerationGT != 0 && req.generation <= old.gen {
			return failed(rcGeneration)
		}
	}
	if req.info2&info2Delete != 0 {
		if len(req.ops) != 0 {
			return failed(rcParameter)
		}
		if !exists {
			return failed(rcKeyNotFound)
		}
		delete(s.records, key)
		return result{}
	}
	if !exists && touchOnly(req.ops) {
		return failed(rcKeyNotFound)
	}

	var bins []bin
	if exists && req.info3&(info3CreateOrReplace|info3ReplaceOnly) == 0 {
		bins = append([]bin(nil), old.bins...)
	}
	respondAll := req.info2&info2RespondAllOps != 0
	getAll := req.info1&info1GetAll != 0
	noBinData := req.info1&info1NoBinData != 0
	var out []bin
	deleted := false
	for _, o := range req.ops {
		name := string(o.name)
		i := -1
		if name != "" {
			i = findBin(bins, name)
		}
		switch o.code {
		case opRead:
			switch {
			case getAll || noBinData:
			case name == "":
				out = append(out, bins...)
			case i >= 0:
				out = append(out, bins[i])
			case respondAll:
				out = append(out, bin{name: name})
			}
			continue
		case opWrite:
			if o.ptype == ptNull {
				if i >= 0 {
					bins = append(bins[:i:i], bins[i+1:]...)
				}
			} else {
				bins = setBin(bins, i, bin{name: name, ptype: o.ptype, value: bytes.Clone(o.value)})
			}
		case opIncr:
			nb := bin{name: name, ptype: o.ptype, value: bytes.Clone(o.value)}
			if i >= 0 {
				cur := bins[i]
				if cur.ptype != o.ptype {
					return failed(rcBinType)
				}
				nb.value = make([]byte, 8)
				a, b := binary.BigEndian.Uint64(cur.value), binary.BigEndian.Uint64(o.value)
				if o.ptype == ptInteger {
					binary.BigEndian.PutUint64(nb.value, uint64(int64(a)+int64(b))) // wraps like int64
				} else {
					binary.BigEndian.PutUint64(nb.value, math.Float64bits(math.Float64frombits(a)+math.Float64frombits(b)))
				}
			}
			bins = setBin(bins, i, nb)
		case opAppend, opPrepend:
			nb := bin{name: name, ptype: o.ptype, value: bytes.Clone(o.value)}
			if i >= 0 {
				cur := bins[i]
				if cur.ptype != o.ptype {
					return failed(rcBinType)
				}
				v := make([]byte, 0, len(cur.value)+len(o.value))
				if o.code == opAppend {
					v = append(append(v, cur.value...), o.value...)
				} else {
					v = append(append(v, o.value...), cur.value...)
				}
				nb.value = v
			}
			bins = setBin(bins, i, nb)
		case opTouch:
			// The new TTL below is the whole effect.
		case opDelete:
			bins = nil
			deleted = true
		}
		if respondAll {
			out = append(out, bin{name: name})
		}
	}

	if s.ttlForbidden(req.ttl) && len(bins) > 0 {
		return failed(rcForbidden)
	}
	expireAt, code := s.expiry(req.ttl, now, old)
	if code != rcOK {
		return failed(code)
	}
	if len(bins) == 0 {
		// A record without bins does not exist.
		if exists {
			delete(s.records, key)
		} else if deleted {
			return failed(rcKeyNotFound)
		}
		return result{bins: out}
	}
	if s.opts.MaxRecordSize > 0 && recordSize(req.set, bins) > s.opts.MaxRecordSize {
		return failed(rcRecordTooBig)
	}
	if !s.setAllowed(req.set) {
		return failed(rcParameter)
	}
	rec := &record{bins: bins, gen: 1, expireAt: expireAt, lastUpdate: now, userKey: bytes.Clone(req.userKey)}
	if exists {
		rec.gen = old.gen + 1
		if rec.gen > generationMax {
			rec.gen = 1
		}
		if rec.userKey == nil {
			rec.userKey = old.userKey
		}
	}
	s.records[key] = rec
	if getAll {
		out = bins
	}
	return result{gen: rec.gen, voidTime: voidTime(expireAt), bins: out}
}

// touchOnly reports whether ops touch a record without creating any bin:
// such a command needs an existing record.
func touchOnly(ops []op) bool {
	touch := false
	for _, o := range ops {
		switch o.code {
		case opTouch:
			touch = true
		case opIncr, opAppend, opPrepend:
			return false
		case opWrite:
			if o.ptype != ptNull {
				return false
			}
		}
	}
	return touch
}

// setBin replaces bins[i] (i >= 0) or appends b. bins is a private copy.
func setBin(bins []bin, i int, b bin) []bin {
	if i >= 0 {
		bins[i] = b
		return bins
	}
	return append(bins, b)
}

func recordSize(set string, bins []bin) int {
	n := len(set)
	for _, b := range bins {
		n += 9 + len(b.name) + len(b.value)
	}
	return n
}

// expiry turns the TTL of a write into an expiration time.
// 0: namespace default; 0xFFFFFFFF: never; 0xFFFFFFFE: keep the current one.
func (s *Server) expiry(ttl uint32, now time.Time, old *record) (time.Time, byte) {
	def := time.Time{}
	if s.opts.DefaultTTL > 0 {
		def = now.Add(s.opts.DefaultTTL.Truncate(time.Second))
	}
	switch ttl {
	case 0:
		return def, rcOK
	case math.MaxUint32:
		return time.Time{}, rcOK
	case math.MaxUint32 - 1:
		if old != nil {
			return old.expireAt, rcOK
		}
		return def, rcOK
	}
	if ttl > maxTTLSeconds {
		return time.Time{}, rcParameter
	}
	return now.Add(time.Duration(ttl) * time.Second), rcOK
}
