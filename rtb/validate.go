package rtb

import (
	"fmt"
	"math"
	"strings"

	"github.com/prebid/openrtb/v20/openrtb2"

	"github.com/rtbd/rtbd/rtb/money"
)

// Validate is Decoder{}.Validate: validation with the default Limits.
func Validate(req *openrtb2.BidRequest) error {
	lim := defaultLimits()
	if err := validate(req, &lim); err != nil {
		return err
	}
	return nil
}

// Validate checks the rules of OpenRTB 2.6 that rtbd relies on and returns a
// *RequestError with NBR NoBidInvalidRequest for the first one broken:
//
//   - id is present, at most MaxIDBytes, without control characters or
//     U+FFFD (what a lone \u surrogate decodes to; the id is then cleared,
//     not echoed mangled);
//   - imp has 1 to MaxImps entries; each has an id (same rules as the request
//     id, unique within the request) and at least one of banner, video,
//     audio, native;
//   - imp.bidfloor is a finite number >= 0; imp.bidfloorcur, when present, is
//     an ISO 4217 code in any case (money.Code); banner w/h and format w/h are >= 0;
//   - at most one of site, app, dooh;
//   - tmax >= 0; at is 0 (absent), 1, 2 or > 500.
//
// It does not allocate unless the request is invalid or has more than 32
// imps. It does not modify req.
func (d *Decoder) Validate(req *openrtb2.BidRequest) error {
	lim := d.Limits.withDefaults()
	if err := validate(req, &lim); err != nil {
		return err
	}
	return nil
}

func validate(req *openrtb2.BidRequest, lim *Limits) *RequestError {
	if msg := checkID(req.ID, lim.MaxIDBytes); msg != "" {
		if msg == msgReplacement {
			req.ID = "" // the no-bid echoes no mangled id
		}
		return invalid("id", msg)
	}
	if len(req.Imp) == 0 {
		return invalid("imp", "no imp")
	}
	if len(req.Imp) > lim.MaxImps {
		return invalid("imp", "too many imps")
	}
	n := 0
	if req.Site != nil {
		n++
	}
	if req.App != nil {
		n++
	}
	if req.DOOH != nil {
		n++
	}
	if n > 1 {
		return invalid("site", "more than one of site, app, dooh")
	}
	if req.TMax < 0 {
		return invalid("tmax", "negative")
	}
	if req.AT != 0 && req.AT != 1 && req.AT != 2 && req.AT <= 500 {
		return invalid("at", "not 1, 2 or > 500")
	}
	for i := range req.Imp {
		imp := &req.Imp[i]
		if msg := checkID(imp.ID, lim.MaxIDBytes); msg != "" {
			return invalid(fmt.Sprintf("imp[%d].id", i), msg)
		}
		if imp.Banner == nil && imp.Video == nil && imp.Audio == nil && imp.Native == nil {
			return invalid(fmt.Sprintf("imp[%d]", i), "none of banner, video, audio, native")
		}
		if imp.BidFloor < 0 || math.IsNaN(imp.BidFloor) || math.IsInf(imp.BidFloor, 0) {
			return invalid(fmt.Sprintf("imp[%d].bidfloor", i), "negative or not finite")
		}
		if _, ok := money.Code(imp.BidFloorCur); imp.BidFloorCur != "" && !ok {
			return invalid(fmt.Sprintf("imp[%d].bidfloorcur", i), "not an ISO-4217 code")
		}
		if b := imp.Banner; b != nil {
			if (b.W != nil && *b.W < 0) || (b.H != nil && *b.H < 0) {
				return invalid(fmt.Sprintf("imp[%d].banner", i), "negative w or h")
			}
			for j := range b.Format {
				if b.Format[j].W < 0 || b.Format[j].H < 0 {
					return invalid(fmt.Sprintf("imp[%d].banner.format[%d]", i, j), "negative w or h")
				}
			}
		}
	}
	if dup := duplicateImpID(req.Imp); dup >= 0 {
		return invalid(fmt.Sprintf("imp[%d].id", dup), "duplicate imp id")
	}
	return nil
}

// checkID returns "" when id is a usable OpenRTB id: not empty, at most max
// bytes, no ASCII control characters (ids end up in URLs, logs and keys),
// no U+FFFD.
func checkID(id string, max int) string {
	if id == "" {
		return "missing"
	}
	if len(id) > max {
		return "too long"
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c < 0x20 || c == 0x7f {
			return "control character"
		}
	}
	if strings.Contains(id, replacementChar) {
		return msgReplacement
	}
	return ""
}

// replacementChar is U+FFFD, what decoding makes of a lone surrogate
// ("\ud800"): an id holding it cannot be echoed as the exchange sent it.
const replacementChar = "\uFFFD"

// msgReplacement is checkID's answer for such an id; the request's id is
// then cleared, so that the no-bid does not echo it mangled.
const msgReplacement = "U+FFFD (a lone \\u surrogate or a replacement character): it cannot be echoed as sent"

// duplicateImpID returns the index of the first imp whose id repeats an
// earlier one, or -1. Quadratic up to 32 imps (no allocation), a map above.
func duplicateImpID(imps []openrtb2.Imp) int {
	if len(imps) <= 32 {
		for i := 1; i < len(imps); i++ {
			for j := 0; j < i; j++ {
				if imps[i].ID == imps[j].ID {
					return i
				}
			}
		}
		return -1
	}
	seen := make(map[string]struct{}, len(imps))
	for i := range imps {
		if _, ok := seen[imps[i].ID]; ok {
			return i
		}
		seen[imps[i].ID] = struct{}{}
	}
	return -1
}
