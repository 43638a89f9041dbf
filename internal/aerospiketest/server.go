package aerospiketest

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// Sentinel errors returned by Start.
var (
	// ErrBadOptions is wrapped by Start when Options fail validation.
	ErrBadOptions = errors.New("aerospiketest: bad options")
)

// Request kinds counted by (*Server).Requests. A kind describes what a wire
// message does, not which client method sent it: client.Operate with only
// read operations is counted as KindRead, client.Exists as KindReadHeader.
const (
	KindInfo        = "info"         // one info-protocol message (any number of names)
	KindRead        = "read"         // single-record read of all or named bins
	KindReadHeader  = "read_header"  // single-record read without bin data (Exists, GetHeader)
	KindWrite       = "write"        // single-record write made only of WRITE ops (Put, PutBins)
	KindDelete      = "delete"       // single-record delete (client.Delete)
	KindTouch       = "touch"        // single-record touch (client.Touch)
	KindOperate     = "operate"      // any other single-record message (ADD, APPEND, mixed read/write ...)
	KindBatch       = "batch"        // one batch message (BatchGet, BatchOperate, BatchDelete ...)
	KindBatchRecord = "batch_record" // one record inside a batch message
	KindUnsupported = "unsupported"  // answered with result code 16 (scan, query, UDF, CDT, filter expression ...)
	KindMalformed   = "malformed"    // unparseable message: answered with result code 4 or connection closed
	KindRecordFault = "record_fault" // one record answered with the result code of SetRecordHook
)

var allKinds = [...]string{
	KindInfo, KindRead, KindReadHeader, KindWrite, KindDelete, KindTouch, KindOperate,
	KindBatch, KindBatchRecord, KindUnsupported, KindMalformed, KindRecordFault,
}

func kindIndex(kind string) int {
	for i, k := range allKinds {
		if k == kind {
			return i
		}
	}
	return -1
}

// Default values applied by Start to zero-valued Options fields.
const (
	DefaultNamespace     = "test"
	DefaultNodeName      = "BB9AE05E5700001"
	DefaultClusterName   = "aerospiketest"
	DefaultMaxRecordSize = 1 << 20 // bytes, Aerospike 7's default write-block-size
)

// Options configures a test server. The zero value is usable; each field
// documents its default.
type Options struct {
	// Namespace is the only namespace the server holds. Default "test".
	// Requests for any other namespace get result code 20 (INVALID_NAMESPACE).
	Namespace string
	// Logger receives connection-level debug messages. Default zap.NewNop().
	Logger *zap.Logger
	// Now is the clock used for record expiration and last-update times.
	// Default time.Now. Tests pass a fake clock to expire records without sleeping.
	// It is called concurrently and must be safe for that.
	Now func() time.Time
	// NodeName is the name the node reports (info "node"). Default DefaultNodeName.
	NodeName string
	// ClusterName is answered to info "cluster-name". Default DefaultClusterName.
	// A client whose ClientPolicy.ClusterName differs refuses the node, as with a real server.
	ClusterName string
	// DefaultTTL is the namespace default-ttl applied to writes whose TTL is
	// 0 (TTLServerDefault). Default 0: such records never expire. Whole seconds.
	DefaultTTL time.Duration
	// MaxRecordSize is the largest record accepted, in bytes, measured roughly as
	// bin names + bin values + 9 bytes per bin + set name. Bigger writes get result
	// code 13 (RECORD_TOO_BIG). Default DefaultMaxRecordSize (1 MiB); negative disables the limit.
	MaxRecordSize int
	// NsupPeriodZero models a namespace with nsup-period 0, the real
	// server's default: every write that would give a record an expiry (a
	// TTL other than -1 never and -2 keep, or 0 with a DefaultTTL) is
	// refused with result code 22 (FAIL_FORBIDDEN), and info
	// "namespace/<ns>" reports nsup-period=0. Default false: nsup-period=120.
	NsupPeriodZero bool
	// MaxSets is the number of sets the namespace can hold, as a real
	// server's 4,095: a write that would create a record in one more set is
	// refused with result code 4 (PARAMETER_ERROR). A set counts once it has
	// held a record, even after its records are deleted (Reset forgets the
	// sets). Default DefaultMaxSets; tests lower it to reach the limit.
	MaxSets int
}

// DefaultMaxSets is a real namespace's set limit.
const DefaultMaxSets = 4095

// Fault tells the server to misbehave for one request. The zero Fault means
// answer normally.
type Fault struct {
	// ResultCode, if non-zero, is sent as the Aerospike result code of the whole
	// request instead of executing it; no data is read or changed.
	ResultCode int
	// Delay is waited before answering (or failing). Close interrupts it.
	Delay time.Duration
	// CloseConn closes the client's connection instead of answering.
	CloseConn bool
	// DropReply executes the request, then closes the client's connection
	// without answering: the outcome is unknown to the client although the
	// server applied it, as when a real server's reply is lost (a network
	// failure or a client timeout after the request arrived).
	DropReply bool
}

