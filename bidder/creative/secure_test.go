package creative

import (
	"strings"
	"testing"

	"github.com/rtbd/rtbd/catalog/catalogpb"
)

func TestIsHTTPSURL(t *testing.T) {
	for _, tc := range []struct {
		u            string
		https, plain bool
	}{
		{"https://img.example.com/a.jpg", true, false},
		{"HTTPS://img.example.com/a.jpg", true, false},
		{"http://img.example.com/a.jpg", false, true},
		{"HTTP://img.example.com/a.jpg", false, true},
		{"//img.example.com/a.jpg", false, false},
		{"https://", false, false},
		{"http:// x", false, false},
		{"", false, false},
	} {
		if got := IsHTTPSURL(tc.u); got != tc.https {
			t.Errorf("IsHTTPSURL(%q) = %v", tc.u, got)
		}
		if got := PlainHTTP(tc.u); got != tc.plain {
			t.Errorf("PlainHTTP(%q) = %v", tc.u, got)
		}
	}
}

// TestVASTSecure: on a secure imp an http landing page is reached through
// the click URL and an http image is left empty; https ones stay.
func TestVASTSecure(t *testing.T) {
	tmpl := `<VAST><Companion><StaticResource>{{IMAGE_URL}}</StaticResource><CompanionClickThrough>{{LANDING_URL}}</CompanionClickThrough></Companion></VAST>`
	for _, tc := range []struct {
		name         string
		land, img    string
		secure       bool
		wantL, wantI string
	}{
		{"plain imp, http", "http://shop.example.com/7", "http://img.example.com/7.jpg", false, "http://shop.example.com/7", "http://img.example.com/7.jpg"},
		{"secure, http", "http://shop.example.com/7", "http://img.example.com/7.jpg", true, "https://bid.example/click?t=TOKEN-7", ""},
		{"secure, https", "https://shop.example.com/7", "https://img.example.com/7.jpg", true, "https://shop.example.com/7", "https://img.example.com/7.jpg"},
	} {
		p := &catalogpb.Product{ProductId: 7, LandingUrl: tc.land, ImageUrl: tc.img}
		out := string(AppendVAST(nil, &VAST{Template: tmpl, Products: []*catalogpb.Product{p}, Links: testLinks{}, Secure: tc.secure}))
		if !strings.Contains(out, "<CompanionClickThrough>"+tc.wantL+"</") || !strings.Contains(out, "<StaticResource>"+tc.wantI+"</") {
			t.Errorf("%s: %s", tc.name, out)
		}
	}
}
