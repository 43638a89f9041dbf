package creative

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/rtbd/rtbd/catalog/catalogpb"
)

// imgProduct is a product whose image is w x h pixels.
func imgProduct(w, h int32) *catalogpb.Product {
	return &catalogpb.Product{ProductId: 1, ProductGroupId: 1, Title: "T",
		ImageUrl: "https://img.example.com/1.jpg?v=2", Width: w, Height: h, LandingUrl: "https://shop.example.com/1"}
}

type imgOut struct {
	URL  string `json:"url"`
	W, H int64
}

// renderImages renders native request req for p and returns its image
// assets by id (err: ErrUnfillable).
func renderImages(t *testing.T, req string, p *catalogpb.Product, resize *ResizeURL) (map[int64]imgOut, error) {
	t.Helper()
	var nr NativeRequest
	if err := ParseNative(req, &nr); err != nil {
		t.Fatal(err)
	}
	out, err := AppendNative(nil, &Native{Request: &nr, Products: []*catalogpb.Product{p}, Resize: resize})
	if err != nil {
		return nil, err
	}
	var resp struct {
		Assets []struct {
			ID  int64   `json:"id"`
			Img *imgOut `json:"img"`
		}
	}
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	m := map[int64]imgOut{}
	for _, a := range resp.Assets {
		if a.Img != nil {
			m[a.ID] = *a.Img
		}
	}
	return m, nil
}