const (
	protoVersion      = 2
	protoInfo         = 1
	protoAdmin        = 2
	protoMsg          = 3
	protoMsgCompress  = 4
	maxInfoSize       = 1 << 20   // bytes of one info request
	maxMsgSize        = 120 << 20 // the v7 client's MaxBufferSize
	writeTimeout      = 10 * time.Second
	partitionCount    = 4096
	generationMax     = 0xFFFF // Aerospike generations are 16-bit and wrap to 1
	citrusleafEpoch   = 1262304000
	maxBinNameLen     = 15
	maxSetNameLen     = 63
	maxNamespaceLen   = 31
	maxTTLSeconds     = 10 * 365 * 24 * 3600 // namespace max-ttl default: 10 years
	batchFrameCutover = 128 << 10            // bytes of batch response per proto frame
)

// Server is an in-memory Aerospike wire-protocol server for tests, bound to
// 127.0.0.1. It holds one namespace on one node that owns all 4096 partitions.
// All methods are safe for concurrent use.
type Server struct {
	opts      Options
	log       *zap.Logger
	ln        net.Listener
	host      string
	port      int
	bitmapB64 string
	done      chan struct{}

	mu      sync.Mutex // guards records and sets
	records map[recKey]*record
	sets    map[string]struct{} // every set that has held a record

	connMu sync.Mutex // guards conns and closed
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup

	closeOnce sync.Once
	closeErr  error

	counts  [len(allKinds)]atomic.Int64
	fault   atomic.Pointer[func(kind string) Fault]
	recHook atomic.Pointer[func(RecordCall) int]
	tap     atomic.Pointer[func(frame []byte)] // tests only: sees each well-framed request
}

// Start validates opts, listens on 127.0.0.1:0 and serves until Close.
func Start(opts Options) (*Server, error) {
	if opts.Namespace == "" {
		opts.Namespace = DefaultNamespace
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.NodeName == "" {
		opts.NodeName = DefaultNodeName
	}
	if opts.ClusterName == "" {
		opts.ClusterName = DefaultClusterName
	}
	if opts.MaxRecordSize == 0 {
		opts.MaxRecordSize = DefaultMaxRecordSize
	}
	if err := opts.validate(); err != nil {
		return nil, err
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("aerospiketest: listen: %w", err)
	}
	addr := ln.Addr().(*net.TCPAddr)
	bitmap := bytes.Repeat([]byte{0xFF}, partitionCount/8)
	s := &Server{
		opts:      opts,
		log:       opts.Logger,
		ln:        ln,
		host:      addr.IP.String(),
		port:      addr.Port,
		bitmapB64: base64.StdEncoding.EncodeToString(bitmap),
		done:      make(chan struct{}),
		records:   make(map[recKey]*record),
		sets:      make(map[string]struct{}),
		conns:     make(map[net.Conn]struct{}),
	}
	s.wg.Add(1)
	go s.acceptLoop()
	s.log.Debug("aerospiketest: serving", zap.String("addr", ln.Addr().String()), zap.String("namespace", opts.Namespace))
	return s, nil
}

func (o *Options) validate() error {
	var problems []string
	if len(o.Namespace) > maxNamespaceLen || strings.ContainsAny(o.Namespace, ":;,\t\n ") {
		problems = append(problems, fmt.Sprintf("namespace: must be 1..%d characters without ':;, \\t\\n', got %q", maxNamespaceLen, o.Namespace))
	}
	if strings.ContainsAny(o.NodeName, ":;,[]\t\n ") {
		problems = append(problems, fmt.Sprintf("node_name: must not contain ':;,[] \\t\\n', got %q", o.NodeName))
	}
	if strings.ContainsAny(o.ClusterName, "\t\n") {
		problems = append(problems, fmt.Sprintf("cluster_name: must not contain tabs or newlines, got %q", o.ClusterName))
	}
	if o.MaxSets < 0 {
		problems = append(problems, fmt.Sprintf("max_sets: must be >= 0, got %d", o.MaxSets))
	}
	if o.DefaultTTL < 0 || o.DefaultTTL > maxTTLSeconds*time.Second {
		problems = append(problems, fmt.Sprintf("default_ttl: must be 0..10 years, got %s", o.DefaultTTL))
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", ErrBadOptions, strings.Join(problems, "; "))
	}
	return nil
}

// Addr returns "127.0.0.1:port".
func (s *Server) Addr() string { return net.JoinHostPort(s.host, fmt.Sprint(s.port)) }

// Host returns the listening IP address, "127.0.0.1".
func (s *Server) Host() string { return s.host }

// Port returns the listening TCP port.
func (s *Server) Port() int { return s.port }

// Namespace returns the namespace the server holds.
func (s *Server) Namespace() string { return s.opts.Namespace }

// Close stops accepting, closes every client connection and waits for the
// connection goroutines to end. It is idempotent; later calls return the
// first call's result.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		close(s.done)
		if err := s.ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			s.closeErr = fmt.Errorf("aerospiketest: close listener: %w", err)
		}
		s.connMu.Lock()
		s.closed = true
		for c := range s.conns {
			_ = c.Close()
		}
		s.connMu.Unlock()
		s.wg.Wait()
	})
	return s.closeErr
}

