package campaign

import (
	"encoding/xml"
	"errors"
	"io"
	"strings"
)

// PlainHTTPInVAST reports whether the VAST template t would make a player
// load or call anything over plain http: an http:// URL (scheme in any
// case, after XML entity decoding) in element text, CDATA or an attribute
// value. XML namespace declarations (xmlns, xmlns:*) and schema locations
// (xsi:schemaLocation, xsi:noNamespaceSchemaLocation) are names, never
// fetched, and do not count; neither do comments. A template that is not
// well-formed XML counts when "http://" appears anywhere in it. Placeholders
// ({{IMAGE_URL}} ...) are filled per bid, https on secure imps.
//
// It runs when campaigns load, not per request.
func PlainHTTPInVAST(t string) bool {
	const scheme = "http://"
	d := xml.NewDecoder(strings.NewReader(t))
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return false
		}
		if err != nil {
			return containsFold(t, scheme) // not XML we can read: judge the raw text
		}
		switch tk := tok.(type) {
		case xml.CharData:
			if containsFold(string(tk), scheme) {
				return true
			}
		case xml.StartElement:
			for _, a := range tk.Attr {
				if a.Name.Space == "xmlns" || a.Name.Local == "xmlns" ||
					a.Name.Local == "schemaLocation" || a.Name.Local == "noNamespaceSchemaLocation" {
					continue
				}
				if containsFold(a.Value, scheme) {
					return true
				}
			}
		}
	}
}

// containsFold reports whether s contains sub (ASCII lower case) in any
// case.
func containsFold(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}