func mustResize(t *testing.T, s string) *ResizeURL {
	t.Helper()
	r, err := ParseResizeURL(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestNativeImageFit(t *testing.T) {
	const src = "https://img.example.com/1.jpg?v=2"
	cases := []struct {
		name   string
		img    string // the img object of a required main (or icon) asset
		w, h   int32  // the product image's size
		fits   bool
		wantWH [2]int64 // the img.w/h stated when it fits
	}{
		{"no size asked", `{"type":3}`, 300, 300, true, [2]int64{300, 300}},
		{"no size asked, size unknown", `{"type":3}`, 0, 0, true, [2]int64{}},
		// by min
		{"at least wmin x hmin", `{"type":3,"wmin":200,"hmin":150}`, 300, 300, true, [2]int64{300, 300}},
		{"exactly wmin x hmin", `{"type":3,"wmin":300,"hmin":300}`, 300, 300, true, [2]int64{300, 300}},
		{"under wmin", `{"type":3,"wmin":492,"hmin":328}`, 300, 300, false, [2]int64{}},
		{"under hmin", `{"type":3,"wmin":100,"hmin":301}`, 300, 300, false, [2]int64{}},
		{"min, size unknown", `{"type":3,"wmin":100,"hmin":100}`, 0, 0, false, [2]int64{}},
		// by w x h and aspect ratio
		{"same size", `{"type":3,"w":1200,"h":627}`, 1200, 627, true, [2]int64{1200, 627}},
		{"larger, same aspect", `{"type":3,"w":600,"h":314}`, 1200, 627, true, [2]int64{1200, 627}},
		{"aspect within 5%", `{"type":3,"w":180,"h":120}`, 300, 210, true, [2]int64{300, 210}}, // 1.43 vs 1.5
		{"aspect off by over 5%", `{"type":3,"w":180,"h":120}`, 300, 300, false, [2]int64{}},   // 1.0 vs 1.5
		{"smaller than w x h", `{"type":3,"w":1200,"h":627}`, 600, 314, false, [2]int64{}},     // same aspect, too small
		{"min or aspect: min wins", `{"type":3,"w":180,"h":120,"wmin":100,"hmin":100}`, 300, 300, true, [2]int64{300, 300}},
		// icons
		{"icon at its size", `{"type":1,"w":80,"h":80}`, 80, 80, true, [2]int64{80, 80}},
		{"icon at 2x", `{"type":1,"w":80,"h":80}`, 160, 160, true, [2]int64{160, 160}},
		{"icon: the main image is too big", `{"type":1,"w":80,"h":80}`, 1200, 1200, false, [2]int64{}},
		{"icon by min: too big", `{"type":1,"wmin":50,"hmin":50}`, 300, 300, false, [2]int64{}},
		{"main: the same big image fits", `{"type":3,"w":80,"h":80}`, 1200, 1200, true, [2]int64{1200, 1200}},
		{"logo: never", `{"type":2}`, 300, 300, false, [2]int64{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := `{"assets":[{"id":1,"required":1,"img":` + tc.img + `}]}`
			imgs, err := renderImages(t, req, imgProduct(tc.w, tc.h), nil)
			if !tc.fits {
				if !errors.Is(err, ErrUnfillable) {
					t.Fatalf("required image that does not fit: %v %v, want ErrUnfillable", imgs, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := imgs[1]
			if got.URL != src || [2]int64{got.W, got.H} != tc.wantWH {
				t.Fatalf("img %+v, want %s at %v", got, src, tc.wantWH)
			}
		})
	}
}

// TestNativeImageOptionalAndRequired: an optional image that cannot be
// filled is left out, a required one drops the ad.
func TestNativeImageOptionalAndRequired(t *testing.T) {
	p := imgProduct(300, 300)
	imgs, err := renderImages(t, `{"assets":[{"id":1,"required":1,"title":{"len":10}},{"id":2,"img":{"type":1,"w":80,"h":80}},{"id":3,"img":{"type":3,"w":180,"h":120}},{"id":4,"img":{"type":3,"wmin":100,"hmin":100}}]}`, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := imgs[2]; ok {
		t.Error("optional icon filled with the 300x300 product image")
	}
	if _, ok := imgs[3]; ok {
		t.Error("optional 180x120 image filled with a square one")
	}
	if imgs[4].W != 300 {
		t.Errorf("optional fitting image: %+v", imgs[4])
	}
	_, err = renderImages(t, `{"assets":[{"id":1,"required":1,"title":{"len":10}},{"id":2,"required":1,"img":{"type":1,"w":80,"h":80}}]}`, p, nil)
	if !errors.Is(err, ErrUnfillable) {
		t.Fatalf("required icon that cannot be filled: %v, want ErrUnfillable", err)
	}
}

func TestNativeImageResize(t *testing.T) {
	rz := mustResize(t, "https://rs.example/r?w={w}&h={h}&u={url}")
	const enc = "https%3A%2F%2Fimg.example.com%2F1.jpg%3Fv%3D2"
	p := imgProduct(300, 300)
	imgs, err := renderImages(t, `{"assets":[
		{"id":1,"required":1,"img":{"type":1,"w":80,"h":80}},
		{"id":2,"required":1,"img":{"type":3,"w":1200,"h":627}},
		{"id":3,"required":1,"img":{"type":3,"wmin":492,"hmin":328}},
		{"id":4,"required":1,"img":{"type":3,"wmin":600}},
		{"id":5,"required":1,"img":{"type":3,"wmin":100,"hmin":100}},
		{"id":6,"img":{"type":2,"w":100,"h":100}}]}`, p, rz)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int64]imgOut{
		1: {"https://rs.example/r?w=80&h=80&u=" + enc, 80, 80},       // icon at its size
		2: {"https://rs.example/r?w=1200&h=627&u=" + enc, 1200, 627}, // a size the catalog lacks
		3: {"https://rs.example/r?w=492&h=328&u=" + enc, 492, 328},   // by min
		4: {"https://rs.example/r?w=600&h=600&u=" + enc, 600, 600},   // one side: the other by aspect
		5: {p.ImageUrl, 300, 300},                                    // fits: served as it is
	}
	if len(imgs) != len(want) {
		t.Errorf("%d images, want %d (no logo): %+v", len(imgs), len(want), imgs)
	}
	for id, w := range want {
		if imgs[id] != w {
			t.Errorf("asset %d: %+v, want %+v", id, imgs[id], w)
		}
	}
	// An unknown product image size with only one side asked: nothing to
	// derive the other from.
	if _, err := renderImages(t, `{"assets":[{"id":1,"required":1,"img":{"type":3,"wmin":600}}]}`, imgProduct(0, 0), rz); !errors.Is(err, ErrUnfillable) {
		t.Errorf("one side, unknown size: %v, want ErrUnfillable", err)
	}
}

func TestParseResizeURL(t *testing.T) {
	for _, s := range []string{
		"https://img.example/resize?w={w}&h={h}&u={url}",
		"http://img.example/{w}x{h}/{url}",
		"https://img.example/r/{url}?size={w}x{h}&w2={w}",
	} {
		if _, err := ParseResizeURL(s); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
	for _, s := range []string{
		"", "img.example/{w}/{h}/{url}", "ftp://img.example/{w}/{h}/{url}", "{url}?w={w}&h={h}",
		"https://img.example/{w}/{url}", "https://img.example/{w}/{h}", "https://img.example/{w}/{h}/{url}/{url}",
		"https://img.example/{W}/{h}/{url}", "https://img.example/{w}/{h}/{url}}", "https://img.example/{w}/{h}/{url}{",
		"https://img.example/{w}/{h}/\"{url}", "https://img.example/{w} {h}/{url}", "https://img.example/{w}/{h}/<{url}>",
		"https://img.exämple/{w}/{h}/{url}",
	} {
		if _, err := ParseResizeURL(s); !errors.Is(err, ErrResizeURL) {
			t.Errorf("%q: %v, want ErrResizeURL", s, err)
		}
	}
	r := mustResize(t, "https://rs.example/{w}x{h}?u={url}&q=1")
	if got := string(r.Append(nil, 80, 60, "https://a.example/x y.jpg?a=1&b=é")); got != "https://rs.example/80x60?u=https%3A%2F%2Fa.example%2Fx%20y.jpg%3Fa%3D1%26b%3D%C3%A9&q=1" {
		t.Errorf("Append: %s", got)
	}
	if got := string(r.appendJSON(nil, 80, 60, "https://a.example/1.jpg")); got != `"https://rs.example/80x60?u=https%3A%2F%2Fa.example%2F1.jpg\u0026q=1"` {
		t.Errorf("appendJSON: %s", got)
	}
	var s string
	if err := json.Unmarshal(r.appendJSON(nil, 1, 2, "x"), &s); err != nil || !strings.HasPrefix(s, "https://rs.example/1x2?u=x&q=1") {
		t.Errorf("appendJSON is not the URL as JSON: %q %v", s, err)
	}
}
