package creative

import (
	"strings"

	"github.com/rtbd/rtbd/catalog/catalogpb"
)

// VAST is what AppendVAST fills a template with.
type VAST struct {
	// Template is the campaign's VAST document with placeholders.
	Template string
	// Products: the first non-nil one fills the placeholders.
	Products   []*catalogpb.Product
	Advertiser string
	Links      Linker
	// ImpURL, when set, is the ad's impression tracker (rtbd's /imp URL):
	// AppendVAST adds an <Impression> with it, before the template's first
	// <Impression> (beside the template's own), else after its
	// </AdTitle>, </AdSystem> or <InLine>/<Wrapper> start tag, the first
	// found.
	ImpURL string
	// Secure: the ad is for a secure imp. {{LANDING_URL}} is then the
	// Linker's click URL (rtbd's https /click, which redirects to the
	// landing page) unless the landing URL is https itself. The caller
	// passes only products whose image is https (or absent), and a
	// template without http URLs (see campaign.Creative.VASTPlainHTTP).
	Secure bool
}

// AppendVAST appends v.Template with its placeholders replaced, each value
// XML-escaped: {{CLICK_URL}} (the Linker's URL), {{LANDING_URL}},
// {{IMAGE_URL}}, {{TITLE}}, {{PRICE}} (sale price if any), {{ADVERTISER}}.
// Other text, OpenRTB macros such as ${AUCTION_PRICE} included, is copied
// as is. With no product the placeholders become empty. See VAST.Secure
// for secure imps.
func AppendVAST(dst []byte, v *VAST) []byte {
	var p *catalogpb.Product
	for _, q := range v.Products {
		if q != nil {
			p = q
			break
		}
	}
	t := v.Template
	if v.ImpURL != "" {
		if at := impressionAt(t); at >= 0 {
			dst = appendVASTText(dst, t[:at], p, v)
			dst = append(dst, `<Impression><![CDATA[`...)
			dst = appendCDATA(dst, v.ImpURL)
			dst = append(dst, `]]></Impression>`...)
			t = t[at:]
		}
	}
	return appendVASTText(dst, t, p, v)
}

// impressionAt returns where in the template t rtbd's <Impression> goes
// (see VAST.ImpURL), -1 if t has no place for one (not an ad).
func impressionAt(t string) int {
	if i := strings.Index(t, "<Impression"); i >= 0 {
		return i
	}
	for _, end := range [...]string{"</AdTitle>", "</AdSystem>"} {
		if i := strings.Index(t, end); i >= 0 {
			return i + len(end)
		}
	}
	for _, start := range [...]string{"<InLine", "<Wrapper"} {
		if i := strings.Index(t, start); i >= 0 {
			if j := strings.IndexByte(t[i:], '>'); j >= 0 {
				return i + j + 1
			}
		}
	}
	return -1
}

// appendCDATA appends s for a CDATA section: "]]>" is split across two.
func appendCDATA(dst []byte, s string) []byte {
	for {
		i := strings.Index(s, "]]>")
		if i < 0 {
			return append(dst, s...)
		}
		dst = append(dst, s[:i+2]...)
		dst = append(dst, "]]><![CDATA["...)
		s = s[i+2:]
	}
}

// appendVASTText appends template text t with its placeholders replaced.
func appendVASTText(dst []byte, t string, p *catalogpb.Product, v *VAST) []byte {
	for {
		i := strings.Index(t, "{{")
		if i < 0 {
			return append(dst, t...)
		}
		dst = append(dst, t[:i]...)
		t = t[i:]
		end := strings.Index(t, "}}")
		if end < 0 {
			return append(dst, t...)
		}
		name := t[2:end]
		known := true
		switch {
		case name == "ADVERTISER":
			dst = appendXML(dst, v.Advertiser)
		case p == nil:
			known = name == "CLICK_URL" || name == "LANDING_URL" || name == "IMAGE_URL" || name == "TITLE" || name == "PRICE"
		case name == "CLICK_URL", name == "LANDING_URL" && v.Secure && !IsHTTPSURL(p.LandingUrl) && v.Links != nil:
			if v.Links != nil {
				mark := len(dst)
				dst = v.Links.AppendClickURL(dst, p)
				u := string(dst[mark:]) // video path: one allocation accepted
				dst = appendXML(dst[:mark], u)
			} else if IsHTTPURL(p.LandingUrl) {
				dst = appendXML(dst, p.LandingUrl)
			}
		case name == "LANDING_URL":
			if IsHTTPURL(p.LandingUrl) && (!v.Secure || IsHTTPSURL(p.LandingUrl)) {
				dst = appendXML(dst, p.LandingUrl)
			}
		case name == "IMAGE_URL":
			if IsHTTPURL(p.ImageUrl) && (!v.Secure || IsHTTPSURL(p.ImageUrl)) {
				dst = appendXML(dst, p.ImageUrl)
			}
		case name == "TITLE":
			dst = appendXML(dst, p.Title)
		case name == "PRICE":
			var scratch [64]byte
			price := p.PriceMicros
			if p.SalePriceMicros > 0 && p.SalePriceMicros < price {
				price = p.SalePriceMicros
			}
			dst = appendXML(dst, unsafeString(AppendPrice(scratch[:0], price, p.Currency)))
		default:
			known = false
		}
		if !known {
			dst = append(dst, t[:end+2]...)
		}
		t = t[end+2:]
	}
}
