package creative

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/rtbd/rtbd/catalog/catalogpb"
)

// TestDSALabel: a banner and a native ad show the DSA notice in their
// advertiser label, escaped; a native request without a sponsored data
// asset holding it whole cannot show it.
func TestDSALabel(t *testing.T) {
	label := string(AppendDSALabel(nil, `Shoes <"Inc">`, "Agency & Co"))
	if label != `On behalf of Shoes <"Inc">, paid by Agency & Co` {
		t.Fatalf("label %q", label)
	}
	doc := AppendBanner(nil, &Banner{W: 300, H: 250, Products: products(3), Advertiser: "Acme", DSALabel: label})
	if !strings.Contains(string(doc), `<span class=by>Ad &#183; On behalf of Shoes &lt;&#34;Inc&#34;&gt;, paid by Agency &amp; Co</span>`) {
		t.Errorf("banner marker without the DSA notice:\n%s", doc)
	}
	if strings.Contains(string(doc), "Acme") {
		t.Error("banner shows the advertiser beside the DSA notice")
	}

	for _, c := range []struct {
		req  string
		want error
	}{
		{`{"assets":[{"id":1,"required":1,"data":{"type":1}}]}`, nil},
		{`{"assets":[{"id":1,"data":{"type":1,"len":60}}]}`, nil},
		{`{"assets":[{"id":1,"data":{"type":1,"len":25}}]}`, ErrNoDSALabel},
		{`{"assets":[{"id":1,"title":{"len":90}}]}`, ErrNoDSALabel},
	} {
		var nr NativeRequest
		if err := ParseNative(c.req, &nr); err != nil {
			t.Fatal(err)
		}
		if got := nr.CanShowLabel(label); got != (c.want == nil) {
			t.Errorf("%s: CanShowLabel %v", c.req, got)
		}
		out, err := AppendNative([]byte("x"), &Native{Request: &nr, Products: []*catalogpb.Product{evil()}, Advertiser: "Acme", DSALabel: label})
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.req, err, c.want)
			continue
		}
		if err != nil {
			if string(out) != "x" {
				t.Errorf("%s: output %q on error", c.req, out)
			}
			continue
		}
		var resp nativeResp
		if err := json.Unmarshal(out[1:], &resp); err != nil {
			t.Fatalf("%s", out)
		}
		if len(resp.Assets) != 1 || resp.Assets[0].Data == nil || resp.Assets[0].Data.Value != label {
			t.Errorf("%s: assets %s, want the sponsored asset to be the notice", c.req, out)
		}
	}
}
