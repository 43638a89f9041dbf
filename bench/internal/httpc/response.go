package httpc

import (
	"bytes"
	"io"
	"net"
	"slices"
	"syscall"
	"time"
)

// conn is one keep-alive connection and its buffers. One request uses it
// at a time.
type conn struct {
	nc   net.Conn
	raw  syscall.RawConn    // nc's, when it has one (TCP, not TLS)
	step func(uintptr) bool // cn.rawStep
	st   rawState
	rd   io.Reader // nc (a bytes.Reader in the fuzz target)
	rbuf []byte    // read buffer: rbuf[r:w] is read and not yet consumed
	r, w int
	wbuf []byte // the request being written
	used time.Time
}

// send writes cn.wbuf, the whole request, and on a raw connection also
// waits for and reads the first bytes of the answer.
//
// Go's net.Conn.Read first tries read(2), which right after a request
// nearly always finds nothing (EAGAIN), then parks until the poller sees
// the socket readable and reads again: two reads per answer. On a raw TCP
// connection send does the write inside RawConn.Read's callback instead,
// after the poller's readiness state was reset: the callback says "not
// yet" without a read, the goroutine parks, and the one read(2) happens
// when the answer is there. A response arriving between the write and the
// park is not lost (the reset came before the write). A write that cannot
// complete at once (a large body, a full socket buffer) finishes through
// nc.Write with the write deadline. Saves a system call per request, about
// 5% of the generator's CPU at 20,000 requests/s.
func (cn *conn) send(deadline time.Time) error {
	cn.r, cn.w = 0, 0
	if cn.raw == nil {
		if err := cn.nc.SetDeadline(deadline); err != nil {
			return err
		}
		_, err := cn.nc.Write(cn.wbuf)
		return err
	}
	if err := cn.nc.SetReadDeadline(deadline); err != nil {
		return err
	}
	cn.st = rawState{}
	err := cn.raw.Read(cn.step)
	st := &cn.st
	switch {
	case st.werr != nil:
		return &net.OpError{Op: "write", Net: "tcp", Addr: cn.nc.RemoteAddr(), Err: st.werr}
	case err != nil: // the deadline, or the connection closed
		return err
	case !st.read: // the write was cut short: finish it the ordinary way
		if err := cn.nc.SetWriteDeadline(deadline); err != nil {
			return err
		}
		_, err := cn.nc.Write(cn.wbuf[st.sent:])
		return err
	case st.rerr != nil:
		return &net.OpError{Op: "read", Net: "tcp", Addr: cn.nc.RemoteAddr(), Err: st.rerr}
	case st.n == 0:
		return io.EOF // closed before answering
	}
	cn.w = st.n
	return nil
}

// rawState is send's progress through RawConn.Read's callback.
type rawState struct {
	wrote, read bool
	sent, n     int
	werr, rerr  error
}

// rawStep is the RawConn.Read callback of send (kept in conn.step, so
// that a request allocates no closure): the first call writes the request,
// the next ones read the answer's first bytes once the socket is readable.
func (cn *conn) rawStep(fd uintptr) bool {
	st := &cn.st
	if !st.wrote {
		st.wrote = true
		m, err := nbWrite(fd, cn.wbuf)
		switch {
		case err == syscall.EAGAIN || err == syscall.EINTR:
			return true // finished by send, blocking
		case err != nil:
			st.werr = err
			return true
		}
		if st.sent = m; st.sent < len(cn.wbuf) {
			return true
		}
		return false // wait for the answer
	}
	k, err := nbRead(fd, cn.rbuf)
	if err == syscall.EAGAIN || err == syscall.EINTR {
		return false
	}
	st.read, st.n, st.rerr = true, max(k, 0), err
	return true
}

// maxLine bounds a chunk-size line.
const maxLine = 4 << 10

// fill reads more bytes into rbuf, compacting it first and growing it up
// to limit bytes; ErrTooLarge when rbuf[r:w] is already limit long.
func (cn *conn) fill(limit int) error {
	if cn.r == cn.w {
		cn.r, cn.w = 0, 0
	}
	if cn.w == len(cn.rbuf) && cn.r > 0 {
		cn.w = copy(cn.rbuf, cn.rbuf[cn.r:cn.w])
		cn.r = 0
	}
	if cn.w == len(cn.rbuf) {
		if len(cn.rbuf) >= limit {
			return ErrTooLarge
		}
		nb := make([]byte, min(max(2*len(cn.rbuf), 512), limit))
		cn.w = copy(nb, cn.rbuf[cn.r:cn.w])
		cn.r, cn.rbuf = 0, nb
	}
	for {
		n, err := cn.rd.Read(cn.rbuf[cn.w:])
		cn.w += n
		if n > 0 {
			return nil
		}
		if err != nil {
			if err == io.EOF && cn.r != cn.w {
				return io.ErrUnexpectedEOF // a response cut short
			}
			return err
		}
	}
}

