package campaign

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/prebid/openrtb/v20/adcom1"
	"github.com/prebid/openrtb/v20/openrtb2"
)

const videoYAML = `campaigns:
  - id: v
    adomain: [shop.com]
    product_group_id: 1
    status: active
    bid_cpm: 4
    creative:
      template: light
      vast: <VAST version="4.0"></VAST>
      video:
        mimes: [Video/MP4, video/webm]
        protocols: [7, 8]
        duration: 15
        plcmt: [1, 2]
        size: 640x360
`

func TestParseVideo(t *testing.T) {
	s, err := Parse([]byte(videoYAML), "v.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got := s.All()[0].Creative.Video
	want := Video{Mimes: []string{"video/mp4", "video/webm"},
		Protocols: []adcom1.MediaCreativeSubtype{7, 8}, Duration: 15,
		Plcmt: []adcom1.VideoPlcmtSubtype{1, 2}, W: 640, H: 360}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("video %+v, want %+v", got, want)
	}
	// Marshal and Parse give it back.
	data, err := Marshal(s.All())
	if err != nil {
		t.Fatal(err)
	}
	s2, err := Parse(data, "again")
	if err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	if d := diffCampaigns(s2.All(), s.All()); d != "" {
		t.Fatalf("%s\n%s", d, data)
	}
}

func TestParseVideoInvalid(t *testing.T) {
	edit := func(old, new string) string {
		if !strings.Contains(videoYAML, old) {
			panic("test: " + old)
		}
		return strings.Replace(videoYAML, old, new, 1)
	}
	cases := []struct {
		name string
		yaml string
		want []string
	}{
		{"bad mime", edit("[Video/MP4, video/webm]", "[mp4, video/webm]"),
			[]string{`campaigns[0].creative.video.mimes[0]: "mp4" is not a MIME type (such as video/mp4) (line 11)`}},
		{"duplicate mime", edit("[Video/MP4, video/webm]", "[video/mp4, VIDEO/MP4]"),
			[]string{`campaigns[0].creative.video.mimes[1]: "video/mp4" is listed twice (line 11)`}},
		{"bad protocol", edit("protocols: [7, 8]", "protocols: [7, 17]"),
			[]string{"campaigns[0].creative.video.protocols[1]: must be an AdCOM creative subtype 1-16 (2 VAST 2.0, 3 VAST 3.0, 7 VAST 4.0...), got 17 (line 12)"}},
		{"protocol not a number", edit("protocols: [7, 8]", "protocols: [vast4]"),
			[]string{"campaigns[0].creative.video.protocols[0]:"}},
		{"bad duration", edit("duration: 15", "duration: -5"),
			[]string{"campaigns[0].creative.video.duration: must be 1-3600 seconds, got -5 (line 13)"}},
		{"bad plcmt", edit("plcmt: [1, 2]", "plcmt: [5]"),
			[]string{"campaigns[0].creative.video.plcmt[0]: must be an OpenRTB 2.6 plcmt 1-4 (1 instream, 2 accompanying content, 3 interstitial, 4 no content), got 5 (line 14)"}},
		{"bad size", edit("size: 640x360", "size: 640"),
			[]string{`campaigns[0].creative.video.size: "640" is not WxH (such as 300x250) (line 15)`}},
		{"unknown key", edit("size: 640x360", "sise: 640x360"),
			[]string{`campaigns[0].creative.video.sise: unknown key (did you mean "size"?) (line 15)`}},
		{"no vast", edit("      vast: <VAST version=\"4.0\"></VAST>\n", "      sizes: [\"300x250\"]\n"),
			[]string{"campaigns[0].creative.video: describes a VAST template: give creative.vast too (line 11)"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml), "v.yaml")
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("error %v, want *ValidationError", err)
			}
			if len(ve.Problems) != len(tc.want) {
				t.Errorf("problems %q, want %d", ve.Problems, len(tc.want))
			}
			for _, w := range tc.want {
				found := false
				for _, p := range ve.Problems {
					found = found || strings.HasPrefix(p, w)
				}
				if !found {
					t.Errorf("no problem starting with %q in %q", w, ve.Problems)
				}
			}
		})
	}
}

// videoCampaign is a campaign serving only a VAST template that declares
// mp4, VAST 4.0, 15 seconds, instream, 640x360.
func videoCampaign() *Campaign {
	c := baseCampaign()
	c.Creative = Creative{Template: TemplateLight, VAST: `<VAST version="4.0"></VAST>`,
		Video: Video{Mimes: []string{"video/mp4"}, Protocols: []adcom1.MediaCreativeSubtype{7},
			Duration: 15, Plcmt: []adcom1.VideoPlcmtSubtype{1}, W: 640, H: 360}}
	return c
}