// Records returns the number of live (not expired) records. Expired records
// are purged as a side effect.
func (s *Server) Records() int {
	now := s.opts.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, r := range s.records {
		if r.expired(now) {
			delete(s.records, k)
		}
	}
	return len(s.records)
}

// Reset deletes every record and forgets the sets. Request counters are kept.
func (s *Server) Reset() {
	s.mu.Lock()
	clear(s.records)
	clear(s.sets)
	s.mu.Unlock()
}

// Requests returns a fresh copy of the request counters, keyed by the Kind*
// constants. Kinds never seen are absent (read them as 0).
func (s *Server) Requests() map[string]int {
	m := make(map[string]int)
	for i := range s.counts {
		if n := s.counts[i].Load(); n != 0 {
			m[allKinds[i]] = int(n)
		}
	}
	return m
}

// Connections returns the number of open client connections.
func (s *Server) Connections() int {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	return len(s.conns)
}

// SetFaultHook installs f, called once per request with its Kind* (for a
// batch, once with KindBatch); the Fault it returns is applied to that
// request. Info requests are never faulted, so the client keeps seeing the
// node. nil removes the hook. f is called concurrently.
func (s *Server) SetFaultHook(f func(kind string) Fault) {
	if f == nil {
		s.fault.Store(nil)
		return
	}
	s.fault.Store(&f)
}

func (s *Server) count(kind string, n int) {
	if i := kindIndex(kind); i >= 0 {
		s.counts[i].Add(int64(n))
	}
}

// faultFor returns the fault for kind; ok is false if the connection must be
// closed (CloseConn, or Close during the delay).
func (s *Server) faultFor(kind string) (code int, ok bool) {
	code, ok, _ = s.faultAfter(kind)
	return code, ok
}

// faultAfter is faultFor that also says whether the reply must be dropped
// after executing the request (Fault.DropReply).
func (s *Server) faultAfter(kind string) (code int, ok, dropReply bool) {
	fp := s.fault.Load()
	if fp == nil {
		return 0, true, false
	}
	f := (*fp)(kind)
	if f.Delay > 0 {
		t := time.NewTimer(f.Delay)
		select {
		case <-t.C:
		case <-s.done:
			t.Stop()
			return 0, false, false
		}
	}
	if f.CloseConn {
		return 0, false, false
	}
	return f.ResultCode, true, f.DropReply && f.ResultCode == 0
}

func (s *Server) acceptLoop() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			select {
			case <-s.done:
				return
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			s.log.Debug("aerospiketest: accept failed", zap.Error(err))
			return
		}
		s.connMu.Lock()
		if s.closed {
			s.connMu.Unlock()
			_ = c.Close()
			return
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.connMu.Unlock()
		go s.serveConn(c)
	}
}

// errDrop means: close the connection without answering.
var errDrop = errors.New("aerospiketest: drop connection")

func (s *Server) serveConn(c net.Conn) {
	defer func() {
		s.connMu.Lock()
		delete(s.conns, c)
		s.connMu.Unlock()
		_ = c.Close()
		s.wg.Done()
	}()
	br := bufio.NewReaderSize(c, 32<<10)
	bw := bufio.NewWriterSize(c, 32<<10)
	var hdr [8]byte
	var body []byte
	for {
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			if !errors.Is(err, io.EOF) {
				s.log.Debug("aerospiketest: read header", zap.String("remote", c.RemoteAddr().String()), zap.Error(err))
			}
			return
		}
		out, err := s.handleFrame(br, hdr, &body)
		if err != nil {
			s.log.Debug("aerospiketest: closing connection", zap.String("remote", c.RemoteAddr().String()), zap.Error(err))
			return
		}
		_ = c.SetWriteDeadline(time.Now().Add(writeTimeout))
		if _, err := bw.Write(out); err != nil {
			return
		}
		if err := bw.Flush(); err != nil {
			return
		}
	}
}

