package aerospiketest

import (
	"encoding/binary"
)

// AS_MSG header bits, as the v7 client's command.go sets them.
const (
	info1Read             = 1 << 0
	info1GetAll           = 1 << 1
	info1Batch            = 1 << 3
	info1NoBinData        = 1 << 5
	info1CompressResponse = 1 << 7

	info2Write         = 1 << 0
	info2Delete        = 1 << 1
	info2Generation    = 1 << 2
	info2GenerationGT  = 1 << 3
	info2CreateOnly    = 1 << 5
	info2RespondAllOps = 1 << 7

	info3Last            = 1 << 0
	info3UpdateOnly      = 1 << 3
	info3CreateOrReplace = 1 << 4
	info3ReplaceOnly     = 1 << 5

	msgHeaderSize = 22 // AS_MSG header after the 8-byte proto header
)

// Field types.
const (
	fieldNamespace         = 0
	fieldSet               = 1
	fieldKey               = 2
	fieldDigest            = 4
	fieldUDFPackage        = 30
	fieldUDFFunction       = 31
	fieldUDFArgs           = 32
	fieldUDFOp             = 33
	fieldBatchIndex        = 41
	fieldBatchIndexWithSet = 42
	fieldFilterExp         = 43
)

// Operation codes on the wire.
const (
	opRead       = 1
	opWrite      = 2
	opCDTRead    = 3
	opCDTModify  = 4
	opIncr       = 5
	opExpRead    = 7
	opExpModify  = 8
	opAppend     = 9
	opPrepend    = 10
	opTouch      = 11
	opBitRead    = 12
	opBitModify  = 13
	opDelete     = 14
	opHLLRead    = 15
	opHLLModify  = 16
	digestLength = 20
)

// Particle types.
const (
	ptNull    = 0
	ptInteger = 1
	ptFloat   = 2
	ptString  = 3
	ptBlob    = 4
	ptBool    = 17
	ptHLL     = 18
	ptMap     = 19
	ptList    = 20
	ptGeoJSON = 23
)

// Result codes (the subset this server sends).
const (
	rcOK              = 0
	rcKeyNotFound     = 2
	rcGeneration      = 3
	rcParameter       = 4
	rcKeyExists       = 5
	rcBinType         = 12
	rcRecordTooBig    = 13
	rcUnsupported     = 16
	rcInvalidNS       = 20
	rcBinNameTooLong  = 21
	rcForbidden       = 22
	batchMsgRepeat    = 0x1
	batchMsgInfo      = 0x2
	batchMsgGen       = 0x4
	batchMsgTTL       = 0x8
	maxBatchRecords   = 1 << 20
	maxOpsPerMessage  = 1 << 16
	maxFieldsPerEntry = 1 << 16
)

// reader is a bounds-checked big-endian cursor. Once a read fails, bad is
// set and every later read returns zero values.
type reader struct {
	b   []byte
	off int
	bad bool
}

func (r *reader) need(n int) bool {
	if r.bad || n < 0 || len(r.b)-r.off < n {
		r.bad = true
		return false
	}
	return true
}

func (r *reader) u8() byte {
	if !r.need(1) {
		return 0
	}
	v := r.b[r.off]
	r.off++
	return v
}

func (r *reader) u16() int {
	if !r.need(2) {
		return 0
	}
	v := binary.BigEndian.Uint16(r.b[r.off:])
	r.off += 2
	return int(v)
}

func (r *reader) u32() uint32 {
	if !r.need(4) {
		return 0
	}
	v := binary.BigEndian.Uint32(r.b[r.off:])
	r.off += 4
	return v
}

func (r *reader) bytes(n int) []byte {
	if !r.need(n) {
		return nil
	}
	v := r.b[r.off : r.off+n : r.off+n]
	r.off += n
	return v
}

func (r *reader) remaining() int { return len(r.b) - r.off }

