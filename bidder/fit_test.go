package bidder

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prebid/openrtb/v20/openrtb2"

	"github.com/rtbd/rtbd/bidder/campaign"
	"github.com/rtbd/rtbd/rtb"
)

// vastCampaigns is one video campaign whose VAST template declares video
// (YAML lines under creative:, indented 6 spaces); "" declares nothing.
func vastCampaigns(t *testing.T, video string) *campaign.Set {
	t.Helper()
	y := `campaigns:
  - id: video-fit
    advertiser: Example Shop
    adomain: [shop.example.com]
    cat: [IAB22]
    product_group_id: 1
    status: active
    bid_cpm: 4
    creative:
      template: light
      vast: <VAST version="3.0"><Ad><InLine><AdSystem>rtbd</AdSystem><AdTitle>{{TITLE}}</AdTitle></InLine></Ad></VAST>
` + video
	s, err := campaign.Parse([]byte(y), "video.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// videoRequest is the spec's video sample (640x480, mp4 among its mimes,
// protocols 2 and 3, 5-30 s) for userBulk, its video object edited.
func videoRequest(t *testing.T, edit func(v map[string]any)) []byte {
	t.Helper()
	return withUser(t, editJSON(t, readFile(t, filepath.Join(specDir, "request-4-video.json")), func(m map[string]any) {
		if edit != nil {
			edit(m["imp"].([]any)[0].(map[string]any)["video"].(map[string]any))
		}
	}), userBulk)
}

// TestVideoBidSize: a video bid's w/h are the imp's video.w/h, else the
// size the template declares.
func TestVideoBidSize(t *testing.T) {
	for _, tc := range []struct {
		name   string
		video  string
		edit   func(map[string]any)
		wantWH [2]int64
	}{
		{"imp size", "      video: {size: 1280x720}\n", nil, [2]int64{640, 480}},
		{"template size", "      video: {size: 1280x720}\n", func(v map[string]any) { delete(v, "w"); delete(v, "h") }, [2]int64{1280, 720}},
		{"neither", "", func(v map[string]any) { delete(v, "w"); delete(v, "h") }, [2]int64{0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, func(o *Options) { o.Campaigns = staticCampaigns{vastCampaigns(t, tc.video)} })
			body := videoRequest(t, tc.edit)
			_, bids := checkResponse(t, f, body, f.bid(body), userBulk)
			if len(bids) != 1 || bids[0].bid.MType != openrtb2.MarkupVideo {
				t.Fatalf("bids %+v, want one video bid", bids)
			}
			if got := [2]int64{bids[0].bid.W, bids[0].bid.H}; got != tc.wantWH {
				t.Errorf("w/h %v, want %v", got, tc.wantWH)
			}
		})
	}
}

// TestVideoTemplateMatch: a template bids on a video imp only when what
// it declares fits; one that does not is a no-bid 504 (unsupported imp
// type: no creative of rtbd's serves this video).
func TestVideoTemplateMatch(t *testing.T) {
	const declared = "      video: {mimes: [video/mp4], protocols: [3], duration: 15, plcmt: [1], size: 640x480}\n"
	for _, tc := range []struct {
		name  string
		video string
		edit  func(map[string]any)
		bid   bool
	}{
		{"declares nothing", "", func(v map[string]any) { v["mimes"] = []string{"video/webm"} }, true},
		{"fits", declared, func(v map[string]any) { v["plcmt"] = 1 }, true},
		{"imp states no placement", declared, nil, true},
		{"mimes", declared, func(v map[string]any) { v["mimes"] = []string{"video/webm", "application/javascript"} }, false},
		{"protocols", declared, func(v map[string]any) { v["protocols"] = []int{7, 8} }, false},
		{"duration over maxduration", declared, func(v map[string]any) { v["maxduration"] = 10 }, false},
		{"duration under minduration", declared, func(v map[string]any) { v["minduration"] = 20 }, false},
		{"rqddurs", declared, func(v map[string]any) {
			delete(v, "minduration")
			delete(v, "maxduration")
			v["rqddurs"] = []int{6, 30}
		}, false},
		{"plcmt", declared, func(v map[string]any) { v["plcmt"] = 3 }, false},
		{"legacy placement", declared, func(v map[string]any) { v["placement"] = 3 }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, func(o *Options) {
				o.NBRBody = true
				o.Campaigns = staticCampaigns{vastCampaigns(t, tc.video)}
			})
			body := videoRequest(t, tc.edit)
			r := f.bid(body)
			if tc.bid {
				checkResponse(t, f, body, r, userBulk)
				return
			}
			var nb struct{ NBR *int }
			if r.status != 200 || json.Unmarshal(r.body, &nb) != nil || nb.NBR == nil || *nb.NBR != int(rtb.NoBidUnsupportedImpType) {
				t.Fatalf("status %d %s, want nbr %d", r.status, r.body, rtb.NoBidUnsupportedImpType)
			}
		})
	}
}

