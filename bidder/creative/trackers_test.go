package creative

import (
	"encoding/json"
	"encoding/xml"
	"strings"
	"testing"

	"github.com/rtbd/rtbd/catalog/catalogpb"
	"github.com/rtbd/rtbd/rtb"
)

const testImpURL = "https://bid.example.com/imp?t=TOKEN&p=${AUCTION_PRICE}"

// TestNativeImpressionTracker: a Native 1.2 request listing eventtrackers
// gets an event tracker (event 1, method 1), any other an imptrackers
// entry; the URL survives JSON escaping; no ImpURL, no tracker.
func TestNativeImpressionTracker(t *testing.T) {
	p := products(1)[0]
	assets := `"assets":[{"id":1,"required":1,"title":{"len":90}}]`
	for _, c := range []struct {
		name, req string
		event     bool
	}{
		{"1.1", `{"ver":"1.1",` + assets + `}`, false},
		{"1.1 wrapped", `{"native":{"ver":"1.1",` + assets + `}}`, false},
		{"1.2 with eventtrackers", `{"ver":"1.2",` + assets + `,"eventtrackers":[{"event":1,"methods":[1,2]}]}`, true},
		{"1.2 without", `{"ver":"1.2",` + assets + `}`, false},
	} {
		var nr NativeRequest
		if err := ParseNative(c.req, &nr); err != nil {
			t.Fatal(err)
		}
		for _, imp := range []string{testImpURL, ""} {
			out, err := AppendNative(nil, &Native{Request: &nr, Products: []*catalogpb.Product{p}, Links: testLinks{}, ImpURL: imp})
			if err != nil {
				t.Fatal(err)
			}
			var resp struct {
				ImpTrackers   []string `json:"imptrackers"`
				EventTrackers []struct {
					Event, Method int
					URL           string
				} `json:"eventtrackers"`
				Native *json.RawMessage `json:"native"`
			}
			body := out
			if nr.Wrapped {
				var w struct{ Native json.RawMessage }
				if err := json.Unmarshal(out, &w); err != nil {
					t.Fatal(err)
				}
				body = w.Native
			}
			if err := json.Unmarshal(body, &resp); err != nil {
				t.Fatalf("%s: %v: %s", c.name, err, out)
			}
			switch {
			case imp == "":
				if resp.ImpTrackers != nil || resp.EventTrackers != nil {
					t.Errorf("%s: trackers without an ImpURL: %s", c.name, out)
				}
			case c.event:
				if len(resp.EventTrackers) != 1 || resp.EventTrackers[0].Event != 1 || resp.EventTrackers[0].Method != 1 ||
					resp.EventTrackers[0].URL != imp || resp.ImpTrackers != nil {
					t.Errorf("%s: want one event tracker: %s", c.name, out)
				}
			default:
				if len(resp.ImpTrackers) != 1 || resp.ImpTrackers[0] != imp || resp.EventTrackers != nil {
					t.Errorf("%s: want one imptracker: %s", c.name, out)
				}
			}
		}
	}
}

// TestVASTImpression: rtbd's <Impression> goes before the template's own
// (both kept), else after AdTitle, AdSystem or the InLine/Wrapper start
// tag; the document stays well-formed XML and the URL reads back whole.
func TestVASTImpression(t *testing.T) {
	p := products(1)[0]
	for _, c := range []struct {
		name, tmpl, before string
		impressions        int
	}{
		{"beside the template's", `<VAST version="4.0"><Ad><InLine><AdSystem>x</AdSystem><AdTitle>{{TITLE}}</AdTitle>` +
			`<Impression><![CDATA[https://other.example/i]]></Impression></InLine></Ad></VAST>`, "<Impression><![CDATA[https://other", 2},
		{"after AdTitle", `<VAST version="4.0"><Ad><InLine><AdSystem>x</AdSystem><AdTitle>t</AdTitle><Creatives/></InLine></Ad></VAST>`, "<Creatives/>", 1},
		{"after AdSystem", `<VAST version="3.0"><Ad><Wrapper><AdSystem>x</AdSystem><VASTAdTagURI>u</VASTAdTagURI></Wrapper></Ad></VAST>`, "<VASTAdTagURI>", 1},
		{"after InLine", `<VAST version="3.0"><Ad><InLine><Creatives/></InLine></Ad></VAST>`, "<Creatives/>", 1},
	} {
		out := string(AppendVAST(nil, &VAST{Template: c.tmpl, Products: []*catalogpb.Product{p}, Links: testLinks{}, ImpURL: testImpURL}))
		ours := `<Impression><![CDATA[` + testImpURL + `]]></Impression>`
		if !strings.Contains(out, ours+c.before) {
			t.Errorf("%s: %s not before %q:\n%s", c.name, ours, c.before, out)
		}
		var doc struct {
			Ads []struct {
				InLine, Wrapper *struct {
					Impressions []string `xml:"Impression"`
				}
			} `xml:"Ad"`
		}
		if err := xml.Unmarshal([]byte(out), &doc); err != nil || len(doc.Ads) != 1 {
			t.Fatalf("%s: not well-formed: %v\n%s", c.name, err, out)
		}
		ad := doc.Ads[0].InLine
		if ad == nil {
			ad = doc.Ads[0].Wrapper
		}
		if len(ad.Impressions) != c.impressions || ad.Impressions[0] != testImpURL {
			t.Errorf("%s: impressions %q, want %d, ours first", c.name, ad.Impressions, c.impressions)
		}
	}
	if out := string(AppendVAST(nil, &VAST{Template: "<VAST/>", ImpURL: testImpURL})); out != "<VAST/>" {
		t.Errorf("no ad: %q", out)
	}
	if got := string(appendCDATA(nil, "a]]>b")); got != "a]]]]><![CDATA[>b" {
		t.Errorf("appendCDATA: %q", got)
	}
}

// TestBannerImpressionPixel: the pixel is one 1x1 image with the URL
// attribute-escaped (read back whole), the document JSON-safe; no ImpURL,
// no pixel.
func TestBannerImpressionPixel(t *testing.T) {
	ps := products(4)
	with := AppendBanner(nil, &Banner{W: 300, H: 250, Products: ps, Links: testLinks{}, ImpURL: testImpURL})
	without := AppendBanner(nil, &Banner{W: 300, H: 250, Products: ps, Links: testLinks{}})
	pw, po := parseHTML(t, with), parseHTML(t, without)
	if pw.tags["img"] != po.tags["img"]+1 || len(pw.srcs) == 0 || pw.srcs[len(pw.srcs)-1] != testImpURL {
		t.Fatalf("pixel: imgs %d vs %d, srcs %q", pw.tags["img"], po.tags["img"], pw.srcs)
	}
	if !strings.Contains(string(with), "width=1 height=1") || strings.Contains(string(without), "/imp?") {
		t.Errorf("pixel markup:\n%s", with)
	}
	if !rtb.JSONSafe(string(with)) {
		t.Errorf("not JSON-safe: %s", with)
	}
}
