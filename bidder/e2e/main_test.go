// Package e2e holds the process-level acceptance tests of the money path:
// bidder processes, a real redis-server and the real Pebble
// spend store, driven over HTTP on 127.0.0.1 as an SSP would (bid request,
// then the nurl and burl of the bid response with ${AUCTION_PRICE} filled).
//
// The bidders are this test binary re-executed as a small rtbd bidder
// (bidderChild below: server.Start, then server.Server.Shutdown on SIGTERM,
// which is what server.Run does, plus a file with the listen addresses), so
// the tests need no built rtbd binary.
//
// Tests:
//
//	TestFleetBudget        three bidder processes, one Redis
//	TestSIGTERMBurst       SIGTERM during a burst of billing
//	                       notices, Pebble and Redis, then restart
//	TestRedisOutage        Redis slow, paused, killed and
//	                       restarted under a running bidder
//	TestKill9DuringRedisOutage  bills accepted while Redis is stopped, then
//	                       kill -9 or SIGTERM: the journal replays them all
//	                       at restart
//	TestFleetEndToEnd      the fleet: redis-server, PostgreSQL, two
//	                       catalog nodes, three bidders (views shared,
//	                       replays charged once, a rolling restart)
//	TestFleetBench         the same fleet for longer, printed, no asserts
//	                       (make bench-fleet; skipped without FLEET_BENCH)
//
// The whole package takes about 30-40 s (more under -race); none of it
// asserts wall-clock micro-timings: the bounds are derived from the
// configured flush interval and tmax and are generous.
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/rtbd/rtbd/admin"
	"github.com/rtbd/rtbd/bidder"
	"github.com/rtbd/rtbd/bidder/server"
	"github.com/rtbd/rtbd/bidder/user"
	"github.com/rtbd/rtbd/bidder/user/pebblestore"
	"github.com/rtbd/rtbd/catalog/catalogtest"
	"github.com/rtbd/rtbd/configs"
	"github.com/rtbd/rtbd/internal/childproc"
)

// asBidder makes the re-executed test binary run bidderChild. Not RTBD_*:
// configs rejects unknown RTBD_ variables.
const asBidder = "BIDDER_E2E_AS_BIDDER"

// publicURL is the bidders' bidder.public_url; the tests replace it with
// the bidder's real address in the nurl and burl they receive.
const publicURL = "http://127.0.0.1:1"

// tokenKey signs every bidder's URLs (one fleet, one key).
const tokenKey = "bidder-e2e-token-key-0123456789"

// userID is the user of every bid request; its profile (products of the
// fixture's group 1) is written into each bidder's user store.
const userID = "e2e-user"

var catalogDir string

