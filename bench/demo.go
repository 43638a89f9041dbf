package bench

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/rtbd/rtbd/ingest/feedgen"
)

// DemoSize is the demo environment a bidder-level scenario (RunBidder,
// RunSoak) writes with `rtbd gen -demo`: Products catalog products in
// Groups groups, and the profiles of users demo-user-1..Users. Zero fields
// take 20,000 products, 8 groups and 1,000 users.
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

// genDemo runs `rtbd gen -demo` (exe with args) to its end, at most
// limit, its output in work/gen-demo.log.
func genDemo(ctx context.Context, exe string, args []string, work string, limit time.Duration) error {
	c, err := startChild("rtbd gen -demo", exe, args, logPath(work, "gen-demo"))
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
