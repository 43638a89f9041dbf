package creative

import (
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"
	"unsafe"

	gojson "github.com/goccy/go-json"
	"github.com/prebid/openrtb/v20/native1"
	nreq "github.com/prebid/openrtb/v20/native1/request"

	"github.com/rtbd/rtbd/catalog/catalogpb"
	"github.com/rtbd/rtbd/rtb"
)

// Errors of ParseNative and AppendNative.
var (
	// ErrNativeRequest: imp.native.request is not a Native request we can
	// read (not JSON, too deep or too large, no assets, wrong types).
	ErrNativeRequest = errors.New("creative: invalid native request")
	// ErrUnfillable: the native request requires an asset rtbd cannot
	// provide (video, logo, rating...), or an image the product's does not
	// fit (and no resize service serves), or there is no product.
	ErrUnfillable = errors.New("creative: required native asset cannot be filled")
	// ErrNoDSALabel: Native.DSALabel is set and the request has no
	// sponsored data asset that holds it.
	ErrNoDSALabel = errors.New("creative: no sponsored data asset holds the DSA notice")
)

// Native request bounds.
const (
	maxNativeBytes  = 32 << 10
	maxNativeDepth  = 16
	maxNativeAssets = 64
)

// NativeRequest is a parsed imp.native.request. The zero value is empty;
// reuse one per goroutine (ParseNative resets it).
type NativeRequest struct {
	// Wrapped: the request was {"native":{...}} (Native 1.0/1.1 style); the
	// response is then wrapped the same way.
	Wrapped bool
	// Request is the Native request itself.
	Request nreq.Request
}

type nativeEnvelope struct {
	Native *nreq.Request `json:"native"`
	nreq.Request
}

// ParseNative parses s, the imp.native.request string, into nr. Errors wrap
// ErrNativeRequest; it never panics.
func ParseNative(s string, nr *NativeRequest) (err error) {
	*nr = NativeRequest{}
	if len(s) > maxNativeBytes {
		return fmt.Errorf("%w: larger than %d bytes", ErrNativeRequest, maxNativeBytes)
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("%w: invalid UTF-8", ErrNativeRequest)
	}
	if d := jsonDepth(s); d < 0 || d > maxNativeDepth {
		return fmt.Errorf("%w: not a JSON object or nested too deep", ErrNativeRequest)
	}
	defer func() {
		if r := recover(); r != nil {
			*nr = NativeRequest{}
			err = fmt.Errorf("%w: decoder panic", ErrNativeRequest)
		}
	}()
	var env nativeEnvelope
	if err := gojson.UnmarshalNoEscape([]byte(s), &env); err != nil {
		return fmt.Errorf("%w: %v", ErrNativeRequest, err)
	}
	if env.Native != nil {
		nr.Wrapped, nr.Request = true, *env.Native
	} else {
		nr.Request = env.Request
	}
	if len(nr.Request.Assets) == 0 {
		*nr = NativeRequest{}
		return fmt.Errorf("%w: no assets", ErrNativeRequest)
	}
	if len(nr.Request.Assets) > maxNativeAssets {
		*nr = NativeRequest{}
		return fmt.Errorf("%w: more than %d assets", ErrNativeRequest, maxNativeAssets)
	}
	return nil
}

// jsonDepth returns the maximum nesting of a JSON text that starts with an
// object, or -1 if it does not start with '{' or its brackets do not
// balance. Strings are skipped; validity is left to the decoder.
func jsonDepth(s string) int {
	i := 0
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	if i == len(s) || s[i] != '{' {
		return -1
	}
	depth, maxDepth, inStr, esc := 0, 0, false, false
	for ; i < len(s); i++ {
		c := s[i]
		if inStr {
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
		case '{', '[':
			depth++
			maxDepth = max(maxDepth, depth)
		case '}', ']':
			depth--
			if depth < 0 {
				return -1
			}
		}
	}
	if depth != 0 || inStr {
		return -1
	}
	return maxDepth
}

// Native is what AppendNative renders.
type Native struct {
	// Request is the parsed native request of the imp.
	Request *NativeRequest
	// Products: the first non-nil one is the ad (Native shows one item).
	Products []*catalogpb.Product
	// Advertiser fills the "sponsored by" data asset.
	Advertiser string
	// DSALabel, when set, fills the sponsored data asset instead of
	// Advertiser: the EU DSA notice (AppendDSALabel) the ad renders
	// itself. AppendNative fails (ErrNoDSALabel) when the request has no
	// sponsored data asset that holds it whole (CanShowLabel).
	DSALabel string
	// CTA fills the call-to-action data asset; "" = "Shop now".
	CTA string
	// Links gives the click URL of the product (the native link).
	Links Linker
	// Resize, when set, serves image sizes the catalog lacks (see
	// appendImage); nil: the product images as they are.
	Resize *ResizeURL
	// ImpURL, when set, is the ad's impression tracker (rtbd's /imp URL,
	// URL-safe): a Native 1.2 event tracker (event 1, method 1: an image
	// pixel) when the request lists eventtrackers, else a Native 1.1
	// imptrackers entry.
	ImpURL string
}

// CanShowLabel reports whether the request has a sponsored data asset
// whose len (in characters; 0 or absent: any) holds label whole.
func (nr *NativeRequest) CanShowLabel(label string) bool {
	for i := range nr.Request.Assets {
		a := &nr.Request.Assets[i]
		if a.Data != nil && a.Data.Type == native1.DataAssetTypeSponsored &&
			(a.Data.Len <= 0 || int64(utf8.RuneCountInString(label)) <= a.Data.Len) {
			return true
		}
	}
	return false
}

