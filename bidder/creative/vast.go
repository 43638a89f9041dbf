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