// readResponse reads one response (after any 1xx interim ones) into resp
// and reports whether the connection may carry another request.
func (cn *conn) readResponse(head bool, resp *Response, maxHdr, maxBody int) (keep bool, err error) {
	resp.Status, resp.Body, resp.header = 0, resp.Body[:0], resp.header[:0]
	for {
		end, err := cn.headerEnd(maxHdr)
		if err != nil {
			return false, err
		}
		block := cn.rbuf[cn.r : end-2] // status line and header lines, each ending in CRLF
		cn.r = end
		status, rest, proto11, ok := parseStatusLine(block)
		if !ok {
			return false, ErrBadResponse
		}
		if status >= 100 && status < 200 {
			if status == 101 { // no upgrade was asked for
				return false, ErrBadResponse
			}
			continue // interim: the real answer follows
		}
		h, ok := parseHeaders(rest)
		if !ok {
			return false, ErrBadResponse
		}
		resp.Status = status
		resp.header = append(resp.header, rest...)
		keep = !h.close && (proto11 || h.keepAlive)
		switch {
		case head || status == 204 || status == 304:
			return keep, nil
		case h.chunked:
			err := cn.readChunked(resp, maxHdr, maxBody)
			return keep && err == nil, err
		case h.te: // a coding other than chunked last: the body runs to the end
			return false, cn.readToEOF(resp, maxBody)
		case h.length >= 0:
			if h.length > int64(maxBody) {
				return false, ErrTooLarge
			}
			err := cn.readN(resp, int(h.length))
			return keep && err == nil, err
		default:
			return false, cn.readToEOF(resp, maxBody)
		}
	}
}

// headerEnd returns the index in rbuf just past the CRLFCRLF that ends the
// header block starting at r.
func (cn *conn) headerEnd(maxHdr int) (int, error) {
	from := cn.r
	for {
		if i := bytes.Index(cn.rbuf[from:cn.w], crlf2); i >= 0 {
			return from + i + 4, nil
		}
		if cn.w-cn.r >= maxHdr {
			return 0, ErrTooLarge
		}
		scanned := max(cn.w-cn.r-3, 0) // the next search starts near the old end
		if err := cn.fill(maxHdr); err != nil {
			return 0, err
		}
		from = cn.r + scanned
	}
}

var crlf2 = []byte("\r\n\r\n")

// parseStatusLine parses "HTTP/1.x SSS[ reason]\r\n" at the start of b
// and returns the status, the bytes after the line, and whether the
// version is 1.1.
func parseStatusLine(b []byte) (status int, rest []byte, proto11, ok bool) {
	i := bytes.Index(b, []byte("\r\n"))
	if i < 0 {
		return 0, nil, false, false
	}
	line, rest := b[:i], b[i+2:]
	if len(line) < 12 || string(line[:7]) != "HTTP/1." || (line[7] != '0' && line[7] != '1') || line[8] != ' ' ||
		(len(line) > 12 && line[12] != ' ') {
		return 0, nil, false, false
	}
	for _, c := range line[9:12] {
		if c < '0' || c > '9' {
			return 0, nil, false, false
		}
		status = status*10 + int(c-'0')
	}
	if status < 100 {
		return 0, nil, false, false
	}
	return status, rest, line[7] == '1', true
}

// framing is what the headers say about the body and the connection.
type framing struct {
	length           int64 // Content-Length, -1 when absent
	te, chunked      bool  // Transfer-Encoding present; chunked is its last coding
	close, keepAlive bool  // Connection tokens
}

