package campaign

import (
	"strconv"
	"strings"

	"github.com/prebid/openrtb/v20/adcom1"
	"github.com/prebid/openrtb/v20/openrtb2"

	"github.com/rtbd/rtbd/configs"
)

// VideoSpec is CreativeSpec.Video: what the VAST template's ad is, so that
// it bids only on video imps that accept it. Every key is optional; a
// template that declares nothing bids on every video imp.
type VideoSpec struct {
	// Mimes are the MIME types of the template's media files
	// (video/mp4); one must be in imp.video.mimes.
	Mimes []string `yaml:"mimes,flow,omitempty"`
	// Protocols are the AdCOM creative subtypes the template is (1-16:
	// 2 VAST 2.0, 3 VAST 3.0, 7 VAST 4.0, ...); one must be in
	// imp.video.protocols (or be imp.video.protocol).
	Protocols []int `yaml:"protocols,flow,omitempty"`
	// Duration is the ad's length in seconds; it must be within
	// imp.video.minduration and maxduration, or one of rqddurs.
	Duration int64 `yaml:"duration,omitempty"`
	// Plcmt are the OpenRTB 2.6 placement types (adcom1 plcmt: 1 instream,
	// 2 accompanying content, 3 interstitial, 4 no content/standalone) the
	// ad suits; imp.video.plcmt, else its legacy placement, must be one.
	Plcmt []int `yaml:"plcmt,flow,omitempty"`
	// Size is the player size the ad is made for, WxH (640x360): the
	// bid's w/h when the imp gives none.
	Size string `yaml:"size,omitempty"`
}

// Video is Creative.Video, what a VAST template declares (VideoSpec,
// checked). The zero value declares nothing.
type Video struct {
	// Mimes, lower case.
	Mimes     []string
	Protocols []adcom1.MediaCreativeSubtype
	// Duration in seconds; 0: not declared.
	Duration int64
	Plcmt    []adcom1.VideoPlcmtSubtype
	// W, H: the declared player size; 0 when not declared.
	W, H int64
}

// Declared reports whether v declares anything.
func (v *Video) Declared() bool {
	return len(v.Mimes)+len(v.Protocols)+len(v.Plcmt) > 0 || v.Duration > 0 || v.W > 0
}

// Reasons VideoMismatch gives (and Match records).
const (
	ReasonVideoMimes     = "creative: none of video.mimes is in the imp's video.mimes"
	ReasonVideoProtocols = "creative: none of video.protocols is in the imp's video.protocols"
	ReasonVideoDuration  = "creative: video.duration is outside the imp's minduration-maxduration (or rqddurs)"
	ReasonVideoPlcmt     = "creative: the imp's video plcmt (or placement) is not in video.plcmt"
)

// VideoFits reports whether the campaign's VAST template may serve the
// video object v: the campaign has a template and VideoMismatch finds no
// mismatch. It allocates nothing.
func (c *Campaign) VideoFits(v *openrtb2.Video) bool {
	return v != nil && c.Creative.VAST != "" && c.VideoMismatch(v) == ""
}

// VideoMismatch returns "" when what the VAST template declares
// (Creative.Video) fits the imp's video object v, else the Reason of the
// first mismatch. A dimension is checked only when both the template and
// the imp state it:
//
//   - mimes: one of the template's in v.mimes (case-insensitive);
//   - protocols: one of the template's in v.protocols or v.protocol;
//   - duration: v.minduration <= duration <= v.maxduration (a bound of 0
//     is no bound), and duration in v.rqddurs when that is given;
//   - plcmt: v.plcmt in the template's plcmt; an imp with only the legacy
//     v.placement maps it: 1 (in-stream) is plcmt 1, 2-4 (in-banner,
//     in-article, in-feed: outstream, with or without content) are plcmt 2
//     or 4, 5 (interstitial, slider, floating) is plcmt 3.
func (c *Campaign) VideoMismatch(v *openrtb2.Video) string {
	d := &c.Creative.Video
	if v == nil {
		return ""
	}
	if len(d.Mimes) > 0 && len(v.MIMEs) > 0 && !anyMime(d.Mimes, v.MIMEs) {
		return ReasonVideoMimes
	}
	if len(d.Protocols) > 0 && (len(v.Protocols) > 0 || v.Protocol != 0) && !anyProtocol(d.Protocols, v) {
		return ReasonVideoProtocols
	}
	if d.Duration > 0 {
		if v.MinDuration > 0 && d.Duration < v.MinDuration || v.MaxDuration > 0 && d.Duration > v.MaxDuration {
			return ReasonVideoDuration
		}
		if len(v.RqdDurs) > 0 && !containsInt64(v.RqdDurs, d.Duration) {
			return ReasonVideoDuration
		}
	}
	if len(d.Plcmt) > 0 && !plcmtFits(d.Plcmt, v) {
		return ReasonVideoPlcmt
	}
	return ""
}