func TestMain(m *testing.M) {
	if os.Getenv(asBidder) == "1" {
		os.Exit(bidderChild(os.Args[1:]))
	}
	if os.Getenv(asCatalogNode) == "1" {
		os.Exit(catalogNodeChild(os.Args[1:]))
	}
	dir, err := os.MkdirTemp("", "bidder-e2e-catalog-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	catalogtest.WriteFixture(panicTB{}, dir)
	catalogDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// panicTB is the testing.TB of the shared catalog build: failures panic.
type panicTB struct{ testing.TB }

func (panicTB) Helper()                   {}
func (panicTB) Fatal(args ...any)         { panic(fmt.Sprint(args...)) }
func (panicTB) Fatalf(f string, a ...any) { panic(fmt.Sprintf(f, a...)) }

// bidderChild is the bidder process: args are the address file, then
// key=value settings applied over configs.Default() (?key=value: only when
// the key exists). It serves until
// SIGTERM/SIGINT, then shuts down gracefully (final spend flush), exactly
// as server.Run does; exit 0 means Shutdown returned no error.
func bidderChild(args []string) int {
	return runChild("bidder child", args, nil, func(cfg *configs.Config, log *zap.Logger) (childServer, error) {
		s, err := server.Start(cfg, log)
		if err != nil {
			return nil, err
		}
		return s, nil
	})
}

// childServer is what a child process serves: a bidder or a catalog node.
type childServer interface {
	Addr() string
	AdminAddr() string
	Shutdown(context.Context) error
}

// runChild is the life of a child process named what: args are the
// address file, then key=value settings (after the settings sets) applied
// by childConfig; start starts the server, whose addresses go to the
// address file. It serves until SIGTERM/SIGINT, then shuts down
// gracefully; exit 0 means Shutdown returned no error, 2 a bad
// configuration.
func runChild(what string, args, sets []string, start func(*configs.Config, *zap.Logger) (childServer, error)) int {
	if len(args) < 1 {
		fmt.Fprintln(os.Stderr, what+": no address file")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	cfg, log, err := childConfig(append(sets, args[1:]...))
	if err != nil {
		fmt.Fprintln(os.Stderr, what+":", err)
		return 2
	}
	defer log.Sync()
	s, err := start(cfg, log)
	if err != nil {
		fmt.Fprintln(os.Stderr, what+":", err)
		return 1
	}
	if err := writeAddrs(args[0], s.Addr(), s.AdminAddr()); err != nil {
		fmt.Fprintln(os.Stderr, what+": address file:", err)
		_ = s.Shutdown(context.Background())
		return 1
	}
	<-ctx.Done()
	if err := s.Shutdown(context.Background()); err != nil {
		log.Error(what+": shutdown", zap.Error(err))
		return 1
	}
	return 0
}

// childConfig is configs.Default() with the key=value settings of a
// child's arguments applied (?key=value: only when the key exists),
// validated, and its logger.
func childConfig(sets []string) (*configs.Config, *zap.Logger, error) {
	cfg, err := configs.Default()
	if err != nil {
		return nil, nil, err
	}
	for _, kv := range sets {
		k, v, _ := strings.Cut(kv, "=")
		if opt, ok := strings.CutPrefix(k, "?"); ok { // only if this build has the key
			if _, err := cfg.Get(opt); err != nil {
				continue
			}
			k = opt
		}
		if err := cfg.Set(k, v); err != nil {
			return nil, nil, err
		}
	}
	if err := cfg.Validate(); err != nil {
		return nil, nil, err
	}
	log, err := admin.NewLogger(cfg.Log, false)
	if err != nil {
		return nil, nil, err
	}
	return cfg, log, nil
}

// writeAddrs writes a child's address file (its listen address, then its
// admin address) at path, atomically (a rename).
func writeAddrs(path, addr, adminAddr string) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(addr+"\n"+adminAddr+"\n"), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// proc is one child process (a bidder or a catalog node).
type proc struct {
	*childproc.Proc
	t       testing.TB
	name    string
	addr    string // bid server host:port
	admin   string // admin listener host:port
	logPath string
}

// bidderConfig is what a test sets on a bidder child.
type bidderConfig struct {
	dataDir   string
	campaigns string   // YAML path
	sets      []string // extra key=value (with redis.addr for spend and fraud, user.store=pebble keeps the demo users read from data_dir: auto would pick Redis)
}

// campaignsYAML writes a campaign file with one campaign, "money", over
// the fixture's group 1 (bid 1.5 CPM, asap pacing; bidder's
// testdata/money-campaign.yaml) with the extra YAML lines given (budgets),
// and returns its path.
func campaignsYAML(t testing.TB, extra string) string {
	t.Helper()
	y, err := os.ReadFile(filepath.Join("..", "testdata", "money-campaign.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	y = append(y, extra...)
	// The fleet's requests are first price (at 1) and its notices report a
	// fixed clearing price, the value: every campaign bids it, unshaded.
	y = bytes.ReplaceAll(y, []byte("    pacing: asap\n"), []byte("    pacing: asap\n    bid_shading: off\n"))
	path := filepath.Join(t.TempDir(), "campaigns.yaml")
	if err := os.WriteFile(path, y, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// writeUser puts the test user's profile into the user store of dataDir
// (before the bidder opens it).
func writeUser(t testing.TB, dataDir string) {
	t.Helper()
	us, err := pebblestore.Open(filepath.Join(dataDir, "users"), pebblestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := us.Put(context.Background(), userID, testProfile()); err != nil {
		t.Fatal(err)
	}
	if err := us.Close(); err != nil {
		t.Fatal(err)
	}
}

// testProfile is the profile of userID: products 1..9 of the fixture's
// group 1 viewed, 11..29 recommended.
func testProfile() *user.Profile {
	p := &user.Profile{}
	var viewed, rec []int64
	for id := int64(1); id <= 9; id++ {
		viewed = append(viewed, id)
	}
	for id := int64(11); id <= 29; id++ {
		rec = append(rec, id)
	}
	p.Viewed = []user.GroupIDs{{Group: catalogtest.BulkGroup, IDs: viewed}}
	p.Recommended = []user.GroupIDs{{Group: catalogtest.BulkGroup, IDs: rec}}
	return p
}

// startBidder starts a bidder child and waits until it serves. The
// process is killed (SIGKILL) at the end of the test if still running.
func startBidder(t testing.TB, name string, c bidderConfig) *proc {
	t.Helper()
	if _, err := os.Stat(filepath.Join(c.dataDir, "users")); err != nil {
		writeUser(t, c.dataDir)
	}
	dir := t.TempDir()
	addrFile := filepath.Join(dir, "addr")
	args := []string{addrFile,
		"mode=bidder",
		"log.level=warn", "log.format=json",
		"catalog.data=" + catalogDir,
		"bidder.http_listen=127.0.0.1:0",
		"admin.listen=127.0.0.1:0",
		"bidder.data_dir=" + c.dataDir,
		"bidder.campaigns=" + c.campaigns,
		"bidder.public_url=" + publicURL,
		"bidder.token_keys=" + tokenKey,
		"bidder.nbr_body=true",
		"bidder.max_tmax=500ms",
		"bidder.access_log_sample=0",
		// SIGTERM drains at once (TestShutdownDelaySIGTERM sets a delay).
		"bidder.shutdown_delay=0s",
		// The tests measure the money path, not load shedding: the
		// admission control is off, so that no bid request of this load
		// is shed (nbr 507).
		"?bidder.admission_latency=0",
		// One bidder per data dir (a restart on it is the same bidder): its
		// own spend.instance_id, and a short lease on it in a shared store,
		// so that a restart after SIGKILL waits at most 1.3s for it.
		"spend.instance_id=" + instanceID(c.dataDir),
		"?spend.instance_lease=1s",
	}
	args = append(args, c.sets...)
	return spawn(t, name, asBidder, dir, args)
}

// instanceID is the spend.instance_id of the bidder of dataDir.
func instanceID(dataDir string) string {
	h := fnv.New32a()
	h.Write([]byte(dataDir))
	return fmt.Sprintf("e2e-%08x", h.Sum32())
}

// spawn re-executes the test binary with role (an environment variable
// set to 1) and args, whose first is the address file the child writes
// (its listen address, then its admin address) once it serves, in the
// directory dir; it waits for that file. The process is killed (SIGKILL)
// at the end of the test if still running.
func spawn(t testing.TB, name, role, dir string, args []string) *proc {
	t.Helper()
	addrFile := args[0]
	p := &proc{t: t, name: name, logPath: filepath.Join(dir, "stderr.log")}
	var err error
	p.Proc, err = childproc.Start(childproc.Spec{Name: name, Path: os.Args[0], Args: args, Env: []string{role + "=1"}, Log: p.logPath})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			p.dumpLog()
		}
	})
	err = p.WaitReady(context.Background(), 60*time.Second, childproc.FileReady(addrFile, func(b []byte) error {
		lines := strings.Fields(string(b))
		if len(lines) != 2 {
			return errors.New("no addresses yet")
		}
		p.addr, p.admin = lines[0], lines[1]
		return nil
	}))
	if err != nil {
		p.dumpLog()
		t.Fatalf("%s: %v", name, err)
	}
	return p
}

func (p *proc) dumpLog() {
	b, _ := os.ReadFile(p.logPath)
	if len(b) > 8000 {
		b = b[len(b)-8000:]
	}
	p.t.Logf("%s stderr (tail):\n%s", p.name, b)
}

func (p *proc) kill() { p.Kill() }

// terminate sends SIGTERM and waits (up to 60s) for the exit; it returns
// the exit error (nil: Shutdown succeeded).
func (p *proc) terminate() error { return p.Stop(60 * time.Second) }

func (p *proc) signalTerm() { _ = p.Signal(syscall.SIGTERM) }

func (p *proc) wait(d time.Duration) error { return p.Wait(d) }

// client is the SSP side: a fasthttp client without retries (a notice is
// sent once, so its outcome is known exactly).
func newClient() *fasthttp.Client {
	return &fasthttp.Client{
		MaxConnsPerHost:           256,
		ReadTimeout:               10 * time.Second,
		WriteTimeout:              10 * time.Second,
		MaxIdemponentCallAttempts: 1,
		DisablePathNormalizing:    true,
		NoDefaultUserAgentHeader:  true,
	}
}

// bidRequest is a one-imp banner request for userID on site domain.
func bidRequest(id, domain string) []byte { return bidRequestFor(id, domain, userID) }

// bidRequestFor is a one-imp banner request for user uid (user.buyeruid)
// on site domain.
func bidRequestFor(id, domain, uid string) []byte {
	return []byte(`{"id":"` + id + `","at":1,"tmax":500,"cur":["USD"],` +
		`"imp":[{"id":"1","bidfloor":0.03,"banner":{"w":300,"h":250}}],` +
		`"site":{"id":"s1","domain":"` + domain + `","page":"http://` + domain + `/p.html"},` +
		`"device":{"ip":"203.0.113.7","ua":"Mozilla/5.0"},` +
		`"user":{"buyeruid":"` + uid + `"}}`)
}

// bidAnswer is what a bid request got.
type bidAnswer struct {
	status     int
	nbr        int  // with no bid
	bid        bool // a bid for "money"
	nurl, burl string
	adm        string
	price      float64
	latency    time.Duration
	err        error

	cids []string // the campaigns of all its bids
}

type bidResponse struct {
	NBR     *int `json:"nbr"`
	SeatBid []struct {
		Bid []struct {
			Price float64 `json:"price"`
			CID   string  `json:"cid"`
			NURL  string  `json:"nurl"`
			AdM   string  `json:"adm"`
			BURL  string  `json:"burl"`
		} `json:"bid"`
	} `json:"seatbid"`
}

// bid sends one bid request to addr.
func bid(c *fasthttp.Client, addr string, body []byte) bidAnswer {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI("http://" + addr + bidder.PathBid)
	req.Header.SetMethod(fasthttp.MethodPost)
	req.Header.SetContentType("application/json")
	req.Header.Set("x-openrtb-version", "2.6")
	req.SetBody(body)
	start := time.Now()
	err := c.DoTimeout(req, resp, 10*time.Second)
	a := bidAnswer{latency: time.Since(start), err: err}
	if err != nil {
		return a
	}
	a.status = resp.StatusCode()
	if a.status == fasthttp.StatusNoContent {
		a.nbr = -1
		return a
	}
	var br bidResponse
	if err := json.Unmarshal(resp.Body(), &br); err != nil {
		a.err = fmt.Errorf("bid response %d: %w: %.200s", a.status, err, resp.Body())
		return a
	}
	if br.NBR != nil {
		a.nbr = *br.NBR
	}
	for _, sb := range br.SeatBid {
		for _, b := range sb.Bid {
			a.cids = append(a.cids, b.CID)
			if b.CID == "money" {
				a.bid, a.nurl, a.burl, a.adm, a.price = true, b.NURL, b.BURL, b.AdM, b.Price
			}
		}
	}
	if len(a.cids) == 0 && br.NBR == nil {
		a.err = fmt.Errorf("bid response %d without a bid nor nbr: %.300s", a.status, resp.Body())
	}
	return a
}

// noticeURL turns a nurl/burl of a bid response into the URL the SSP calls
// on addr, with ${AUCTION_PRICE} filled with price.
func noticeURL(u, addr, price string) (string, error) {
	if !strings.HasPrefix(u, publicURL+"/") {
		return "", fmt.Errorf("notice URL %q does not start with bidder.public_url %s", u, publicURL)
	}
	if !strings.Contains(u, "${AUCTION_PRICE}") {
		return "", fmt.Errorf("notice URL %q has no ${AUCTION_PRICE} macro", u)
	}
	return "http://" + addr + strings.Replace(strings.TrimPrefix(u, publicURL), "${AUCTION_PRICE}", price, 1), nil
}

// get sends one GET and returns the status (0 and the error on a
// transport error).
func get(c *fasthttp.Client, url string) (int, error) {
	st, _, err := getNotice(c, url)
	return st, err
}

// getNotice sends one GET and returns the status and the notice outcome
// header (bidder.HeaderNoticeOutcome; 0 and the error on a transport
// error).
func getNotice(c *fasthttp.Client, url string) (int, string, error) {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(url)
	req.Header.SetMethod(fasthttp.MethodGet)
	if err := c.DoTimeout(req, resp, 10*time.Second); err != nil {
		return 0, "", err
	}
	return resp.StatusCode(), string(resp.Header.Peek(bidder.HeaderNoticeOutcome)), nil
}

// metrics scrapes the admin /metrics of p: series (name{labels} as
// Prometheus prints them) to value.
func (p *proc) metrics(t testing.TB) map[string]float64 {
	t.Helper()
	body := p.adminGet(t, "/metrics")
	out := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err == nil {
			out[line[:i]] = v
		}
	}
	return out
}

// campaignStatus reads GET /admin/campaigns of p: the "money" campaign.
func (p *proc) campaignStatus(t testing.TB) bidder.CampaignStatus {
	t.Helper()
	body := p.adminGet(t, "/admin/campaigns")
	var list []bidder.CampaignStatus
	if err := json.Unmarshal(body, &list); err != nil {
		t.Fatalf("bidder %s /admin/campaigns: %v: %.300s", p.name, err, body)
	}
	for _, s := range list {
		if s.Campaign == "money" {
			return s
		}
	}
	t.Fatalf("bidder %s /admin/campaigns has no campaign money: %.300s", p.name, body)
	return bidder.CampaignStatus{}
}

// adminGet answers GET path on p's admin listener: the body of a 200,
// failing t on anything else.
func (p *proc) adminGet(t testing.TB, path string) []byte {
	t.Helper()
	c := newClient()
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI("http://" + p.admin + path)
	if err := c.DoTimeout(req, resp, 10*time.Second); err != nil || resp.StatusCode() != 200 {
		t.Fatalf("bidder %s %s: %d %v", p.name, path, resp.StatusCode(), err)
	}
	return append([]byte(nil), resp.Body()...)
}

// waitFor polls cond every 10ms until it holds or d passes.
func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// exitCode is the exit status of err (0 for nil).
func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// today is the campaign's day (UTC: the test campaigns set no time zone).
func today() string { return time.Now().UTC().Format(time.DateOnly) }

// chargeMicros is what one billing notice at clearing price 1.5 CPM
// charges: 1.5 / 1000 of the currency = 1500 micros.
const (
	clearing     = "1.5"
	chargeMicros = 1500
)