// TestNativeImageAssets: through the bid path, an icon the catalog lacks
// is left out when optional and drops the bid when required, unless
// bidder.image_resize_url serves it.
func TestNativeImageAssets(t *testing.T) {
	const icon = `{"id":2,"required":%d,"img":{"type":1,"w":80,"h":80}}`
	req := func(required string) string {
		return `{"ver":"1.2","assets":[{"id":1,"required":1,"title":{"len":25}},{"id":3,"required":1,"img":{"type":3,"wmin":100,"hmin":100}},` +
			strings.Replace(icon, "%d", required, 1) + `]}`
	}
	body := func(nr string) []byte {
		return nativeBid(map[string]any{"id": "n1", "native": map[string]any{"request": nr, "ver": "1.2"}})
	}
	noResize := newFixture(t, func(o *Options) { o.NBRBody = true })
	resize := newFixture(t, func(o *Options) { o.ImageResizeURL = "https://rs.example/r?w={w}&h={h}&u={url}" })

	// Optional icon, no resize service: left out.
	b := body(req("0"))
	_, bids := checkResponse(t, noResize, b, noResize.bid(b), userBulk)
	if adm := bids[0].bid.AdM; strings.Contains(adm, `"id":2`) || !strings.Contains(adm, `"url":"https://img.example.com/1/1.jpg","w":300,"h":300`) {
		t.Errorf("optional icon without resize: %s", adm)
	}
	// Required icon, no resize service: no bid.
	r := noResize.bid(body(req("1")))
	var nb struct{ NBR *int }
	if json.Unmarshal(r.body, &nb) != nil || nb.NBR == nil || *nb.NBR != int(rtb.NoBidUnsupportedImpType) {
		t.Errorf("required icon without resize: %s, want nbr 504", r.body)
	}
	// Required icon with the resize service: an 80x80 image.
	b = body(req("1"))
	_, bids = checkResponse(t, resize, b, resize.bid(b), userBulk)
	want := `"id":2,"required":1,"img":{"url":"https://rs.example/r?w=80\u0026h=80\u0026u=https%3A%2F%2Fimg.example.com%2F1%2F1.jpg","w":80,"h":80}`
	if adm := bids[0].bid.AdM; !strings.Contains(adm, want) || !strings.Contains(adm, `"url":"https://img.example.com/1/1.jpg","w":300,"h":300`) {
		t.Errorf("required icon with resize: adm %s\nwant %s", adm, want)
	}
	// A bad template is an options error.
	if _, err := New(Options{Products: noResize.local, Users: noResize.users, Campaigns: staticCampaigns{noResize.set}, Keys: noResize.keys,
		ImageResizeURL: "https://rs.example/r?u={url}"}); err == nil || !strings.Contains(err.Error(), "ImageResizeURL") {
		t.Errorf("bad ImageResizeURL: %v", err)
	}
}

