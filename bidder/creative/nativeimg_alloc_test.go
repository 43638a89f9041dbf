//go:build !race

package creative

import (
	"testing"

	"github.com/rtbd/rtbd/catalog/catalogpb"
)

func TestNativeImageAllocs(t *testing.T) {
	rz := mustResize(t, "https://rs.example/r?w={w}&h={h}&u={url}")
	var nr NativeRequest
	if err := ParseNative(`{"assets":[{"id":1,"required":1,"img":{"type":1,"w":80,"h":80}},{"id":2,"img":{"type":3,"w":180,"h":120}},{"id":3,"img":{"type":3,"wmin":100,"hmin":100}}]}`, &nr); err != nil {
		t.Fatal(err)
	}
	n := &Native{Request: &nr, Products: []*catalogpb.Product{imgProduct(300, 300)}, Resize: rz}
	buf := make([]byte, 0, 4096)
	if a := testing.AllocsPerRun(100, func() {
		var err error
		if buf, err = AppendNative(buf[:0], n); err != nil {
			panic(err)
		}
	}); a != 0 {
		t.Fatalf("AppendNative with fitting and resized images: %v allocations", a)
	}
}
