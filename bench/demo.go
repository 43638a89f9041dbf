package bench

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rtbd/rtbd/bidder/user"
	"github.com/rtbd/rtbd/bidder/user/pebblestore"
	"github.com/rtbd/rtbd/catalog/workload"
	"github.com/rtbd/rtbd/ingest/feedgen"
	"github.com/rtbd/rtbd/internal/childproc"
)

// DemoSize is the demo a bidder-level scenario writes with `rtbd gen
// -demo`: Products in Groups, users demo-user-1..Users. Zero fields take
// defaultDemo's.
type DemoSize struct {
	Products, Groups, Users int
}

var defaultDemo = DemoSize{Products: 20_000, Groups: 8, Users: 1000}

func (d DemoSize) withDefaults() DemoSize {
	d.Products = cmp.Or(d.Products, defaultDemo.Products)
	d.Groups = cmp.Or(d.Groups, defaultDemo.Groups)
	d.Users = cmp.Or(d.Users, defaultDemo.Users)
	return d
}

func (d DemoSize) validate(p *problems) {
	p.check(d.Products >= d.Groups && d.Groups >= 1 && d.Users >= 1, "products, groups, users: want products >= groups >= 1 and users >= 1")
}

// register binds -products, -groups and -users to d.
func (d *DemoSize) register(fs *flag.FlagSet) {
	fs.IntVar(&d.Products, "products", defaultDemo.Products, "demo products")
	fs.IntVar(&d.Groups, "groups", defaultDemo.Groups, "demo product groups")
	fs.IntVar(&d.Users, "users", defaultDemo.Users, "demo users")
}

func (d DemoSize) String() string {
	return fmt.Sprintf("%d products, %d groups, %d users", d.Products, d.Groups, d.Users)
}

// genArgs are the arguments of `rtbd gen -demo` writing d into dir. The
// product images are https (feedgen's shop host; nothing loads them), as
// the workloads' imps are secure, as Prebid Server's are.
func (d DemoSize) genArgs(dir string) []string {
	return []string{"gen", "-demo", "-out", dir, "-products", strconv.Itoa(d.Products), "-groups", strconv.Itoa(d.Groups),
		"-users", strconv.Itoa(d.Users), "-image-base", feedgen.DefaultImageBase}
}

// genDemo runs `rtbd gen -demo` (exe with args) for at most limit, its
// output in work/gen-demo.log.
func genDemo(ctx context.Context, exe string, args []string, work string, limit time.Duration) error {
	c, err := childproc.Start(childproc.Spec{Name: "rtbd gen -demo", Path: exe, Args: args, Log: logPath(work, "gen-demo")})
	if err != nil {
		return err
	}
	defer context.AfterFunc(ctx, c.Kill)()
	if err := c.Wait(limit); err != nil {
		return cmp.Or(ctx.Err(), c.Failure(fmt.Sprintf("writing the demo (limit %v)", limit)))
	}
	return nil
}

// eventURI returns the URIs of pixel view events over the demo: a random
// user, and a (group, product id) pair from a table Zipf-drawn with seed.
func (d DemoSize) eventURI(seed uint64) func(w *Worker, dst []byte) []byte {
	rng := rand.New(rand.NewPCG(seed, 11))
	z := rand.NewZipf(rng, 1.1, 1, uint64(d.Products-1))
	events := make([][2]int, 1<<14)
	for i := range events {
		idx := int((z.Uint64()*2654435761 + 12345) % uint64(d.Products))
		events[i] = [2]int{1 + idx%d.Groups, idx + 1}
	}
	return func(w *Worker, dst []byte) []byte {
		p := events[w.Rand.IntN(len(events))]
		return fmt.Appendf(dst, "/event?uid=demo-user-%d&pg=%d&pid=%d&ev=view", 1+w.Rand.IntN(d.Users), p[0], p[1])
	}
}

// prepare returns the demo directory dir (workDir/demo when ""), writing d
// there with `rtbd gen -demo` when it has no rtbd.yaml.
func (d DemoSize) prepare(ctx context.Context, dir, exe, workDir string, logf func(string, ...any)) (string, error) {
	dir, err := filepath.Abs(cmp.Or(dir, filepath.Join(workDir, "demo")))
	if err != nil {
		return "", fmt.Errorf("bench: %w", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "rtbd.yaml")); err == nil {
		logf("using the demo in %s (assumed: %s)", dir, d)
		return dir, nil
	}
	args := append(d.genArgs(dir), "-skip-existing")
	logf("writing the demo: %s %s", exe, strings.Join(args, " "))
	return dir, genDemo(ctx, exe, args, workDir, 30*time.Minute)
}

// benchUsers is one set of generated users: prefix + 1..count, whose ids
// are drawn uniformly or Zipf-popular (workload.Catalog) from a catalog.
type benchUsers struct {
	prefix  string
	uniform bool
	seed    uint64
}

// writeBenchUsers writes count users of each set into the user store of
// the demo in demoDir (the bidder must not be running), each with the ids
// of one request of w (scaleProfiles).
func writeBenchUsers(ctx context.Context, demoDir string, w workload.Catalog, count int, sets []benchUsers, logf func(string, ...any)) (err error) {
	if len(sets) == 0 {
		return nil
	}
	dir, t0 := filepath.Join(demoDir, "bidder", "users"), time.Now()
	s, err := pebblestore.Open(dir, pebblestore.Options{MaxRecommended: 100, MaxViewed: 50})
	if err != nil {
		return fmt.Errorf("bench: users: %w", err)
	}
	defer func() { err = errors.Join(err, s.Close()) }()
	var prefixes []string
	for _, set := range sets {
		ps, err := scaleProfiles(w.Products, w.Groups, w.IDs, count, set.uniform, set.seed)
		if err != nil {
			return err
		}
		for i := range ps {
			if err := s.Put(ctx, set.prefix+strconv.Itoa(i+1), &ps[i]); err != nil {
				return fmt.Errorf("bench: users: %w", err)
			}
		}
		prefixes = append(prefixes, fmt.Sprintf("%s1..%d (%s)", set.prefix, count, scalePopularity(set.uniform)))
	}
	logf("wrote users %s into %s in %v, each with the %d ids of one request over %d products",
		strings.Join(prefixes, ", "), dir, time.Since(t0).Round(time.Millisecond), w.IDs, w.Products)
	return nil
}

// scaleProfiles returns the profiles of users 1..count whose products are
// the ids of workload.Catalog requests: request i's group, its first third
// of ids as viewed and the rest as recommended, as the templates ask
// (light 1+2, medium 5+10, heavy 10+20), so a bid of the template of ids
// products looks them all up in one call.
func scaleProfiles(products, groups, ids, count int, uniform bool, seed uint64) ([]user.Profile, error) {
	reqs, err := workload.Catalog{Products: products, Groups: groups, IDs: ids, Uniform: uniform}.Requests(count, seed)
	if err != nil {
		return nil, err
	}
	nv := max(1, ids/3)
	out := make([]user.Profile, count)
	for i, r := range reqs {
		p := &out[i]
		p.Viewed = []user.GroupIDs{{Group: r.ProductGroupId, IDs: dedupIDs(r.Product1Ids[:nv])}}
		p.Recommended = []user.GroupIDs{{Group: r.ProductGroupId, IDs: dedupIDs(r.Product1Ids[nv:])}}
		p.Segments = []string{"electronics"}
	}
	return out, nil
}

// dedupIDs drops repeated ids (a Zipf draw repeats popular ones), keeping
// the first of each.
func dedupIDs(ids []int64) []int64 {
	out := make([]int64, 0, len(ids))
	for _, id := range ids {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}
