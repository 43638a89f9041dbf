package aerospiketest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"sync"
	"testing"

	as "github.com/aerospike/aerospike-client-go/v7"
)

// clientFrames runs a representative v7 client session against a server and
// returns every request frame the client sent, so that fuzzing starts from
// real client messages.
func clientFrames(t testing.TB) [][]byte {
	s := startServer(t, Options{})
	var mu sync.Mutex
	var frames [][]byte
	tap := func(f []byte) {
		mu.Lock()
		frames = append(frames, f)
		mu.Unlock()
	}
	s.tap.Store(&tap)
	c := newClient(t, s)
	k1, k2, k3 := key(t, "test", "u", 1), key(t, "test", "u", "two"), key(t, "test", "v", []byte{3})
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(c.Put(nil, k1, as.BinMap{"i": 1, "f": 2.5, "s": "x", "b": []byte{1}, "l": []any{1}, "m": map[any]any{"a": 1}}))
	wp := as.NewWritePolicy(3, 60)
	wp.SendKey = true
	wp.RecordExistsAction = as.REPLACE
	wp.GenerationPolicy = as.EXPECT_GEN_GT
	must(c.Put(wp, k2, as.BinMap{"s": "y"}))
	_, err := c.Get(nil, k1, "i", "s")
	must(err)
	_, err = c.GetHeader(nil, k1)
	must(err)
	_, err = c.Operate(nil, k1, as.AddOp(as.NewBin("i", 2)), as.AppendOp(as.NewBin("s", "z")), as.GetOp())
	must(err)
	_, err = c.Operate(nil, k3, as.PutOp(as.NewBin("p", []byte("profile"))), as.TouchOp(), as.GetHeaderOp())
	must(err)
	_, err = c.BatchGet(nil, []*as.Key{k1, k2, k3})
	must(err)
	_, err = c.BatchGet(nil, []*as.Key{k1, k2}, "s")
	must(err)
	must(c.BatchOperate(nil, []as.BatchRecordIfc{
		as.NewBatchRead(nil, k1, []string{"i"}),
		as.NewBatchWrite(nil, k2, as.AddOp(as.NewBin("n", 1))),
		as.NewBatchDelete(nil, k3),
	}))
	cp := as.NewWritePolicy(0, 0)
	cp.UseCompression = true
	must(c.Put(cp, k3, as.BinMap{"p": bytes.Repeat([]byte("ab"), 200)}))
	_, err = c.Delete(nil, k1)
	must(err)
	must(c.Truncate(nil, "test", "u", nil))

	mu.Lock()
	defer mu.Unlock()
	return append([][]byte(nil), frames...)
}

// checkResponse verifies that out is a sequence of well-formed frames whose
// AS_MSG records parse the way the v7 client parses them (22-byte header,
// no fields, ops of size 4+name+value).
func checkResponse(out []byte) error {
	for len(out) > 0 {
		if len(out) < 8 {
			return fmt.Errorf("short proto header: %x", out)
		}
		if out[0] != protoVersion || (out[1] != protoInfo && out[1] != protoMsg) {
			return fmt.Errorf("bad proto header %x", out[:8])
		}
		size := binary.BigEndian.Uint64(out) & 0xFFFFFFFFFFFF
		if uint64(len(out)-8) < size {
			return fmt.Errorf("frame claims %d bytes, %d present", size, len(out)-8)
		}
		typ, body := out[1], out[8:8+size]
		out = out[8+size:]
		if typ == protoInfo {
			if len(body) > 0 && body[len(body)-1] != '\n' {
				return fmt.Errorf("info answer not newline-terminated: %q", body)
			}
			continue
		}
		if err := checkMsgBody(body); err != nil {
			return err
		}
	}
	return nil
}

func checkMsgBody(body []byte) error {
	if len(body) == 0 {
		return fmt.Errorf("empty AS_MSG frame")
	}
	for len(body) > 0 {
		if len(body) < msgHeaderSize || body[0] != msgHeaderSize {
			return fmt.Errorf("bad record header %x", body)
		}
		nFields := binary.BigEndian.Uint16(body[18:])
		nOps := int(binary.BigEndian.Uint16(body[20:]))
		if nFields != 0 {
			return fmt.Errorf("record with %d fields", nFields)
		}
		body = body[msgHeaderSize:]
		for i := 0; i < nOps; i++ {
			if len(body) < 8 {
				return fmt.Errorf("op %d: short header", i)
			}
			opSize := int(binary.BigEndian.Uint32(body))
			nameLen := int(body[7])
			if opSize < 4+nameLen || len(body) < 4+opSize {
				return fmt.Errorf("op %d: size %d, name %d, %d bytes left", i, opSize, nameLen, len(body))
			}
			body = body[4+opSize:]
		}
	}
	return nil
}

func FuzzFrames(f *testing.F) {
	for _, fr := range clientFrames(f) {
		f.Add(fr)
	}
	f.Add(frame(protoInfo, []byte("node\npartition-generation\nreplicas\npeers-clear-std\ntruncate:namespace=test;set=a;lut=x\n")))
	f.Add(frame(protoMsg, msgHeader22(info1Batch, 0, 0, 1, 0)))
	f.Add([]byte{2, 3, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF})
	s := startServer(f, Options{})
	f.Fuzz(func(t *testing.T, data []byte) {
		s.Reset()
		r := bytes.NewReader(data)
		var body []byte
		for {
			var hdr [8]byte
			if _, err := io.ReadFull(r, hdr[:]); err != nil {
				return
			}
			out, err := s.handleFrame(r, hdr, &body)
			if err != nil {
				return
			}
			if err := checkResponse(out); err != nil {
				t.Fatalf("bad response to %x: %v", data, err)
			}
		}
	})
}
