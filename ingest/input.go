package ingest

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/rtbd/rtbd/ingest/feed"
)

// countingReader counts the bytes read from a feed file (compressed bytes
// for a gzip feed), for progress and MB/s.
type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// openedFeed is one feed being read.
type openedFeed struct {
	name   string
	reader *feed.Reader
	close  func()
}

// openFeed opens path ("-": stdin) for reading rows. The file is read, and
// a gzip stream decompressed, ahead in a goroutine of its own
// (aheadReader), so that I/O and decompression run on another core than
// parsing.
func openFeed(path string, stdin io.Reader, opts feed.Options, counter *atomic.Int64) (*openedFeed, error) {
	var src io.Reader
	closeFile := func() {}
	if path == "-" {
		src = stdin
	} else {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		src, closeFile = f, func() { f.Close() }
	}
	br := bufio.NewReaderSize(countingReader{src, counter}, 256<<10)
	open := func() (io.Reader, error) { return br, nil }
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		open = func() (io.Reader, error) {
			zr, err := gzip.NewReader(br)
			if err != nil {
				return nil, fmt.Errorf("gzip: %w", err)
			}
			return zr, nil
		}
	}
	a := newAheadReader(open)
	closeAll := func() { a.Close(); closeFile() }
	fr, err := feed.NewReader(a, path, opts)
	if err != nil {
		closeAll()
		return nil, err
	}
	return &openedFeed{name: path, reader: fr, close: closeAll}, nil
}

// aheadReader reads (and decompresses) a stream in a goroutine, handing
// chunks of bytes to Read. Close stops the goroutine.
type aheadReader struct {
	chunks chan []byte
	free   chan []byte
	done   chan struct{}
	once   sync.Once
	cur    []byte
	buf    []byte // the chunk cur slices, returned to free when used up
	err    error
	errc   chan error
}

const (
	aheadChunk  = 256 << 10
	aheadChunks = 4
)

// newAheadReader starts reading the stream open returns (open runs in the
// goroutine: a gzip header read is already ahead work).
func newAheadReader(open func() (io.Reader, error)) *aheadReader {
	a := &aheadReader{chunks: make(chan []byte, aheadChunks), free: make(chan []byte, aheadChunks),
		done: make(chan struct{}), errc: make(chan error, 1)}
	for range aheadChunks {
		a.free <- make([]byte, aheadChunk)
	}
	go a.run(open)
	return a
}

func (a *aheadReader) run(open func() (io.Reader, error)) {
	defer close(a.chunks)
	r, err := open()
	if err != nil {
		a.errc <- err
		return
	}
	for {
		var b []byte
		select {
		case b = <-a.free:
		case <-a.done:
			return
		}
		n := 0
		for n < len(b) && err == nil {
			var k int
			k, err = r.Read(b[n:])
			n += k
		}
		if n > 0 {
			select {
			case a.chunks <- b[:n]:
			case <-a.done:
				return
			}
		} else {
			a.free <- b
		}
		if err == io.EOF {
			return
		}
		if err != nil {
			a.errc <- err
			return
		}
	}
}

func (a *aheadReader) Read(p []byte) (int, error) {
	for len(a.cur) == 0 {
		if a.buf != nil {
			a.free <- a.buf[:cap(a.buf)]
			a.buf = nil
		}
		if a.err != nil {
			return 0, a.err
		}
		b, ok := <-a.chunks
		if !ok {
			select {
			case a.err = <-a.errc:
			default:
				a.err = io.EOF
			}
			return 0, a.err
		}
		a.buf, a.cur = b, b
	}
	n := copy(p, a.cur)
	a.cur = a.cur[n:]
	return n, nil
}

// Close stops the reading goroutine.
func (a *aheadReader) Close() { a.once.Do(func() { close(a.done) }) }

// rejects writes the reject file and counts rejects by reason. The file is
// created at the first reject. Not safe for concurrent use.
type rejects struct {
	path     string
	f        *os.File
	w        *bufio.Writer
	byReason map[feed.Reason]int64
	total    int64
	err      error
}

func newRejects(path string) *rejects {
	return &rejects{path: path, byReason: map[feed.Reason]int64{}}
}

// rejectHeader is the first line of a reject file.
const rejectHeader = "file\tline\tfield\treason\tdetail\traw\n"

func (r *rejects) add(file string, e *feed.RowError) {
	r.total++
	r.byReason[e.Reason]++
	if r.err != nil {
		return
	}
	if r.f == nil {
		if r.f, r.err = os.Create(r.path); r.err != nil {
			return
		}
		r.w = bufio.NewWriterSize(r.f, 64<<10)
		r.w.WriteString(rejectHeader)
	}
	detail := ""
	if e.Err != nil {
		detail = e.Err.Error()
	}
	b := make([]byte, 0, 128+len(e.Raw))
	b = append(b, tsvField(file)...)
	b = append(b, '\t')
	b = strconv.AppendInt(b, e.Line, 10)
	b = append(b, '\t')
	b = append(b, e.Field...)
	b = append(b, '\t')
	b = append(b, e.Reason...)
	b = append(b, '\t')
	b = strconv.AppendQuote(b, detail)
	b = append(b, '\t')
	b = strconv.AppendQuote(b, e.Raw)
	b = append(b, '\n')
	_, r.err = r.w.Write(b)
}

// tsvField keeps a file name from breaking the TSV layout.
func tsvField(s string) string {
	if strings.ContainsAny(s, "\t\n\r") {
		return strconv.Quote(s)
	}
	return s
}

var errClosed = errors.New("ingest: reject file closed")

// close flushes and closes the file; later adds only count.
func (r *rejects) close() error {
	if r.f == nil {
		if r.err == errClosed {
			return nil
		}
		return r.err
	}
	if r.err == nil {
		r.err = r.w.Flush()
	}
	if err := r.f.Close(); r.err == nil {
		r.err = err
	}
	r.f = nil
	if r.err == nil {
		r.err = errClosed
	}
	if r.err != errClosed {
		return fmt.Errorf("ingest: reject file %s: %w", r.path, r.err)
	}
	return nil
}

// top returns the reasons with the most rejects, most first, as
// "reason N" strings.
func topReasons(by map[feed.Reason]int64, n int) []string {
	type rc struct {
		r feed.Reason
		c int64
	}
	var all []rc
	for r, c := range by {
		all = append(all, rc{r, c})
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].c != all[j].c {
			return all[i].c > all[j].c
		}
		return all[i].r < all[j].r
	})
	var out []string
	for i := 0; i < len(all) && i < n; i++ {
		out = append(out, fmt.Sprintf("%s %d", all[i].r, all[i].c))
	}
	return out
}
