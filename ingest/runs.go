package ingest

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/rtbd/rtbd/catalog"
	"github.com/rtbd/rtbd/catalog/catalogpb"
)

// The external sort keeps rows as records, in memory (an arena) and in
// sorted run files spilled to DIR/tmp-VERSION/:
//
//	record  = uint32le(len(body)) body
//	body    = key (catalog.AppendKey, 17 bytes) | uvarint(seq) | kind (1 byte) | value
//	value   = catalog.AppendValue of the product (kindSet), empty (kindDelete)
//	run file = runMagic record* uint32le(0) uint64be(records)
//
// seq numbers every accepted row in feed order (files in command-line order,
// rows in file order), so that among rows with the same key the one with the
// highest seq, the last in the feed, wins.

const (
	kindSet    byte = 1
	kindDelete byte = 2
)

const runMagic = "rtbdrun1"

// maxBody bounds a record body: key, seq, kind and a value whose fields the
// feed's limits bound (about 7 KiB); anything longer is corrupt.
const maxBody = 1 << 20

var errBadRecord = errors.New("ingest: corrupt sort record")

// rec is a decoded record. key and value alias the buffer decoded from.
type rec struct {
	g, id uint64 // the key's group and id, as the key orders them
	seq   uint64
	kind  byte
	key   []byte
	value []byte
}

// less orders records by key, then seq.
func (r *rec) less(o *rec) bool {
	if r.g != o.g {
		return r.g < o.g
	}
	if r.id != o.id {
		return r.id < o.id
	}
	return r.seq < o.seq
}

func (r *rec) sameKey(o *rec) bool { return r.g == o.g && r.id == o.id }

// lenBytes is the size of a record's length prefix.
const lenBytes = 4

// appendRecord appends the record for (key, seq, kind, value) to dst.
func appendRecord(dst, key []byte, seq uint64, kind byte, value []byte) []byte {
	off := len(dst)
	dst = appendRecordHead(dst, key, seq, kind)
	dst = append(dst, value...)
	return finishRecord(dst, off)
}

// appendRecordHead starts a record at the end of dst: a length prefix to
// be filled in by finishRecord, key, seq, kind. The value follows.
func appendRecordHead(dst, key []byte, seq uint64, kind byte) []byte {
	dst = append(dst, 0, 0, 0, 0)
	dst = append(dst, key...)
	dst = binary.AppendUvarint(dst, seq)
	return append(dst, kind)
}

// finishRecord fills in the length of the record that starts at dst[off:].
func finishRecord(dst []byte, off int) []byte {
	binary.LittleEndian.PutUint32(dst[off:], uint32(len(dst)-off-lenBytes))
	return dst
}

// decodeBody decodes a record body into r (r aliases b).
func decodeBody(b []byte, r *rec) error {
	if len(b) < catalog.KeyLen+2 || len(b) > maxBody {
		return fmt.Errorf("%w: body of %d bytes", errBadRecord, len(b))
	}
	g, id, ok := catalog.ParseKey(b[:catalog.KeyLen])
	if !ok {
		return fmt.Errorf("%w: bad key %x", errBadRecord, b[:catalog.KeyLen])
	}
	seq, n := binary.Uvarint(b[catalog.KeyLen:])
	if n <= 0 {
		return fmt.Errorf("%w: bad seq", errBadRecord)
	}
	i := catalog.KeyLen + n
	if i >= len(b) {
		return fmt.Errorf("%w: no kind", errBadRecord)
	}
	r.kind = b[i]
	r.value = b[i+1:]
	switch {
	case r.kind == kindSet && len(r.value) > 0:
	case r.kind == kindDelete && len(r.value) == 0:
	default:
		return fmt.Errorf("%w: kind %d with a %d-byte value", errBadRecord, r.kind, len(r.value))
	}
	r.g, r.id, r.seq = uint64(g), uint64(id), seq
	r.key = b[:catalog.KeyLen]
	return nil
}

// decodeRecord decodes one length-prefixed record from the start of b and
// returns its total size.
func decodeRecord(b []byte, r *rec) (int, error) {
	if len(b) < lenBytes {
		return 0, fmt.Errorf("%w: bad length", errBadRecord)
	}
	n := int(binary.LittleEndian.Uint32(b))
	if n > maxBody || len(b)-lenBytes < n {
		return 0, fmt.Errorf("%w: bad length", errBadRecord)
	}
	if err := decodeBody(b[lenBytes:lenBytes+n], r); err != nil {
		return 0, err
	}
	return lenBytes + n, nil
}