// TestPrebidCorpusNativeImages runs the corpus with a sample user without
// and with an image resize service: every image of a native bid states
// its size, fits its asset (at least wmin x hmin, or at least w x h with
// the aspect ratio within 5%; an icon at most twice its size, or resized
// to it), and the resize service adds bids, never removes one.
func TestPrebidCorpusNativeImages(t *testing.T) {
	files, _ := filepath.Glob("/work/shared/openrtb/prebid-corpus/*.json")
	if len(files) == 0 {
		files, _ = filepath.Glob("../rtb/testdata/corpus/*.json")
	}
	const resizeURL = "https://rs.example/r?w={w}&h={h}&u={url}"
	count := map[bool]int{}
	for _, withResize := range []bool{false, true} {
		f := newFixture(t, func(o *Options) {
			o.NBRBody = true
			if withResize {
				o.ImageResizeURL = resizeURL
			}
		})
		for _, file := range files {
			body := withUser(t, readFile(t, file), userBulk)
			r := f.bid(body)
			var resp openrtb2.BidResponse
			if r.status != 200 || json.Unmarshal(r.body, &resp) != nil || resp.NBR != nil {
				continue
			}
			count[withResize]++
			var req openrtb2.BidRequest
			if err := json.Unmarshal(body, &req); err != nil {
				t.Fatal(err)
			}
			for _, sb := range resp.SeatBid {
				for _, bid := range sb.Bid {
					if bid.MType == openrtb2.MarkupNative {
						checkNativeImages(t, filepath.Base(file), &req, &bid, withResize)
					}
				}
			}
		}
	}
	t.Logf("%d corpus requests with a sample user: %d bid responses without an image resize service, %d with one", len(files), count[false], count[true])
	if count[true] < count[false] {
		t.Errorf("the resize service lost bids: %d with, %d without", count[true], count[false])
	}
}

func checkNativeImages(t *testing.T, file string, req *openrtb2.BidRequest, bid *openrtb2.Bid, resized bool) {
	t.Helper()
	type img struct {
		Type             int
		W, H, WMin, HMin int64
		URL              string
	}
	type asset struct {
		ID       int64
		Required int
		Img      *img
	}
	var nreq struct {
		Native *struct{ Assets []asset }
		Assets []asset
	}
	var nresp struct {
		Native *struct{ Assets []asset }
		Assets []asset
	}
	for _, imp := range req.Imp {
		if imp.ID != bid.ImpID || imp.Native == nil {
			continue
		}
		if err := json.Unmarshal([]byte(imp.Native.Request), &nreq); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
	}
	if err := json.Unmarshal([]byte(bid.AdM), &nresp); err != nil {
		t.Fatalf("%s: native adm: %v", file, err)
	}
	asked, got := nreq.Assets, nresp.Assets
	if nreq.Native != nil {
		asked = nreq.Native.Assets
	}
	if nresp.Native != nil {
		got = nresp.Native.Assets
	}
	served := map[int64]*img{}
	for _, a := range got {
		if a.Img != nil {
			served[a.ID] = a.Img
		}
	}
	for _, a := range asked {
		if a.Img == nil {
			continue
		}
		s := served[a.ID]
		if s == nil {
			if a.Required == 1 {
				t.Errorf("%s: required image asset %d missing from the bid", file, a.ID)
			}
			continue
		}
		q := a.Img
		if s.W <= 0 || s.H <= 0 {
			t.Errorf("%s: image asset %d states no size: %+v", file, a.ID, s)
			continue
		}
		if strings.HasPrefix(s.URL, "https://rs.example/") {
			if !resized {
				t.Errorf("%s: resize URL without a resize service", file)
			}
			continue // asked of the resize service at the size the asset asks
		}
		byMin := (q.WMin > 0 || q.HMin > 0) && s.W >= q.WMin && s.H >= q.HMin
		ratio := float64(s.W) / float64(s.H)
		want := float64(q.W) / float64(max(q.H, 1))
		byAspect := q.W > 0 && q.H > 0 && s.W >= q.W && s.H >= q.H && ratio >= want*0.95 && ratio <= want*1.05
		none := q.W <= 0 && q.H <= 0 && q.WMin <= 0 && q.HMin <= 0
		if !byMin && !byAspect && !none {
			t.Errorf("%s: image %dx%d does not fit asset %d %+v", file, s.W, s.H, a.ID, q)
		}
		if q.Type == 1 && (q.W > 0 && s.W > 2*q.W || q.W <= 0 && q.WMin > 0 && s.W > 2*q.WMin) {
			t.Errorf("%s: icon asset %d %+v served a %dx%d image", file, a.ID, q, s.W, s.H)
		}
	}
}
