package campaign

import (
	"strings"
	"testing"
)

// TestPlainHTTPInVAST: an http URL anything would fetch or call makes a
// template ineligible for secure imps; XML names and comments do not.
func TestPlainHTTPInVAST(t *testing.T) {
	for _, tc := range []struct {
		name, vast string
		plain      bool
	}{
		{"https only", `<VAST version="4.0"><Ad><InLine><MediaFiles><MediaFile>https://cdn.example.com/v.mp4</MediaFile></MediaFiles></InLine></Ad></VAST>`, false},
		{"placeholders", `<VAST version="4.0"><Ad><InLine><ClickThrough>{{CLICK_URL}}</ClickThrough><StaticResource>{{IMAGE_URL}}</StaticResource></InLine></Ad></VAST>`, false},
		{"namespaces and schema", `<VAST version="4.0" xmlns="http://www.iab.com/VAST" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:schemaLocation="http://www.iab.com/VAST vast4.xsd"><Ad/></VAST>`, false},
		{"comment", `<VAST version="4.0"><!-- was http://old.example.com/v.mp4 --><Ad/></VAST>`, false},
		{"http MediaFile", `<VAST version="4.0"><Ad><InLine><MediaFiles><MediaFile>http://cdn.example.com/v.mp4</MediaFile></MediaFiles></InLine></Ad></VAST>`, true},
		{"http in CDATA", `<VAST version="4.0"><Ad><InLine><Impression><![CDATA[HTTP://t.example.com/imp]]></Impression></InLine></Ad></VAST>`, true},
		{"http tracking attribute", `<VAST version="4.0"><Ad><InLine><Icon program="x"><IconClicks><IconClickThrough>https://x.example.com</IconClickThrough></IconClicks><StaticResource creativeType="image/png"/></Icon><Tracking event="start" url="http://t.example.com/s"/></InLine></Ad></VAST>`, true},
		{"entity-encoded", `<VAST version="4.0"><Ad><InLine><MediaFile>http&#58;//cdn.example.com/v.mp4</MediaFile></InLine></Ad></VAST>`, true},
		{"not XML, http in a namespace", `<VAST version="4.0" xmlns="http://www.iab.com/VAST"><Ad><MediaFile>https://x.example.com/a?b=1&c=2</MediaFile></Ad></VAST>`, true},
		{"not XML, https only", `<VAST version="4.0"><Ad><MediaFile>https://x.example.com/a?b=1&c=2</MediaFile></Ad></VAST>`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := PlainHTTPInVAST(tc.vast); got != tc.plain {
				t.Errorf("PlainHTTPInVAST = %v, want %v", got, tc.plain)
			}
		})
	}
}

// TestVASTPlainHTTPAtLoad: Parse sets Creative.VASTPlainHTTP.
func TestVASTPlainHTTPAtLoad(t *testing.T) {
	yaml := `campaigns:
  - {id: a, adomain: [a.example], cat: [IAB22], product_group_id: 1, status: active, bid_cpm: 1,
     creative: {template: light, vast: '<VAST version="4.0"><MediaFile>http://cdn.example.com/v.mp4</MediaFile></VAST>'}}
  - {id: b, adomain: [a.example], cat: [IAB22], product_group_id: 1, status: active, bid_cpm: 1,
     creative: {template: light, vast: '<VAST version="4.0"><MediaFile>https://cdn.example.com/v.mp4</MediaFile></VAST>'}}
`
	s, err := Parse([]byte(yaml), "vast.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]bool{"a": true, "b": false} {
		c, ok := s.Get(id)
		if !ok || c.Creative.VASTPlainHTTP != want || !strings.Contains(c.Creative.VAST, "MediaFile") {
			t.Errorf("campaign %s: VASTPlainHTTP %v, want %v", id, ok && c.Creative.VASTPlainHTTP, want)
		}
	}
}