// entry locates one record in an arena for sorting: its key as integers
// and its offset (records are appended in seq order, so the offset orders
// equal keys by seq).
type entry struct {
	g, id uint64
	off   uint32
	n     uint32 // record size, length prefix included
}

// entryBytes is what an entry costs in the memory budget.
const entryBytes = 24

// arena is an in-memory run: records back to back and their entries.
type arena struct {
	buf   []byte
	ents  []entry
	limit int // bytes of buf plus entries before the arena counts as full
	last  bool
}

// newArena returns an empty arena of at most limit bytes, with room for
// capacity bytes of records at first. The buffer grows (never past limit)
// if records need more.
func newArena(limit, capacity int) *arena {
	return &arena{buf: make([]byte, 0, min(limit, max(capacity, 64<<10))), limit: limit}
}

// room reports whether a record of up to n bytes still fits, growing the
// buffer if needed.
func (a *arena) room(n int) bool {
	if len(a.buf)+n+entryBytes*(len(a.ents)+1) > a.limit {
		return false
	}
	if len(a.buf)+n > cap(a.buf) {
		nb := make([]byte, len(a.buf), min(a.limit-entryBytes*len(a.ents), max(2*cap(a.buf), len(a.buf)+n)))
		copy(nb, a.buf)
		a.buf = nb
	}
	return true
}

func (a *arena) reset() {
	a.buf, a.ents, a.last = a.buf[:0], a.ents[:0], false
}

// add appends a record for key (17 bytes), seq, kind and value.
func (a *arena) add(key []byte, seq uint64, kind byte, value []byte) {
	off := len(a.buf)
	a.buf = appendRecord(a.buf, key, seq, kind, value)
	a.addEntry(key, off)
}

// addProduct appends the record of an upsert of p (value encoded in
// place, without a copy).
func (a *arena) addProduct(key []byte, seq uint64, p *catalogpb.Product) {
	off := len(a.buf)
	a.buf = appendRecordHead(a.buf, key, seq, kindSet)
	a.buf = catalog.AppendValue(a.buf, p)
	a.buf = finishRecord(a.buf, off)
	a.ents = append(a.ents, entry{g: uint64(p.ProductGroupId), id: uint64(p.ProductId), off: uint32(off), n: uint32(len(a.buf) - off)})
}

func (a *arena) addEntry(key []byte, off int) {
	g, id, _ := catalog.ParseKey(key)
	a.ents = append(a.ents, entry{g: uint64(g), id: uint64(id), off: uint32(off), n: uint32(len(a.buf) - off)})
}

// maxRecordLen bounds the record of an upsert of p: key, seq, kind and
// catalog.AppendValue's encoding (2 bytes, 4 uvarints, a varint and 7
// length-prefixed strings).
func maxRecordLen(p *catalogpb.Product) int {
	return lenBytes + catalog.KeyLen + binary.MaxVarintLen64 + 1 +
		2 + 5*binary.MaxVarintLen64 + 7*binary.MaxVarintLen64 +
		len(p.Currency) + len(p.Title) + len(p.ImageUrl) + len(p.LandingUrl) + len(p.Category) + len(p.Brand) + len(p.Description)
}

func (a *arena) sort() {
	slices.SortFunc(a.ents, func(x, y entry) int {
		switch {
		case x.g != y.g:
			return cmp.Compare(x.g, y.g)
		case x.id != y.id:
			return cmp.Compare(x.id, y.id)
		}
		return cmp.Compare(uint64(x.off), uint64(y.off))
	})
}

// record returns the bytes of entry i (length prefix included).
func (a *arena) record(i int) []byte {
	e := a.ents[i]
	return a.buf[e.off : e.off+e.n]
}

// superseded reports whether sorted entry i is followed by one with the
// same key (a later row of the same product).
func (a *arena) superseded(i int) bool {
	return i+1 < len(a.ents) && a.ents[i+1].g == a.ents[i].g && a.ents[i+1].id == a.ents[i].id
}

// indexBytes is the spacing of a run file's sparse index, in bytes (the
// split points of the merge are drawn from it; a reader starting at a key
// skips at most this much).
const indexBytes = 64 << 10

// indexEntry is a point of a run file's sparse index: the record at off has
// key (g, id).
type indexEntry struct {
	g, id uint64
	off   int64
}

