package httpc

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// FuzzReadResponse feeds arbitrary server answers to the response reader:
// it must never panic or hang, must keep the body within its limit, and
// must report a status only for a response it accepted.
func FuzzReadResponse(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
		"HTTP/1.1 204 No Content\r\n\r\n",
		"HTTP/1.0 200 OK\r\n\r\nto the end",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n4;x=y\r\nabcd\r\n0\r\nT: v\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nraw",
		"HTTP/1.1 200 OK\r\nConnection: keep-alive, close\r\nContent-Length: 1\r\n\r\nx",
		"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nxEXTRA",
		"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\n",
		"HTTP/1.1 101 Switching\r\n\r\n",
		"\r\n\r\n",
	} {
		f.Add([]byte(s), false)
	}
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n"), true)
	const maxHdr, maxBody = 512, 1024
	f.Fuzz(func(t *testing.T, data []byte, head bool) {
		cn := &conn{rd: bytes.NewReader(data), rbuf: make([]byte, 64)}
		var resp Response
		keep, err := cn.readResponse(head, &resp, maxHdr, maxBody)
		if len(resp.Body) > maxBody {
			t.Fatalf("body of %d bytes, limit %d", len(resp.Body), maxBody)
		}
		if len(cn.rbuf) > max(maxHdr, maxLine) {
			t.Fatalf("read buffer grew to %d", len(cn.rbuf))
		}
		if err != nil {
			if keep {
				t.Fatal("a failed response keeps its connection")
			}
			known := errors.Is(err, ErrBadResponse) || errors.Is(err, ErrTooLarge) ||
				errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
			if !known {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if resp.Status < 200 || resp.Status > 999 {
			t.Fatalf("accepted status %d", resp.Status)
		}
	})
}