// parseHeaders reads the header lines of b (each ending in CRLF).
func parseHeaders(b []byte) (framing, bool) {
	f := framing{length: -1}
	for len(b) > 0 {
		i := bytes.Index(b, []byte("\r\n"))
		if i < 0 {
			return f, false
		}
		line := b[:i]
		b = b[i+2:]
		k, v, ok := bytes.Cut(line, []byte{':'})
		if !ok || len(k) == 0 || k[0] == ' ' || k[0] == '\t' || k[len(k)-1] == ' ' { // no folding, no space before ':'
			return f, false
		}
		v = bytes.TrimSpace(v)
		switch {
		case len(k) == 14 && asciiEqualFold(k, "content-length"):
			n, ok := parseLength(v)
			if !ok || (f.length >= 0 && f.length != n) {
				return f, false
			}
			f.length = n
		case len(k) == 17 && asciiEqualFold(k, "transfer-encoding"):
			f.te = true
			last := v
			if j := bytes.LastIndexByte(v, ','); j >= 0 {
				last = bytes.TrimSpace(v[j+1:])
			}
			f.chunked = len(last) == 7 && asciiEqualFold(last, "chunked")
		case len(k) == 10 && asciiEqualFold(k, "connection"):
			for tok := range bytes.SplitSeq(v, []byte{','}) {
				tok = bytes.TrimSpace(tok)
				if len(tok) == 5 && asciiEqualFold(tok, "close") {
					f.close = true
				} else if len(tok) == 10 && asciiEqualFold(tok, "keep-alive") {
					f.keepAlive = true
				}
			}
		}
	}
	return f, true
}

// parseLength parses a Content-Length value: decimal digits only.
func parseLength(v []byte) (int64, bool) {
	if len(v) == 0 || len(v) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// readN appends the next n body bytes to resp.Body: the buffered ones,
// then straight from the connection.
func (cn *conn) readN(resp *Response, n int) error {
	k := min(n, cn.w-cn.r)
	resp.Body = append(resp.Body, cn.rbuf[cn.r:cn.r+k]...)
	cn.r += k
	if n -= k; n == 0 {
		return nil
	}
	l := len(resp.Body)
	resp.Body = slices.Grow(resp.Body, n)[:l+n]
	if _, err := io.ReadFull(cn.rd, resp.Body[l:]); err != nil {
		resp.Body = resp.Body[:l]
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	return nil
}

// readLine returns the next line without its LF (and CR), consuming it.
func (cn *conn) readLine(limit int) ([]byte, error) {
	from := cn.r
	for {
		if i := bytes.IndexByte(cn.rbuf[from:cn.w], '\n'); i >= 0 {
			line := cn.rbuf[cn.r : from+i]
			cn.r = from + i + 1
			return bytes.TrimSuffix(line, []byte{'\r'}), nil
		}
		if cn.w-cn.r >= limit {
			return nil, ErrTooLarge
		}
		scanned := cn.w - cn.r
		if err := cn.fill(max(limit, len(cn.rbuf))); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		from = cn.r + scanned
	}
}

// readChunked reads a chunked body and its trailers.
func (cn *conn) readChunked(resp *Response, maxHdr, maxBody int) error {
	for {
		line, err := cn.readLine(maxLine)
		if err != nil {
			return err
		}
		if j := bytes.IndexByte(line, ';'); j >= 0 { // chunk extensions are ignored
			line = line[:j]
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 || len(line) > 15 {
			return ErrBadResponse
		}
		var size int
		for _, c := range line {
			switch {
			case '0' <= c && c <= '9':
				size = size<<4 | int(c-'0')
			case 'a' <= c && c <= 'f':
				size = size<<4 | int(c-'a'+10)
			case 'A' <= c && c <= 'F':
				size = size<<4 | int(c-'A'+10)
			default:
				return ErrBadResponse
			}
		}
		if size == 0 {
			trailers := 0
			for { // trailer fields, then the empty line
				t, err := cn.readLine(maxLine)
				if err != nil {
					return err
				}
				if len(t) == 0 {
					return nil
				}
				if trailers += len(t); trailers > maxHdr {
					return ErrTooLarge
				}
			}
		}
		if size > maxBody-len(resp.Body) {
			return ErrTooLarge
		}
		if err := cn.readN(resp, size); err != nil {
			return err
		}
		if end, err := cn.readLine(maxLine); err != nil {
			return err
		} else if len(end) != 0 {
			return ErrBadResponse
		}
	}
}

// readToEOF appends everything up to the connection's end to resp.Body.
func (cn *conn) readToEOF(resp *Response, maxBody int) error {
	for {
		if len(resp.Body)+cn.w-cn.r > maxBody {
			return ErrTooLarge
		}
		resp.Body = append(resp.Body, cn.rbuf[cn.r:cn.w]...)
		cn.r, cn.w = 0, 0
		n, err := cn.rd.Read(cn.rbuf)
		cn.w = n
		if err == io.EOF {
			if len(resp.Body)+n > maxBody {
				return ErrTooLarge
			}
			resp.Body = append(resp.Body, cn.rbuf[:n]...)
			cn.w = 0
			return nil
		}
		if err != nil {
			return err
		}
	}
}