// runFile is a sorted run on disk, each key at most once.
type runFile struct {
	path    string
	records int64
	bytes   int64
	index   []indexEntry
}

// spill writes the sorted arena as a run file through w, keeping only the
// last record of each key. It returns the run and how many records it
// dropped as duplicates.
func spill(a *arena, w *runWriter) (*runFile, int64, error) {
	var dups int64
	for i := range a.ents {
		if a.superseded(i) {
			dups++
			continue
		}
		e := a.ents[i]
		w.addRaw(e.g, e.id, a.record(i))
	}
	run, err := w.close()
	return run, dups, err
}

func createExcl(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
}

func removeQuiet(path string) { _ = os.Remove(path) }

// runWriter writes a run file.
type runWriter struct {
	f         *os.File
	w         *bufio.Writer
	run       *runFile
	off       int64
	nextIndex int64
	err       error
}

func newRunWriter(f *os.File, path string) *runWriter {
	w := &runWriter{f: f, w: bufio.NewWriterSize(f, 1<<20), run: &runFile{path: path}}
	_, w.err = w.w.WriteString(runMagic)
	w.off = int64(len(runMagic))
	return w
}

// addRaw appends a record (length prefix included) whose key is (g, id);
// keys must ascend.
func (w *runWriter) addRaw(g, id uint64, record []byte) {
	if w.err != nil {
		return
	}
	if w.off >= w.nextIndex {
		w.run.index = append(w.run.index, indexEntry{g: g, id: id, off: w.off})
		w.nextIndex = w.off + indexBytes
	}
	_, w.err = w.w.Write(record)
	w.off += int64(len(record))
	w.run.records++
}

// add appends r as a record.
func (w *runWriter) add(r *rec, scratch []byte) []byte {
	scratch = appendRecord(scratch[:0], r.key, r.seq, r.kind, r.value)
	w.addRaw(r.g, r.id, scratch)
	return scratch
}

func (w *runWriter) close() (*runFile, error) {
	if w.err == nil {
		var t [lenBytes + 8]byte // end marker: a zero-length record; the count
		binary.BigEndian.PutUint64(t[lenBytes:], uint64(w.run.records))
		_, w.err = w.w.Write(t[:])
	}
	if w.err == nil {
		w.err = w.w.Flush()
	}
	if cerr := w.f.Close(); w.err == nil {
		w.err = cerr
	}
	if w.err != nil {
		os.Remove(w.run.path)
		return nil, fmt.Errorf("ingest: spill %s: %w", w.run.path, w.err)
	}
	w.run.bytes = w.off + lenBytes + 8
	return w.run, nil
}

// source yields records in (key, seq) order, each key at most once, from
// lo (inclusive) to hi (exclusive); a nil bound is open.
type source interface {
	// next moves to the next record; false at the end (or on error).
	next() bool
	// cur is the current record, valid until the next call to next.
	cur() *rec
	err() error
	close()
	// dups is how many superseded records the source skipped.
	dups() int64
}

type bound struct {
	g, id uint64
	ok    bool // false: unbounded
}

func (b bound) le(r *rec) bool { return !b.ok || b.g < r.g || b.g == r.g && b.id <= r.id }
func (b bound) gt(r *rec) bool { return !b.ok || r.g < b.g || r.g == b.g && r.id < b.id }

// memSource reads a sorted arena.
type memSource struct {
	a      *arena
	i, end int
	r      rec
	skip   int64
	e      error
}

func newMemSource(a *arena, lo, hi bound) *memSource {
	find := func(b bound) int {
		if !b.ok {
			return len(a.ents)
		}
		i, _ := slices.BinarySearchFunc(a.ents, b, func(e entry, b bound) int {
			if e.g != b.g {
				return cmp.Compare(e.g, b.g)
			}
			return cmp.Compare(e.id, b.id)
		})
		return i
	}
	start := 0
	if lo.ok {
		start = find(lo)
	}
	return &memSource{a: a, i: start - 1, end: find(hi)}
}

func (s *memSource) next() bool {
	for {
		s.i++
		if s.i >= s.end || s.e != nil {
			return false
		}
		if s.a.superseded(s.i) {
			s.skip++
			continue
		}
		if _, err := decodeRecord(s.a.record(s.i), &s.r); err != nil {
			s.e = err
			return false
		}
		return true
	}
}

func (s *memSource) cur() *rec   { return &s.r }
func (s *memSource) err() error  { return s.e }
func (s *memSource) close()      {}
func (s *memSource) dups() int64 { return s.skip }