// VideoSize returns the w/h of a video bid on v: v.w/v.h when both are
// given, else the template's declared size (0, 0 when neither).
func (c *Campaign) VideoSize(v *openrtb2.Video) (w, h int64) {
	if v != nil && v.W != nil && v.H != nil && *v.W > 0 && *v.H > 0 {
		return *v.W, *v.H
	}
	return c.Creative.Video.W, c.Creative.Video.H
}

func anyMime(have, want []string) bool {
	for _, w := range want {
		for _, h := range have {
			if strings.EqualFold(strings.TrimSpace(w), h) {
				return true
			}
		}
	}
	return false
}

func anyProtocol(have []adcom1.MediaCreativeSubtype, v *openrtb2.Video) bool {
	for _, h := range have {
		if h == v.Protocol {
			return true
		}
		for _, w := range v.Protocols {
			if h == w {
				return true
			}
		}
	}
	return false
}

func containsInt64(list []int64, x int64) bool {
	for _, v := range list {
		if v == x {
			return true
		}
	}
	return false
}

func plcmtFits(have []adcom1.VideoPlcmtSubtype, v *openrtb2.Video) bool {
	var want [2]adcom1.VideoPlcmtSubtype
	switch {
	case v.Plcmt != 0:
		want[0] = v.Plcmt
	case v.Placement == adcom1.VideoPlacementInStream:
		want[0] = adcom1.VideoPlcmtInstream
	case v.Placement >= adcom1.VideoPlacementInBanner && v.Placement <= adcom1.VideoPlacementInFeed:
		want = [2]adcom1.VideoPlcmtSubtype{adcom1.VideoPlcmtAccompanyingContent, adcom1.VideoPlcmtNoContent}
	case v.Placement == adcom1.VideoPlacementAlwaysVisible:
		want[0] = adcom1.VideoPlcmtInterstitial
	default:
		return true // the imp states no placement (or one unknown to AdCOM 1.0)
	}
	for _, h := range have {
		if h == want[0] || want[1] != 0 && h == want[1] {
			return true
		}
	}
	return false
}

// video checks a VideoSpec (p is the creative.video problems).
func video(p *configs.Problems, vs *VideoSpec, hasVAST bool) Video {
	var v Video
	if !hasVAST {
		p.Addf("", "describes a VAST template: give creative.vast too")
	}
	v.Mimes = list(p, "mimes", vs.Mimes, parseMime, strconv.Quote)
	for i, n := range vs.Protocols {
		if n < 1 || n > 16 {
			p.Addf("protocols["+strconv.Itoa(i)+"]", "must be an AdCOM creative subtype 1-16 (2 VAST 2.0, 3 VAST 3.0, 7 VAST 4.0...), got %d", n)
			continue
		}
		v.Protocols = append(v.Protocols, adcom1.MediaCreativeSubtype(n))
	}
	switch {
	case vs.Duration < 0 || vs.Duration > 3600:
		p.Addf("duration", "must be 1-3600 seconds, got %d", vs.Duration)
	default:
		v.Duration = vs.Duration
	}
	for i, n := range vs.Plcmt {
		if n < 1 || n > 4 {
			p.Addf("plcmt["+strconv.Itoa(i)+"]", "must be an OpenRTB 2.6 plcmt 1-4 (1 instream, 2 accompanying content, 3 interstitial, 4 no content), got %d", n)
			continue
		}
		v.Plcmt = append(v.Plcmt, adcom1.VideoPlcmtSubtype(n))
	}
	if s := strings.TrimSpace(vs.Size); s != "" {
		wh, msg := parseSize(s)
		if msg != "" {
			p.Addf("size", "%s", msg)
		} else {
			v.W, v.H = wh[0], wh[1]
		}
	}
	return v
}

// parseMime checks a MIME type such as video/mp4 and lower-cases it.
func parseMime(s string) (string, string) {
	t, sub, ok := strings.Cut(strings.ToLower(s), "/")
	if !ok || t == "" || sub == "" || len(s) > 100 || !mimeToken(t) || !mimeToken(sub) {
		return "", strconv.Quote(s) + " is not a MIME type (such as video/mp4)"
	}
	return t + "/" + sub, ""
}

func mimeToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.IndexByte("!#$&-^_.+", c) >= 0) {
			return false
		}
	}
	return true
}

// videoSpecOf is the VideoSpec of v; nil when v declares nothing.
func videoSpecOf(v *Video) *VideoSpec {
	if !v.Declared() {
		return nil
	}
	vs := &VideoSpec{Mimes: v.Mimes, Duration: v.Duration}
	for _, n := range v.Protocols {
		vs.Protocols = append(vs.Protocols, int(n))
	}
	for _, n := range v.Plcmt {
		vs.Plcmt = append(vs.Plcmt, int(n))
	}
	if v.W > 0 {
		vs.Size = strconv.FormatInt(v.W, 10) + "x" + strconv.FormatInt(v.H, 10)
	}
	return vs
}
