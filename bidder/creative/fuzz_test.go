package creative

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/rtbd/rtbd/catalog/catalogpb"
	"github.com/rtbd/rtbd/rtb"
)

// FuzzNative: any imp.native.request either fails with ErrNativeRequest or
// parses, and then renders valid JSON or ErrUnfillable; never a panic.
func FuzzNative(f *testing.F) {
	f.Add(nativeReq)
	f.Add(`{"native":` + nativeReq + `}`)
	f.Add(`{"assets":[{"id":1,"required":1,"video":{}}]}`)
	f.Add(`{"assets":[{"id":-1,"title":{"len":-5}},{"id":2,"data":{"type":12,"len":1}}]}`)
	f.Fuzz(func(t *testing.T, s string) {
		var nr NativeRequest
		if err := ParseNative(s, &nr); err != nil {
			if !errors.Is(err, ErrNativeRequest) {
				t.Fatalf("error %v does not wrap ErrNativeRequest", err)
			}
			return
		}
		out, err := AppendNative(nil, &Native{Request: &nr, Products: []*catalogpb.Product{evil()}, Links: testLinks{}})
		if err != nil {
			if !errors.Is(err, ErrUnfillable) {
				t.Fatalf("AppendNative: %v", err)
			}
			return
		}
		if !jsonValid(out) {
			t.Fatalf("invalid JSON: %s", out)
		}
	})
}

// FuzzBanner: any product text renders without an element or attribute of
// its own, and the document is JSON-safe (the bidder writes it into the
// bid response as it is).
func FuzzBanner(f *testing.F) {
	f.Add(`<script>alert(1)</script>`, `https://img.example.com/a.jpg`, 300, 250)
	f.Add(`"'><img src=x onerror=1>`, `javascript:alert(1)`, 728, 90)
	f.Add("\x00\xff&amp;", `HTTPS://x/"><b>`, 160, 600)
	f.Fuzz(func(t *testing.T, title, img string, w, h int) {
		w, h = clamp(w, 1, 2000), clamp(h, 1, 2000)
		p := &catalogpb.Product{ProductId: 1, Title: title, ImageUrl: img, LandingUrl: img, PriceMicros: 1, Currency: title}
		doc := string(AppendBanner(nil, &Banner{W: w, H: h, Products: []*catalogpb.Product{p}, Advertiser: title, Links: testLinks{}}))
		got := parseHTML(t, []byte(doc))
		if got.tags["script"] != 0 || got.tags["img"] > 1 || got.tags["a"] != 1 {
			t.Fatalf("structure changed by product text: %v\n%s", got.tags, doc)
		}
		for _, a := range got.attrs {
			if strings.HasPrefix(a, "on") {
				t.Fatalf("attribute %q", a)
			}
		}
		if !rtb.JSONSafe(doc) {
			t.Fatalf("not JSON-safe: %q", doc)
		}
		// Through a CellCache, missed then hit: the same document.
		cells := NewCellCache(1)
		for range 2 {
			if c := string(AppendBanner(nil, &Banner{W: w, H: h, Products: []*catalogpb.Product{p}, Advertiser: title, Links: testLinks{}, Cells: cells})); c != doc {
				t.Fatalf("cached cell differs:\n%s\n%s", c, doc)
			}
		}
		// A BaseLinker whose base is the fuzzed text: escaped, read back
		// intact (as valid UTF-8), never more than one <base>.
		doc = string(AppendBanner(nil, &Banner{W: w, H: h, Products: []*catalogpb.Product{p}, Links: baseLinks{base: img}}))
		if !rtb.JSONSafe(doc) {
			t.Fatalf("not JSON-safe: %q", doc)
		}
		got = parseHTML(t, []byte(doc))
		if got.tags["script"] != 0 || got.tags["a"] != 1 || got.tags["base"] > 1 {
			t.Fatalf("structure changed by the base: %v\n%s", got.tags, doc)
		}
		// (Control characters are numeric references, so even a CR, which
		// an HTML parser reads as LF when raw, comes back as it was.)
		if img != "" && (len(got.bases) != 1 || utf8.ValidString(img) && !strings.ContainsRune(img, 0) && got.bases[0] != img) {
			t.Fatalf("base %q read back as %q\n%s", img, got.bases, doc)
		}
	})
}

func jsonValid(b []byte) bool { return json.Valid(b) }