type msgHeader struct {
	info1, info2, info3 byte
	generation          uint32
	ttl                 uint32
	nFields, nOps       int
}

type field struct {
	typ  byte
	data []byte
}

type op struct {
	code  byte
	ptype byte
	name  []byte
	value []byte
}

func parseHeader(r *reader) msgHeader {
	var h msgHeader
	if r.u8() != msgHeaderSize {
		r.bad = true
		return h
	}
	h.info1, h.info2, h.info3 = r.u8(), r.u8(), r.u8()
	r.u8() // unused
	r.u8() // result code, 0 in requests
	h.generation = r.u32()
	h.ttl = r.u32()
	r.u32() // transaction timeout, ms: ignored
	h.nFields = r.u16()
	h.nOps = r.u16()
	return h
}

// parseFields reads n fields. A batch field whose declared size overruns the
// message is clamped: the v7 client computes that size as "rest of the
// message", which overstates it when a filter expression field precedes it.
func parseFields(r *reader, n int) []field {
	fields := make([]field, 0, min(n, r.remaining()/5)) // a field takes at least 5 bytes
	for i := 0; i < n && !r.bad; i++ {
		size := int(r.u32())
		if r.bad || size < 1 {
			r.bad = true
			return nil
		}
		typ := r.u8()
		if (typ == fieldBatchIndex || typ == fieldBatchIndexWithSet) && size-1 > r.remaining() {
			size = r.remaining() + 1
		}
		data := r.bytes(size - 1)
		fields = append(fields, field{typ: typ, data: data})
	}
	return fields
}

func parseOps(r *reader, n int) []op {
	if n > maxOpsPerMessage {
		r.bad = true
		return nil
	}
	ops := make([]op, 0, min(n, r.remaining()/8)) // an op takes at least 8 bytes
	for i := 0; i < n && !r.bad; i++ {
		size := int(r.u32())
		o := op{code: r.u8(), ptype: r.u8()}
		r.u8() // version, unused
		nameLen := int(r.u8())
		if r.bad || size < 4+nameLen {
			r.bad = true
			return nil
		}
		o.name = r.bytes(nameLen)
		o.value = r.bytes(size - 4 - nameLen)
		ops = append(ops, o)
	}
	return ops
}

// recordReq is one record command: a single-record message or one entry of
// a batch.
type recordReq struct {
	info1, info2, info3 byte
	generation          uint32
	ttl                 uint32
	ns, set             string
	digest              [digestLength]byte
	hasDigest           bool
	userKey             []byte // KEY field: particle type byte + value
	ops                 []op
	unsupported         bool // a field this server does not implement (filter expression, UDF)
	bad                 bool // a field that is malformed (digest length ...)
}

// applyFields fills the key fields of req. Fields may alias the request buffer.
func (req *recordReq) applyFields(fields []field) {
	for _, f := range fields {
		switch f.typ {
		case fieldNamespace:
			req.ns = string(f.data)
		case fieldSet:
			req.set = string(f.data)
		case fieldDigest:
			if len(f.data) != digestLength {
				req.bad = true
				continue
			}
			copy(req.digest[:], f.data)
			req.hasDigest = true
		case fieldKey:
			req.userKey = f.data
		case fieldFilterExp, fieldUDFPackage, fieldUDFFunction, fieldUDFArgs, fieldUDFOp:
			req.unsupported = true
		default:
			// Scan/query/other fields: a single-record command never carries them.
			req.unsupported = true
		}
	}
}

// kind classifies a single-record request for Requests().
func (req *recordReq) kind() string {
	if req.info2&info2Write != 0 {
		if req.info2&info2Delete != 0 && len(req.ops) == 0 {
			return KindDelete
		}
		if len(req.ops) == 1 && req.ops[0].code == opTouch {
			return KindTouch
		}
		if len(req.ops) > 0 && allOps(req.ops, opWrite) {
			return KindWrite
		}
		return KindOperate
	}
	if req.info1&info1NoBinData != 0 && len(req.ops) == 0 {
		return KindReadHeader
	}
	if allOps(req.ops, opRead) {
		return KindRead
	}
	return KindOperate
}