// handleFrame reads the body of the frame whose header is hdr and returns
// the bytes to send back. An error closes the connection. body is a reusable
// buffer.
func (s *Server) handleFrame(br io.Reader, hdr [8]byte, body *[]byte) ([]byte, error) {
	version, typ := hdr[0], hdr[1]
	size := uint64(hdr[2])<<40 | uint64(hdr[3])<<32 | uint64(binary.BigEndian.Uint32(hdr[4:]))
	if version != protoVersion {
		s.count(KindMalformed, 1)
		return nil, fmt.Errorf("aerospiketest: proto version %d, want %d", version, protoVersion)
	}
	limit := uint64(maxMsgSize)
	switch typ {
	case protoInfo:
		limit = maxInfoSize
	case protoMsg, protoMsgCompress:
	case protoAdmin:
		s.count(KindUnsupported, 1)
		return nil, errors.New("aerospiketest: admin (security) protocol is not supported")
	default:
		s.count(KindMalformed, 1)
		return nil, fmt.Errorf("aerospiketest: proto type %d", typ)
	}
	if size > limit {
		s.count(KindMalformed, 1)
		return nil, fmt.Errorf("aerospiketest: proto size %d over limit %d", size, limit)
	}
	b, err := readBody(br, int(size), *body)
	if err != nil {
		return nil, err
	}
	*body = b
	if tp := s.tap.Load(); tp != nil {
		(*tp)(append(hdr[:], b...))
	}
	switch typ {
	case protoInfo:
		s.count(KindInfo, 1)
		return s.handleInfo(b), nil
	case protoMsgCompress:
		inner, err := decompressMsg(b)
		if err != nil {
			s.count(KindMalformed, 1)
			return nil, err
		}
		return s.handleMsg(inner)
	default:
		return s.handleMsg(b)
	}
}

// readBody reads n bytes, growing buf only as bytes arrive so that a header
// claiming a huge size does not allocate it up front.
func readBody(r io.Reader, n int, buf []byte) ([]byte, error) {
	const chunk = 1 << 20
	if n <= cap(buf) {
		buf = buf[:n]
		_, err := io.ReadFull(r, buf)
		return buf, err
	}
	if n <= chunk {
		buf = make([]byte, n)
		_, err := io.ReadFull(r, buf)
		return buf, err
	}
	var bb bytes.Buffer
	bb.Grow(64 << 10)
	if _, err := io.CopyN(&bb, r, int64(n)); err != nil {
		return nil, err
	}
	return bb.Bytes(), nil
}

// decompressMsg unpacks a type-4 body: 8-byte uncompressed size, then a zlib
// stream holding a whole type-3 proto frame. It returns that frame's body.
func decompressMsg(b []byte) ([]byte, error) {
	if len(b) < 8 {
		return nil, errors.New("aerospiketest: compressed message shorter than 8 bytes")
	}
	orig := binary.BigEndian.Uint64(b)
	if orig < 8 || orig > maxMsgSize {
		return nil, fmt.Errorf("aerospiketest: compressed message claims %d bytes", orig)
	}
	zr, err := zlib.NewReader(bytes.NewReader(b[8:]))
	if err != nil {
		return nil, fmt.Errorf("aerospiketest: zlib: %w", err)
	}
	defer zr.Close()
	// Check the inner proto header before inflating the rest, so garbage is
	// refused without inflating up to the size limit.
	var ph [8]byte
	if _, err := io.ReadFull(zr, ph[:]); err != nil {
		return nil, fmt.Errorf("aerospiketest: zlib: %w", err)
	}
	if ph[0] != protoVersion || ph[1] != protoMsg {
		return nil, fmt.Errorf("aerospiketest: compressed message holds proto %d/%d", ph[0], ph[1])
	}
	innerSize := uint64(ph[2])<<40 | uint64(ph[3])<<32 | uint64(binary.BigEndian.Uint32(ph[4:]))
	if innerSize != orig-8 {
		return nil, fmt.Errorf("aerospiketest: compressed message inner size %d, want %d", innerSize, orig-8)
	}
	inner, err := readBody(zr, int(innerSize), nil)
	if err != nil {
		return nil, fmt.Errorf("aerospiketest: zlib: %w", err)
	}
	if n, _ := zr.Read(ph[:1]); n != 0 {
		return nil, errors.New("aerospiketest: compressed message inflates past its declared size")
	}
	return inner, nil
}

// appendProtoHeader appends a proto header with a zero size; finishFrame
// fills the size in.
func appendProtoHeader(out []byte, typ byte) []byte {
	return append(out, protoVersion, typ, 0, 0, 0, 0, 0, 0)
}

// finishFrame writes the size of the frame starting at out[start].
func finishFrame(out []byte, start int) {
	size := uint64(len(out) - start - 8)
	out[start+2] = byte(size >> 40)
	out[start+3] = byte(size >> 32)
	binary.BigEndian.PutUint32(out[start+4:], uint32(size))
}
