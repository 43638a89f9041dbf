package demo_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prebid/openrtb/v20/openrtb2"

	"github.com/rtbd/rtbd/bidder/campaign"
	"github.com/rtbd/rtbd/bidder/user"
	"github.com/rtbd/rtbd/bidder/user/pebblestore"
	"github.com/rtbd/rtbd/catalog"
	"github.com/rtbd/rtbd/catalog/catalogpb"
	"github.com/rtbd/rtbd/configs"
	"github.com/rtbd/rtbd/gen/demo"
	"github.com/rtbd/rtbd/rtb"
)

var small = demo.Options{Products: 2000, Groups: 5, Users: 50, Seed: 7}

func generate(t *testing.T, o demo.Options) *demo.Result {
	t.Helper()
	r, err := demo.Generate(context.Background(), o, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// profiles reads every demo user's profile, encoded, keyed by uid.
func profiles(t *testing.T, dir string, n int) map[string][]byte {
	t.Helper()
	s, err := pebblestore.Open(dir, pebblestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out := map[string][]byte{}
	var p user.Profile
	for i := 1; i <= n+1; i++ {
		found, err := s.Get(context.Background(), demo.UserID(i), &p)
		if err != nil {
			t.Fatal(err)
		}
		if i == n+1 {
			if found {
				t.Errorf("user %d of %d exists", i, n)
			}
			break
		}
		if !found {
			t.Fatalf("%s missing", demo.UserID(i))
		}
		out[demo.UserID(i)] = user.AppendProfile(nil, &p)
	}
	return out
}

func TestGenerate(t *testing.T) {
	o := small
	o.Dir = filepath.Join(t.TempDir(), "demo")
	r := generate(t, o)

	for _, p := range []string{r.Feed, r.Catalog, r.Users, r.Campaigns, r.Config, r.SampleRequest, r.Readme} {
		if !filepath.IsAbs(p) || !strings.HasPrefix(p, r.Dir) {
			t.Errorf("path %s: not absolute under %s", p, r.Dir)
		}
		if _, err := os.Stat(p); err != nil {
			t.Error(err)
		}
	}
	if r.IndexVersion == "" || r.Rejected != 0 || len(r.Skipped) != 0 {
		t.Errorf("result: version %q rejected %d skipped %v", r.IndexVersion, r.Rejected, r.Skipped)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(r.Dir, ".*")); len(leftovers) > 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}

	// Every user's products exist, in stock, in the group they were
	// recorded in, in the index.
	idx, err := catalog.OpenLocal(r.Catalog, catalog.LocalOptions{WatchInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	ctx := context.Background()
	check := func(uid, what string, g int64, ids []int64) {
		t.Helper()
		resp, err := idx.GetProductMasters(ctx, &catalogpb.ProductMastersRequest{
			ProductGroupId: g, Product1QuantityAtMost: int32(len(ids)), Product1Ids: ids,
		})
		if err != nil {
			t.Fatal(err)
		}
		got := resp.GetProduct1S()
		if len(got) != len(ids) {
			t.Fatalf("%s %s group %d: %d of %d products served", uid, what, g, len(got), len(ids))
		}
		for k, p := range got {
			if p.ProductId != ids[k] || p.ProductGroupId != g || !p.InStock {
				t.Fatalf("%s %s group %d: got product %d (group %d, in stock %v), want %d", uid, what, g, p.ProductId, p.ProductGroupId, p.InStock, ids[k])
			}
			// The demo bidder serves every product's image itself.
			if want := fmt.Sprintf("http://127.0.0.1:8080/demo/img/%d/%d.svg", g, p.ProductId); p.ImageUrl != want {
				t.Fatalf("%s %s: image %q, want %q", uid, what, p.ImageUrl, want)
			}
		}
	}
	s, err := pebblestore.Open(r.Users, pebblestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var p user.Profile
	segs := demo.Segments()
	for i := 1; i <= o.Users; i++ {
		uid := demo.UserID(i)
		if found, err := s.Get(ctx, uid, &p); err != nil || !found {
			t.Fatalf("%s: %v %v", uid, found, err)
		}
		if len(p.Viewed) < 1 || len(p.Viewed) > 3 || len(p.Segments) < 1 || len(p.Segments) > 3 {
			t.Fatalf("%s: %d groups, %d segments", uid, len(p.Viewed), len(p.Segments))
		}
		nv, nr := 0, 0
		for _, g := range p.Viewed {
			if len(g.IDs) == 0 {
				t.Fatalf("%s: viewed group %d empty", uid, g.Group)
			}
			nv += len(g.IDs)
			check(uid, "viewed", g.Group, g.IDs)
		}
		for _, g := range p.Recommended {
			if p.ViewedIn(g.Group) == nil {
				t.Fatalf("%s: recommended group %d not viewed", uid, g.Group)
			}
			for _, id := range g.IDs {
				if slices.Contains(p.ViewedIn(g.Group), id) {
					t.Fatalf("%s: product %d both viewed and recommended", uid, id)
				}
			}
			nr += len(g.IDs)
			check(uid, "recommended", g.Group, g.IDs)
		}
		if nv < 5 || nv > 40 || nr < 10 || nr > 30 {
			t.Fatalf("%s: %d viewed, %d recommended", uid, nv, nr)
		}
		for _, sg := range p.Segments {
			if !slices.Contains(segs, sg) {
				t.Fatalf("%s: segment %q not a demo segment", uid, sg)
			}
		}
	}
	s.Close()

	// campaigns.yaml parses and covers every group.
	set, err := campaign.LoadFile(r.Campaigns)
	if err != nil {
		t.Fatal(err)
	}
	for g := int64(1); g <= int64(o.Groups); g++ {
		if len(set.ByProductGroup(g)) == 0 {
			t.Errorf("no campaign for group %d", g)
		}
	}
	if len(set.ByProductGroup(int64(o.Groups)+1)) != 0 {
		t.Errorf("campaign for group %d, which does not exist", o.Groups+1)
	}

	// rtbd.yaml loads, validates and points at the demo.
	cfg, err := configs.Load(r.Config)
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if !cfg.Bidder.DemoImages {
		t.Error("bidder.demo_images is off: the demo's images would not load")
	}
	if cfg.Catalog.Data != r.Catalog || cfg.Bidder.DataDir != r.BidderData || cfg.Bidder.Campaigns != r.Campaigns {
		t.Errorf("config points at %q %q %q", cfg.Catalog.Data, cfg.Bidder.DataDir, cfg.Bidder.Campaigns)
	}
	if r.BidderData != filepath.Dir(r.Users) || filepath.Base(r.Users) != "users" {
		t.Errorf("users store %s is not bidder.data_dir/users", r.Users)
	}

	// The sample request is valid OpenRTB and a demo campaign of one of
	// demo-user-1's groups matches it.
	body, err := os.ReadFile(r.SampleRequest)
	if err != nil {
		t.Fatal(err)
	}
	var req openrtb2.BidRequest
	if err := rtb.DecodeRequest(body, &req); err != nil {
		t.Fatal(err)
	}
	if err := rtb.Validate(&req); err != nil {
		t.Fatal(err)
	}
	if req.User == nil || req.User.BuyerUID != "demo-user-1" || req.TMax != 100 || req.Device == nil ||
		req.Device.Geo == nil || req.Device.Geo.Country != "USA" || req.Site == nil ||
		len(req.Imp) != 1 || req.Imp[0].Banner == nil || *req.Imp[0].Banner.W != 300 || *req.Imp[0].Banner.H != 250 ||
		req.Imp[0].Secure == nil || *req.Imp[0].Secure != 0 { // the demo serves plain http: a secure imp is nbr 509
		t.Fatalf("sample request: %s", body)
	}
	s, err = pebblestore.Open(r.Users, pebblestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "demo-user-1", &p); err != nil {
		t.Fatal(err)
	}
	s.Close()
	matched := false
	for _, c := range set.Match(&req, &req.Imp[0], p.Segments, time.Now(), nil, nil) {
		if p.ViewedIn(c.ProductGroupID) != nil && c.Currency == "USD" {
			matched = true
		}
	}
	if !matched {
		t.Errorf("no demo campaign of demo-user-1's groups %v matches the sample request", p.Viewed)
	}

	readme, err := os.ReadFile(r.Readme)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{r.Curl, "rtbd -config ", "demo-user-1", "feed.csv.gz", "campaigns.yaml"} {
		if !bytes.Contains(readme, []byte(want)) {
			t.Errorf("README.txt lacks %q", want)
		}
	}
	wantCurl := "curl -s -H 'Content-Type: application/json' --data @" + r.SampleRequest + " http://127.0.0.1:8080/openrtb2/bid"
	if strings.ContainsAny(r.SampleRequest, " '\"$\\") { // the path is then shell-quoted
		wantCurl = "curl -s -H 'Content-Type: application/json' --data @'"
		if !strings.HasPrefix(r.Curl, wantCurl) {
			t.Errorf("Curl = %q", r.Curl)
		}
	} else if r.Curl != wantCurl {
		t.Errorf("Curl = %q, want %q", r.Curl, wantCurl)
	}
	if cfgText, err := os.ReadFile(r.Config); err != nil || !bytes.HasPrefix(cfgText, []byte("# The rtbd demo")) {
		t.Errorf("rtbd.yaml header: %v", err)
	}
}

func TestGenerateDeterministic(t *testing.T) {
	base := t.TempDir()
	o := small
	o.Dir = filepath.Join(base, "a")
	a := generate(t, o)
	o.Dir = filepath.Join(base, "b")
	b := generate(t, o)
	for _, f := range []string{demo.FeedFile, demo.CampaignsFile, demo.SampleRequestFile} {
		x, err1 := os.ReadFile(filepath.Join(a.Dir, f))
		y, err2 := os.ReadFile(filepath.Join(b.Dir, f))
		if err1 != nil || err2 != nil || !bytes.Equal(x, y) {
			t.Errorf("%s differs between two runs (%v %v)", f, err1, err2)
		}
	}
	pa, pb := profiles(t, a.Users, o.Users), profiles(t, b.Users, o.Users)
	for uid, x := range pa {
		if !bytes.Equal(x, pb[uid]) {
			t.Errorf("%s differs between two runs", uid)
		}
	}
	// A different seed gives other users (so the comparison above can fail).
	o.Dir, o.Seed = filepath.Join(base, "c"), o.Seed+1
	c := generate(t, o)
	pc := profiles(t, c.Users, o.Users)
	same := 0
	for uid, x := range pa {
		if bytes.Equal(x, pc[uid]) {
			same++
		}
	}
	if same > 0 {
		t.Errorf("%d users identical under another seed", same)
	}
}

func TestGenerateExistingDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "something"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := demo.Options{Dir: dir, Products: 100, Groups: 2, Users: 3}
	_, err := demo.Generate(context.Background(), o, nil)
	if !errors.Is(err, demo.ErrExists) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("Generate into a non-empty dir = %v, want ErrExists naming it", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("Generate wrote into the refused dir: %v", ents)
	}

	// An existing empty directory is fine; a second run with SkipExisting
	// keeps everything.
	empty := t.TempDir()
	o.Dir = empty
	r := generate(t, o)
	before, _ := os.ReadFile(r.Campaigns)
	if err := os.WriteFile(r.Campaigns, append(before, "# edited\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	o.SkipExisting = true
	r2 := generate(t, o)
	if len(r2.Skipped) != 7 || r2.IndexVersion != "" {
		t.Errorf("SkipExisting: skipped %d (%v), version %q", len(r2.Skipped), r2.Skipped, r2.IndexVersion)
	}
	if after, _ := os.ReadFile(r.Campaigns); !bytes.HasSuffix(after, []byte("# edited\n")) {
		t.Error("SkipExisting rewrote campaigns.yaml")
	}
	// Without it, the same directory is refused.
	o.SkipExisting = false
	if _, err := demo.Generate(context.Background(), o, nil); !errors.Is(err, demo.ErrExists) {
		t.Errorf("second Generate = %v, want ErrExists", err)
	}
	// SkipExisting redoes a missing step.
	if err := os.RemoveAll(r.Users); err != nil {
		t.Fatal(err)
	}
	o.SkipExisting = true
	r3 := generate(t, o)
	if len(r3.Skipped) != 6 || slices.Contains(r3.Skipped, r.Users) {
		t.Errorf("users not regenerated: skipped %v", r3.Skipped)
	}
	if got := profiles(t, r3.Users, o.Users); len(got) != o.Users {
		t.Errorf("%d users", len(got))
	}
}

func TestOptionsValidate(t *testing.T) {
	for name, o := range map[string]demo.Options{
		"no dir":            {},
		"negative products": {Dir: "x", Products: -1},
		"fewer products":    {Dir: "x", Products: 3, Groups: 4},
		"negative users":    {Dir: "x", Users: -5},
		"groups too many":   {Dir: "x", Groups: 5000, Products: 1_000_000},
		"currency":          {Dir: "x", Currency: "XYZ"},
	} {
		if err := o.Validate(); !errors.Is(err, demo.ErrBadOptions) {
			t.Errorf("%s: Validate = %v, want ErrBadOptions", name, err)
		}
	}
	if err := (demo.Options{Dir: "x"}).Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
	// A currency the bidder has no exchange rate for fails before
	// anything is written.
	dir := filepath.Join(t.TempDir(), "sek")
	_, err := demo.Generate(context.Background(), demo.Options{Dir: dir, Currency: "SEK", Products: 10, Groups: 1, Users: 1}, nil)
	if !errors.Is(err, demo.ErrBadOptions) || !strings.Contains(err.Error(), "fx_rates") {
		t.Errorf("Generate(SEK) = %v", err)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Error("Generate(SEK) created the directory")
	}
}

func TestUserProfileSmallStock(t *testing.T) {
	// 16 products in 8 groups: 2 per group, so groups run out of stock.
	o := demo.Options{Products: 16, Groups: 8, Seed: 3}
	stock := demo.NewStock(o)
	var p user.Profile
	for i := 1; i <= 200; i++ {
		if !demo.UserProfile(i, o, stock, &p) {
			t.Fatal("no stock")
		}
		if err := p.Validate(user.Limits{MaxGroups: 3, MaxViewed: 40, MaxRecommended: 30}); err != nil {
			t.Fatalf("user %d: %v", i, err)
		}
		for _, g := range append(slices.Clone(p.Viewed), p.Recommended...) {
			for _, id := range g.IDs {
				if !slices.Contains(stock.InGroup(g.Group), id) {
					t.Fatalf("user %d: product %d not in stock in group %d", i, id, g.Group)
				}
			}
		}
		for _, g := range p.Recommended {
			for _, id := range g.IDs {
				if slices.Contains(p.ViewedIn(g.Group), id) {
					t.Fatalf("user %d: %d viewed and recommended", i, id)
				}
			}
		}
	}
	// Group g holds ids with (id-1) % Groups == g-1.
	for g := int64(1); g <= 8; g++ {
		for _, id := range stock.InGroup(g) {
			if (id-1)%8 != g-1 {
				t.Errorf("stock: id %d in group %d", id, g)
			}
		}
	}
}

// TestGenerateImageBase: with Options.ImageBase the products' images are
// ImageBase + "<group>/<id>.jpg" and the demo bidder serves no pictures.
func TestGenerateImageBase(t *testing.T) {
	o := demo.Options{Products: 50, Groups: 2, Users: 3, Seed: 7, ImageBase: "https://img.example/p/"}
	o.Dir = filepath.Join(t.TempDir(), "demo")
	r := generate(t, o)
	idx, err := catalog.OpenLocal(r.Catalog, catalog.LocalOptions{WatchInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	resp, err := idx.GetProductMasters(context.Background(), &catalogpb.ProductMastersRequest{
		ProductGroupId: 1, Product1QuantityAtMost: 50, Product1Ids: []int64{1, 3, 5, 7}})
	if err != nil || len(resp.GetProduct1S()) == 0 {
		t.Fatalf("%v %v", resp, err)
	}
	for _, p := range resp.GetProduct1S() {
		if want := fmt.Sprintf("https://img.example/p/1/%d.jpg", p.ProductId); p.ImageUrl != want {
			t.Errorf("image %q, want %q", p.ImageUrl, want)
		}
	}
	cfg, err := configs.Load(r.Config)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Bidder.DemoImages {
		t.Error("bidder.demo_images is on with an image base of its own")
	}
}