func TestVideoMatch(t *testing.T) {
	base := func() openrtb2.Video {
		return openrtb2.Video{MIMEs: []string{"video/mp4"}, Protocols: []adcom1.MediaCreativeSubtype{2, 7},
			MinDuration: 5, MaxDuration: 30, Plcmt: 1}
	}
	cases := []struct {
		name  string
		camp  func(*Campaign)
		video func(*openrtb2.Video)
		want  string
	}{
		{name: "everything fits"},
		{name: "declares nothing", camp: func(c *Campaign) { c.Creative.Video = Video{} },
			video: func(v *openrtb2.Video) {
				v.MIMEs = []string{"video/ogg"}
				v.Protocols = []adcom1.MediaCreativeSubtype{1}
				v.MaxDuration = 2
			}},
		{name: "imp states nothing", video: func(v *openrtb2.Video) { *v = openrtb2.Video{} }},
		// mimes
		{name: "mime case-insensitive", video: func(v *openrtb2.Video) { v.MIMEs = []string{"application/javascript", "VIDEO/MP4"} }},
		{name: "mime not accepted", video: func(v *openrtb2.Video) { v.MIMEs = []string{"video/webm", "video/ogg"} }, want: ReasonVideoMimes},
		// protocols
		{name: "protocol not accepted", video: func(v *openrtb2.Video) { v.Protocols = []adcom1.MediaCreativeSubtype{2, 3, 5, 6} }, want: ReasonVideoProtocols},
		{name: "legacy protocol", video: func(v *openrtb2.Video) { v.Protocols = nil; v.Protocol = 7 }},
		{name: "legacy protocol not accepted", video: func(v *openrtb2.Video) { v.Protocols = nil; v.Protocol = 3 }, want: ReasonVideoProtocols},
		// duration
		{name: "duration at min", video: func(v *openrtb2.Video) { v.MinDuration = 15 }},
		{name: "duration at max", video: func(v *openrtb2.Video) { v.MaxDuration = 15 }},
		{name: "duration too short", video: func(v *openrtb2.Video) { v.MinDuration = 16 }, want: ReasonVideoDuration},
		{name: "duration too long", video: func(v *openrtb2.Video) { v.MaxDuration = 10 }, want: ReasonVideoDuration},
		{name: "no max", video: func(v *openrtb2.Video) { v.MaxDuration = 0 }},
		{name: "rqddurs listed", video: func(v *openrtb2.Video) { v.MinDuration, v.MaxDuration, v.RqdDurs = 0, 0, []int64{6, 15} }},
		{name: "rqddurs not listed", video: func(v *openrtb2.Video) { v.MinDuration, v.MaxDuration, v.RqdDurs = 0, 0, []int64{6, 30} }, want: ReasonVideoDuration},
		// placement
		{name: "plcmt not accepted", video: func(v *openrtb2.Video) { v.Plcmt = 3 }, want: ReasonVideoPlcmt},
		{name: "legacy placement in-stream", video: func(v *openrtb2.Video) { v.Plcmt, v.Placement = 0, 1 }},
		{name: "legacy placement in-article", video: func(v *openrtb2.Video) { v.Plcmt, v.Placement = 0, 3 }, want: ReasonVideoPlcmt},
		{name: "legacy in-feed for an accompanying template", camp: func(c *Campaign) { c.Creative.Video.Plcmt = []adcom1.VideoPlcmtSubtype{2} },
			video: func(v *openrtb2.Video) { v.Plcmt, v.Placement = 0, 4 }},
		{name: "legacy interstitial", camp: func(c *Campaign) { c.Creative.Video.Plcmt = []adcom1.VideoPlcmtSubtype{3} },
			video: func(v *openrtb2.Video) { v.Plcmt, v.Placement = 0, 5 }},
		{name: "plcmt wins over placement", video: func(v *openrtb2.Video) { v.Plcmt, v.Placement = 1, 5 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := videoCampaign()
			if tc.camp != nil {
				tc.camp(c)
			}
			v := base()
			if tc.video != nil {
				tc.video(&v)
			}
			if got := c.VideoMismatch(&v); got != tc.want {
				t.Fatalf("VideoMismatch = %q, want %q", got, tc.want)
			}
			if c.VideoFits(&v) != (tc.want == "") {
				t.Fatalf("VideoFits = %v", !(tc.want == ""))
			}
			// Match gives the same verdict, with the reason.
			s := mustSet(t, c)
			req := baseRequest()
			req.Imp[0] = openrtb2.Imp{ID: "1", Video: &v}
			var why Rejections
			out := s.Match(req, &req.Imp[0], nil, wed, nil, &why)
			if (len(out) == 1) != (tc.want == "") || why.ByCampaign[c.ID] != tc.want {
				t.Fatalf("Match: %d matched, reason %q, want %q", len(out), why.ByCampaign[c.ID], tc.want)
			}
		})
	}
}

// TestVideoMatchMixedImp: an imp with a banner and a video the template
// does not fit still matches by its banner size.
func TestVideoMatchMixedImp(t *testing.T) {
	c := videoCampaign()
	c.Creative.Sizes = [][2]int64{{300, 250}}
	s := mustSet(t, c)
	req := baseRequest()
	req.Imp[0].Video = &openrtb2.Video{MIMEs: []string{"video/ogg"}}
	if out := s.Match(req, &req.Imp[0], nil, wed, nil, nil); len(out) != 1 {
		t.Fatal("banner+video imp: not matched by its banner")
	}
	req.Imp[0].Banner = &openrtb2.Banner{W: ptr[int64](728), H: ptr[int64](90)}
	var why Rejections
	if out := s.Match(req, &req.Imp[0], nil, wed, nil, &why); len(out) != 0 || why.ByCampaign[c.ID] != ReasonVideoMimes {
		t.Fatalf("no banner size, video mime mismatch: %d matched, reason %q", len(out), why.ByCampaign[c.ID])
	}
}

func TestVideoSize(t *testing.T) {
	c := videoCampaign()
	if w, h := c.VideoSize(&openrtb2.Video{W: ptr[int64](1024), H: ptr[int64](576)}); w != 1024 || h != 576 {
		t.Errorf("imp size: %dx%d, want 1024x576", w, h)
	}
	if w, h := c.VideoSize(&openrtb2.Video{W: ptr[int64](1024)}); w != 640 || h != 360 {
		t.Errorf("imp w only: %dx%d, want the template's 640x360", w, h)
	}
	c.Creative.Video = Video{}
	if w, h := c.VideoSize(&openrtb2.Video{}); w != 0 || h != 0 {
		t.Errorf("nothing declared: %dx%d, want 0x0", w, h)
	}
}