// fileSource reads a run file from the first key >= lo to before hi.
type fileSource struct {
	f      *os.File
	br     *bufio.Reader
	path   string
	hi     bound
	r      rec
	big    []byte
	e      error
	done   bool
	count  int64 // records read, to check the trailer when reading from the start
	whole  bool
	unread bool // s.r is the first record, already read by the seek to lo
}

const runReadBuffer = 256 << 10

func openFileSource(run *runFile, lo, hi bound) (*fileSource, error) {
	f, err := os.Open(run.path)
	if err != nil {
		return nil, fmt.Errorf("ingest: %w", err)
	}
	s := &fileSource{f: f, path: run.path, hi: hi}
	var magic [len(runMagic)]byte
	if _, err := io.ReadFull(f, magic[:]); err != nil || string(magic[:]) != runMagic {
		f.Close()
		return nil, fmt.Errorf("%w: %s: bad header", errBadRecord, run.path)
	}
	start := int64(len(runMagic))
	s.whole = !lo.ok
	if lo.ok {
		// The last index point before lo; records from there on are read
		// and skipped up to lo.
		i, _ := slices.BinarySearchFunc(run.index, lo, func(e indexEntry, b bound) int {
			if e.g != b.g {
				return cmp.Compare(e.g, b.g)
			}
			return cmp.Compare(e.id, b.id)
		})
		if i > 0 {
			start = run.index[i-1].off
		}
		if _, err := f.Seek(start, io.SeekStart); err != nil {
			f.Close()
			return nil, fmt.Errorf("ingest: %w", err)
		}
	}
	s.br = bufio.NewReaderSize(f, runReadBuffer)
	if lo.ok {
		for {
			if !s.read() {
				if s.e != nil {
					f.Close()
					return nil, s.e
				}
				break
			}
			if lo.le(&s.r) {
				s.unread = true
				break
			}
		}
	}
	return s, nil
}

func (s *fileSource) fail(err error) bool {
	s.e = fmt.Errorf("ingest: run %s: %w", s.path, err)
	s.done = true
	return false
}

// read decodes the next record of the file into s.r.
func (s *fileSource) read() bool {
	if s.done {
		return false
	}
	head, err := s.br.Peek(lenBytes)
	if err != nil {
		if len(head) == 0 {
			return s.fail(fmt.Errorf("%w: truncated (no end marker)", errBadRecord))
		}
		return s.fail(fmt.Errorf("%w: truncated length", errBadRecord))
	}
	n := int(binary.LittleEndian.Uint32(head))
	if n == 0 { // end marker
		s.done = true
		var t [lenBytes + 8]byte
		if _, err := io.ReadFull(s.br, t[:]); err != nil {
			return s.fail(fmt.Errorf("%w: truncated trailer", errBadRecord))
		}
		if s.whole && binary.BigEndian.Uint64(t[lenBytes:]) != uint64(s.count) {
			return s.fail(fmt.Errorf("%w: %d records, the trailer says %d", errBadRecord, s.count, binary.BigEndian.Uint64(t[lenBytes:])))
		}
		return false
	}
	if n > maxBody {
		return s.fail(fmt.Errorf("%w: record of %d bytes", errBadRecord, n))
	}
	total := lenBytes + n
	body, err := s.br.Peek(total)
	switch {
	case err == nil:
		body = body[lenBytes:]
	case errors.Is(err, bufio.ErrBufferFull):
		s.big = slices.Grow(s.big[:0], total)[:total]
		if _, err := io.ReadFull(s.br, s.big); err != nil {
			return s.fail(err)
		}
		body, total = s.big[lenBytes:], 0
	default:
		return s.fail(fmt.Errorf("%w: truncated record", errBadRecord))
	}
	if err := decodeBody(body, &s.r); err != nil {
		return s.fail(err)
	}
	if total > 0 {
		s.br.Discard(total) // the peeked bytes stay valid until the next read
	}
	s.count++
	return true
}

func (s *fileSource) next() bool {
	if s.unread {
		s.unread = false
	} else if !s.read() {
		return false
	}
	if !s.hi.gt(&s.r) {
		s.done = true
		return false
	}
	return true
}

func (s *fileSource) cur() *rec   { return &s.r }
func (s *fileSource) err() error  { return s.e }
func (s *fileSource) dups() int64 { return 0 } // runs hold each key once
func (s *fileSource) close()      { s.f.Close() }