func allOps(ops []op, code byte) bool {
	for _, o := range ops {
		if o.code != code {
			return false
		}
	}
	return true
}

// handleMsg answers one AS_MSG body (proto type 3). Malformed bodies are
// answered with result code 4 and the connection stays open: the framing is
// intact, so the stream stays in sync.
func (s *Server) handleMsg(body []byte) ([]byte, error) {
	r := &reader{b: body}
	h := parseHeader(r)
	fields := parseFields(r, h.nFields)
	ops := parseOps(r, h.nOps)
	if r.bad || r.remaining() != 0 {
		s.count(KindMalformed, 1)
		return errorFrame(rcParameter), nil
	}
	for _, f := range fields {
		if f.typ == fieldBatchIndex || f.typ == fieldBatchIndexWithSet {
			return s.handleBatch(fields, ops)
		}
	}
	if h.info1&info1Batch != 0 {
		s.count(KindMalformed, 1)
		return errorFrame(rcParameter), nil
	}
	req := recordReq{
		info1: h.info1, info2: h.info2, info3: h.info3,
		generation: h.generation, ttl: h.ttl, ops: ops,
	}
	req.applyFields(fields)
	if req.unsupported {
		// Scans, queries, UDF calls and filter expressions.
		s.count(KindUnsupported, 1)
		return errorFrame(rcUnsupported), nil
	}
	kind := req.kind()
	s.count(kind, 1)
	code, ok, dropReply := s.faultAfter(kind)
	if !ok {
		return nil, errDrop
	}
	if code != 0 {
		return errorFrame(byte(code)), nil
	}
	var res result
	if code := s.recordFault(&req, false, 0); code != 0 {
		res = failed(code)
	} else {
		res = s.execute(&req)
	}
	if res.code == rcUnsupported {
		s.count(KindUnsupported, 1)
	}
	if dropReply {
		return nil, errDrop
	}
	out := appendProtoHeader(make([]byte, 0, 64+res.size()), protoMsg)
	out = appendRecordResult(out, 0, &res, 0)
	finishFrame(out, 0)
	return out, nil
}

// errorFrame is a complete response carrying only a result code. info3 LAST
// is set so that batch, scan and query parsers stop at it too.
func errorFrame(code byte) []byte {
	out := appendProtoHeader(make([]byte, 0, 8+msgHeaderSize), protoMsg)
	out = appendMsgHeader(out, info3Last, code, 0, 0, 0, 0)
	finishFrame(out, 0)
	return out
}

func appendMsgHeader(out []byte, info3, code byte, gen, voidTime, index uint32, nOps int) []byte {
	out = append(out, msgHeaderSize, 0, 0, info3, 0, code)
	out = binary.BigEndian.AppendUint32(out, gen)
	out = binary.BigEndian.AppendUint32(out, voidTime)
	out = binary.BigEndian.AppendUint32(out, index) // transaction ttl; batch index in batch replies
	out = binary.BigEndian.AppendUint16(out, 0)     // no fields
	out = binary.BigEndian.AppendUint16(out, uint16(nOps))
	return out
}

// appendRecordResult appends the 22-byte header and the returned bins.
func appendRecordResult(out []byte, info3 byte, res *result, index uint32) []byte {
	out = appendMsgHeader(out, info3, res.code, res.gen, res.voidTime, index, len(res.bins))
	for _, b := range res.bins {
		out = binary.BigEndian.AppendUint32(out, uint32(4+len(b.name)+len(b.value)))
		out = append(out, opRead, b.ptype, 0, byte(len(b.name)))
		out = append(out, b.name...)
		out = append(out, b.value...)
	}
	return out
}
