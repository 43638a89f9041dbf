package aerospiketest

// batchEntry is one parsed record of a batch message with its index in the
// client's key list.
type batchEntry struct {
	index uint32
	req   recordReq
}

// handleBatch answers a batch message. Two layouts exist in the v7 client:
//
//   - field 42 BATCH_INDEX_WITH_SET (BatchGet, BatchGetOperate, BatchGetHeader,
//     BatchExists, BatchGetComplex): per record index(4) digest(20) repeat(1),
//     and unless repeat: read attr(1) nFields(2) nOps(2) fields ops.
//   - field 41 BATCH_INDEX (BatchOperate, BatchDelete, BatchExecute): per record
//     index(4) digest(20) flags(1), and unless flags has REPEAT: info1..3 (3; or
//     only info1 without the INFO flag), generation(2) if GEN, ttl(4) if TTL,
//     nFields(2) nOps(2) fields ops.
//
// Both start with count(4) and a flags byte (inline hints, respond-all-keys).
// "Repeat" reuses the previous record's attributes, namespace, set and ops.
// The whole message is parsed before anything executes, so a malformed batch
// changes nothing.
func (s *Server) handleBatch(fields []field, ops []op) ([]byte, error) {
	var bf field
	unsupported := len(ops) != 0
	for _, f := range fields {
		switch f.typ {
		case fieldBatchIndex, fieldBatchIndexWithSet:
			bf = f
		default:
			unsupported = true // a filter expression for the whole batch
		}
	}
	entries, ok := parseBatch(bf)
	if !ok {
		s.count(KindMalformed, 1)
		return errorFrame(rcParameter), nil
	}
	s.count(KindBatch, 1)
	s.count(KindBatchRecord, len(entries))
	if unsupported {
		s.count(KindUnsupported, 1)
		return errorFrame(rcUnsupported), nil
	}
	code, okConn, dropReply := s.faultAfter(KindBatch)
	if !okConn {
		return nil, errDrop
	}
	if code != 0 {
		return errorFrame(byte(code)), nil
	}

	out := make([]byte, 0, 4096)
	start := 0
	out = appendProtoHeader(out, protoMsg)
	for i := range entries {
		e := &entries[i]
		var res result
		if e.req.unsupported {
			res = failed(rcUnsupported)
		} else if code := s.recordFault(&e.req, true, i); code != 0 {
			res = failed(code)
		} else {
			res = s.execute(&e.req)
		}
		if res.code == rcUnsupported {
			s.count(KindUnsupported, 1)
		}
		out = appendRecordResult(out, 0, &res, e.index)
		if len(out)-start >= batchFrameCutover {
			finishFrame(out, start)
			start = len(out)
			out = appendProtoHeader(out, protoMsg)
		}
	}
	out = appendMsgHeader(out, info3Last, rcOK, 0, 0, 0, 0)
	finishFrame(out, start)
	if dropReply {
		return nil, errDrop
	}
	return out, nil
}

func parseBatch(bf field) ([]batchEntry, bool) {
	r := &reader{b: bf.data}
	n := r.u32()
	r.u8() // flags: allow inline, allow inline SSD, respond all keys
	// Each entry takes at least 25 bytes; refuse counts the body cannot hold.
	if r.bad || n > maxBatchRecords || int(n) > r.remaining()/25 {
		return nil, false
	}
	withSet := bf.typ == fieldBatchIndexWithSet
	entries := make([]batchEntry, 0, n)
	var prev *recordReq
	for i := 0; i < int(n); i++ {
		index := r.u32()
		digest := r.bytes(digestLength)
		flags := r.u8()
		if r.bad {
			return nil, false
		}
		var req recordReq
		repeat := flags&batchMsgRepeat != 0
		if withSet && flags > 1 {
			return nil, false
		}
		if repeat {
			if prev == nil {
				return nil, false
			}
			req = *prev
		} else {
			if withSet || flags&batchMsgInfo == 0 {
				req.info1 = r.u8()
			} else {
				req.info1, req.info2, req.info3 = r.u8(), r.u8(), r.u8()
			}
			if !withSet && flags&batchMsgGen != 0 {
				req.generation = uint32(r.u16())
			}
			if !withSet && flags&batchMsgTTL != 0 {
				req.ttl = r.u32()
			}
			nFields, nOps := r.u16(), r.u16()
			if nFields > maxFieldsPerEntry {
				return nil, false
			}
			req.applyFields(parseFields(r, nFields))
			req.ops = parseOps(r, nOps)
			if r.bad {
				return nil, false
			}
		}
		copy(req.digest[:], digest)
		req.hasDigest = true
		entries = append(entries, batchEntry{index: index, req: req})
		prev = &entries[len(entries)-1].req
	}
	if r.bad || r.remaining() != 0 {
		return nil, false
	}
	return entries, true
}
