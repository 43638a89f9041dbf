package dsa

import (
	"bufio"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/rtbd/rtbd/rtb"
)

// pbsAccepts is Prebid Server's check of a bid's ext.dsa (dsa/validate.go):
// required and missing, behalf or paid over 100 bytes, both sides
// refusing to render, or both rendering.
func pbsAccepts(req *rtb.DSA, ext []byte) bool {
	var bid struct {
		DSA *struct {
			Behalf, Paid string
			AdRender     *int `json:"adrender"`
		} `json:"dsa"`
	}
	if len(ext) > 0 {
		if err := json.Unmarshal(ext, &bid); err != nil {
			return false
		}
	}
	if req.Present && (req.Required == 2 || req.Required == 3) && bid.DSA == nil {
		return false
	}
	if bid.DSA == nil {
		return true
	}
	if len(bid.DSA.Behalf) > 100 || len(bid.DSA.Paid) > 100 {
		return false
	}
	if req.Present && bid.DSA.AdRender != nil {
		if req.PubRender == 0 && *bid.DSA.AdRender != 1 || req.PubRender == 2 && *bid.DSA.AdRender == 1 {
			return false
		}
	}
	return true
}

// TestDecideCases runs testdata/cases.txt: every dsarequired and
// pubrender, a campaign without dsa, with, and with a string over 100
// bytes, on a format that renders the notice and one that cannot. Every
// bid it allows also passes Prebid Server's validation.
func TestDecideCases(t *testing.T) {
	f, err := os.Open("testdata/cases.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || text[0] == '#' {
			continue
		}
		in, want, ok := strings.Cut(text, "=>")
		f := strings.Fields(in)
		if !ok || len(f) != 4 {
			t.Fatalf("line %d: %q", line, text)
		}
		req := rtb.DSA{DataToPub: 2}
		if f[0] != "-" {
			req.Present = true
			req.Required, _ = strconv.Atoi(f[0])
			req.PubRender, _ = strconv.Atoi(f[1])
		}
		var s Setting
		switch f[2] {
		case "set":
			s = Setting{Behalf: "Shoes Inc", Paid: "Shoes Agency Ltd"}
		case "long":
			s = Setting{Behalf: strings.Repeat("é", 51), Paid: "Shoes Agency Ltd"} // 51 runes, 102 bytes
		}
		d := Decide(&req, s, f[3] == "banner", "dsp.example", true)
		got := d.Reason.String()
		if d.Reason == OK {
			got = "bid"
			if d.Write {
				got += " dsa adrender=" + strconv.Itoa(d.Ext.AdRender)
			}
			if d.Render {
				got += " render"
			}
		}
		if got != strings.TrimSpace(want) {
			t.Errorf("line %d: %s => %s, want %s", line, strings.TrimSpace(in), got, strings.TrimSpace(want))
		}
		if d.Reason == OK {
			var ext []byte
			if d.Write {
				ext = rtb.AppendBidExtDSA(nil, &d.Ext)
			}
			if !pbsAccepts(&req, ext) {
				t.Errorf("line %d: Prebid Server would drop the bid: %s", line, ext)
			}
			if d.Render != (d.Write && d.Ext.AdRender == 1) {
				t.Errorf("line %d: render %v with adrender %d", line, d.Render, d.Ext.AdRender)
			}
		}
		n++
	}
	if n != 78 {
		t.Errorf("%d cases, want 78", n)
	}
}

// TestTransparency: the transparency entry follows datatopub and the
// bidder's domain; dsaparams says whether the profile chose the products.
func TestTransparency(t *testing.T) {
	s := Setting{Behalf: "Shoes \"Inc\"", Paid: "Agency"}
	for _, c := range []struct {
		dataToPub int
		domain    string
		profiled  bool
		want      string
	}{
		{2, "dsp.example", true, `{"dsa":{"behalf":"Shoes \"Inc\"","paid":"Agency","transparency":[{"domain":"dsp.example","dsaparams":[1]}],"adrender":1}}`},
		{1, "dsp.example", false, `{"dsa":{"behalf":"Shoes \"Inc\"","paid":"Agency","transparency":[{"domain":"dsp.example","dsaparams":[2]}],"adrender":1}}`},
		{0, "dsp.example", true, `{"dsa":{"behalf":"Shoes \"Inc\"","paid":"Agency","adrender":1}}`},
		{2, "", true, `{"dsa":{"behalf":"Shoes \"Inc\"","paid":"Agency","adrender":1}}`},
	} {
		req := rtb.DSA{Present: true, Required: 2, PubRender: 0, DataToPub: c.dataToPub}
		d := Decide(&req, s, true, c.domain, c.profiled)
		if got := string(rtb.AppendBidExtDSA(nil, &d.Ext)); got != c.want {
			t.Errorf("datatopub %d domain %q profiled %v:\n got %s\nwant %s", c.dataToPub, c.domain, c.profiled, got, c.want)
		}
	}
	long := strings.Repeat("d", 101) + ".com"
	if d := Decide(&rtb.DSA{Present: true, Required: 3, PubRender: 2}, s, true, long, true); d.Reason != TooLong {
		t.Errorf("domain over 100 bytes: %v, want too_long", d.Reason)
	}
}