// EventTrackers reports whether the native request lists eventtrackers
// (Native 1.2): the response's impression tracker is then an event
// tracker, else an imptrackers entry.
func (nr *NativeRequest) EventTrackers() bool { return len(nr.Request.EventTrackers) > 0 }

// AppendNative appends the Native 1.2 response JSON for n to dst. On error
// (ErrUnfillable) dst is returned unchanged.
func AppendNative(dst []byte, n *Native) ([]byte, error) {
	var p *catalogpb.Product
	for _, q := range n.Products {
		if q != nil {
			p = q
			break
		}
	}
	if p == nil || n.Request == nil {
		return dst, ErrUnfillable
	}
	if n.DSALabel != "" && !n.Request.CanShowLabel(n.DSALabel) {
		return dst, ErrNoDSALabel
	}
	orig := len(dst)
	if n.Request.Wrapped {
		dst = append(dst, `{"native":`...)
	}
	dst = append(dst, `{"ver":"1.2","assets":[`...)
	first := true
	for i := range n.Request.Request.Assets {
		a := &n.Request.Request.Assets[i]
		mark := len(dst)
		if !first {
			dst = append(dst, ',')
		}
		var ok bool
		dst, ok = appendAsset(dst, a, p, n)
		if !ok {
			dst = dst[:mark]
			if a.Required == 1 {
				return dst[:orig], ErrUnfillable
			}
			continue
		}
		first = false
	}
	dst = append(dst, `],"link":{"url":`...)
	start := len(dst)
	if n.Links != nil {
		dst = n.Links.AppendClickURL(dst, p)
		u := dst[start:]
		dst = appendJSONBytes(dst[:start], u) // copies u before overwriting it
	} else {
		dst = rtb.AppendStringHTML(dst, p.LandingUrl)
	}
	dst = append(dst, '}')
	if n.ImpURL != "" {
		if n.Request.EventTrackers() {
			dst = append(dst, `,"eventtrackers":[{"event":1,"method":1,"url":`...)
			dst = rtb.AppendStringHTML(dst, n.ImpURL)
			dst = append(dst, `}]`...)
		} else {
			dst = append(dst, `,"imptrackers":[`...)
			dst = rtb.AppendStringHTML(dst, n.ImpURL)
			dst = append(dst, ']')
		}
	}
	dst = append(dst, '}')
	if n.Request.Wrapped {
		dst = append(dst, '}')
	}
	return dst, nil
}

// appendAsset appends one response asset; false if it cannot be filled.
func appendAsset(dst []byte, a *nreq.Asset, p *catalogpb.Product, n *Native) ([]byte, bool) {
	head := func(dst []byte) []byte {
		dst = append(dst, `{"id":`...)
		dst = strconv.AppendInt(dst, a.ID, 10)
		if a.Required == 1 {
			dst = append(dst, `,"required":1`...)
		}
		return dst
	}
	switch {
	case a.Title != nil:
		if p.Title == "" {
			return dst, false
		}
		dst = head(dst)
		dst = append(dst, `,"title":{"text":`...)
		dst = rtb.AppendStringHTML(dst, truncateRunes(p.Title, a.Title.Len))
		return append(dst, `}}`...), true
	case a.Img != nil:
		return appendImage(dst, a, p, n, head)
	case a.Data != nil:
		var scratch [64]byte
		var v string
		var vb []byte
		switch a.Data.Type {
		case native1.DataAssetTypeSponsored:
			v = n.Advertiser
			if n.DSALabel != "" {
				v = n.DSALabel
			}
			if v == "" {
				v = p.Brand
			}
		case native1.DataAssetTypeDesc, native1.DataAssetTypeDesc2:
			v = p.Description
			if v == "" {
				v = p.Title
			}
		case native1.DataAssetTypePrice:
			vb = AppendPrice(scratch[:0], p.PriceMicros, p.Currency)
		case native1.DataAssetTypeSalePrice:
			if p.SalePriceMicros > 0 && p.SalePriceMicros < p.PriceMicros {
				vb = AppendPrice(scratch[:0], p.SalePriceMicros, p.Currency)
			} else {
				vb = AppendPrice(scratch[:0], p.PriceMicros, p.Currency)
			}
		case native1.DataAssetTypeDispayURL:
			v = hostOf(p.LandingUrl)
		case native1.DataAssetTypeCTAText:
			v = n.CTA
			if v == "" {
				v = "Shop now"
			}
		default:
			return dst, false // rating, likes, downloads, phone, address...
		}
		if v == "" && len(vb) == 0 {
			return dst, false
		}
		dst = head(dst)
		dst = append(dst, `,"data":{"value":`...)
		if vb != nil {
			dst = appendJSONBytes(dst, vb)
		} else {
			dst = rtb.AppendStringHTML(dst, truncateRunes(v, a.Data.Len))
		}
		return append(dst, `}}`...), true
	}
	return dst, false // video assets and unknown kinds
}

// hostOf returns the host of an http(s) URL, "" if it is not one.
func hostOf(u string) string {
	if !IsHTTPURL(u) {
		return ""
	}
	i := 7
	if u[4] == 's' || u[4] == 'S' {
		i = 8
	}
	rest := u[i:]
	for j := 0; j < len(rest); j++ {
		switch rest[j] {
		case '/', '?', '#':
			return rest[:j]
		}
	}
	return rest
}

// appendJSONBytes is rtb.AppendStringHTML for a byte slice, which may alias dst's
// backing array (it is copied first: on the stack up to 512 bytes).
func appendJSONBytes(dst, b []byte) []byte {
	var tmp [512]byte
	if len(b) <= len(tmp) {
		n := copy(tmp[:], b)
		return rtb.AppendStringHTML(dst, unsafeString(tmp[:n]))
	}
	return rtb.AppendStringHTML(dst, string(b)) // long: allocation accepted
}

func unsafeString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}
