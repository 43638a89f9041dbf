package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

var execLookPath = exec.LookPath

// soakFault is one scheduled fault.
type soakFault struct {
	kind   string
	target int // node or bidder index (0-based); unused for redis and disks
	at     time.Duration
}

// schedule spreads Rounds x the runnable fault kinds evenly over the
// measured phase; each round alternates the node and bidder it hits.
func (f *soakFleet) schedule(env soakEnv, sum *SoakSummary) []soakFault {
	var kinds []string
	for _, k := range SoakFaultKinds {
		if !slices.Contains(f.o.Faults, k) {
			continue
		}
		if why, ok := env.skipped[k]; ok {
			sum.Skipped = append(sum.Skipped, SoakSkipped{Kind: k, Why: why})
			continue
		}
		kinds = append(kinds, k)
	}
	n := len(kinds) * f.o.Rounds
	if n == 0 {
		return nil
	}
	every := f.o.Duration / time.Duration(n+1)
	var out []soakFault
	for r := 0; r < f.o.Rounds; r++ {
		for i, k := range kinds {
			slot := r*len(kinds) + i
			t := r % 2
			switch k {
			case FaultNodeCut, FaultBidderTerm:
				t = (r + 1) % 2 // the other one than kill hits in the round
			}
			out = append(out, soakFault{kind: k, target: t, at: time.Duration(slot+1) * every})
		}
	}
	return out
}

// runFaults runs the schedule, one fault at a time (a fault that overruns
// its slot delays the next), until ctx ends.
func (f *soakFleet) runFaults(ctx context.Context, sched []soakFault, sum *SoakSummary) {
	for _, fl := range sched {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(f.measured.Add(fl.at))):
		}
		rec := SoakFault{Kind: fl.kind, StartSec: time.Since(f.measured).Seconds()}
		err := f.inject(ctx, fl, &rec)
		rec.EndSec = time.Since(f.measured).Seconds()
		if err != nil {
			rec.Error = err.Error()
			f.logf("  fault %s FAILED: %v", rec.Label, err)
		} else {
			f.logf("  fault %s: t=%.1f-%.1f s: %s", rec.Label, rec.StartSec, rec.EndSec, rec.Detail)
		}
		sum.Faults = append(sum.Faults, rec)
	}
}

// inject runs one fault to its recovery. ctx ending stops waiting, never a
// restart: everything killed is started again.
func (f *soakFleet) inject(ctx context.Context, fl soakFault, rec *SoakFault) error {
	bg := context.WithoutCancel(ctx)
	switch fl.kind {
	case FaultNodeKill:
		n := f.nodes[fl.target]
		rec.Label, rec.Target = n.name+" kill -9", n.name
		old := n.srv.pid()
		n.srv.Kill()
		sleepCtx(ctx, f.o.Outage)
		if err := n.srv.start(bg, true); err != nil {
			return fmt.Errorf("restart: %w", err)
		}
		f.pids.Store(n.name, n.srv.PID())
		rec.Detail = fmt.Sprintf("pid %d killed (SIGKILL), down %v, restarted on the same port (pid %d), serving again", old, f.o.Outage, n.srv.pid())
	case FaultRedisKill:
		rec.Label, rec.Target = "redis kill -9", "redis-server"
		old := f.redis.pid()
		f.redis.Kill()
		sleepCtx(ctx, f.o.Outage)
		if err := f.redis.start(bg, true); err != nil {
			return fmt.Errorf("restart: %w", err)
		}
		f.pids.Store("redis-server", f.redis.PID())
		rec.Detail = fmt.Sprintf("pid %d killed (SIGKILL), down %v, restarted on the same port and AOF (pid %d)", old, f.o.Outage, f.redis.pid())
	case FaultBidderKill, FaultBidderTerm:
		b := f.bidders[fl.target]
		term := fl.kind == FaultBidderTerm
		rec.Target = b.name
		rec.Label = b.name + " kill -9"
		if term {
			rec.Label = b.name + " SIGTERM"
		}
		b.mu.Lock()
		defer b.mu.Unlock()
		old := b.srv.pid()
		t0 := time.Now()
		var how string
		if term {
			if err := signalOf(b.srv, syscall.SIGTERM); err != nil {
				return err
			}
			select {
			case <-b.srv.Done():
			case <-time.After(30 * time.Second):
				b.srv.Kill()
				return fmt.Errorf("pid %d did not exit within 30 s of SIGTERM (killed)", old)
			}
			code := -1
			if st := b.srv.State(); st != nil {
				code = st.ExitCode()
			}
			how = fmt.Sprintf("pid %d SIGTERM, exited %d after %v", old, code, time.Since(t0).Round(time.Millisecond))
			if code != 0 {
				rec.Error = fmt.Sprintf("exit code %d after SIGTERM, want 0", code)
			}
		} else {
			b.srv.Kill()
			how = fmt.Sprintf("pid %d killed (SIGKILL)", old)
		}
		b.starts++
		if err := b.srv.start(bg, true); err != nil {
			return fmt.Errorf("%s; restart: %w", how, err)
		}
		f.pids.Store(b.name, b.srv.PID())
		rec.Detail = fmt.Sprintf("%s; restarted on its data dir and ports (pid %d), ready %v after the fault", how, b.srv.pid(), time.Since(t0).Round(time.Millisecond))
	case FaultNodeCut:
		n := f.nodes[fl.target]
		rec.Target = n.name
		cut := 5 * time.Second
		if n.ns == "" {
			rec.Label = n.name + " SIGSTOP"
			if err := signalOf(n.srv, syscall.SIGSTOP); err != nil {
				return err
			}
			sleepCtx(ctx, cut)
			if err := signalOf(n.srv, syscall.SIGCONT); err != nil {
				return err
			}
			rec.Detail = fmt.Sprintf("stopped (SIGSTOP) for %v, then SIGCONT (no network namespaces)", cut)
			return nil
		}
		rec.Label = n.name + " cut off"
		if err := ipCmd("netns", "exec", n.ns, "ip", "link", "set", n.nsLink, "down"); err != nil {
			return err
		}
		sleepCtx(ctx, cut)
		if err := ipCmd("netns", "exec", n.ns, "ip", "link", "set", n.nsLink, "up"); err != nil {
			return err
		}
		rec.Detail = fmt.Sprintf("network namespace %s: link %s down for %v (packets dropped), then up", n.ns, n.nsLink, cut)
	case FaultDiskFull:
		rec.Label, rec.Target = "disk full", "ingest"
		return f.ingestFault(ctx, rec, nil)
	case FaultDiskSlow:
		rec.Label, rec.Target = "disk slow", "ingest"
		return f.slowIngest(ctx, rec)
	default:
		return fmt.Errorf("unknown fault %q", fl.kind)
	}
	return nil
}

// ingestFault ingests the demo feed into the served catalog (on its
// nearly full tmpfs): it must fail with exit 1 and leave the live version
// (CURRENT) as it was.
func (f *soakFleet) ingestFault(ctx context.Context, rec *SoakFault, prefix []string) error {
	before, _ := os.ReadFile(filepath.Join(f.catalog, "CURRENT"))
	exe, args := f.exe, []string{"ingest", "-data", f.catalog, "-progress", "none", filepath.Join(f.demo, "feed.csv.gz")}
	if len(prefix) > 0 {
		exe, args = prefix[0], append(append(slices.Clone(prefix[1:]), f.exe), args...)
	}
	c, err := startChild("ingest", exe, args, logPath(f.work, "ingest"))
	if err != nil {
		return err
	}
	select {
	case <-c.Done():
	case <-time.After(5 * time.Minute):
		c.Kill()
		return fmt.Errorf("ingest did not end within 5 minutes")
	}
	code := c.State().ExitCode()
	after, _ := os.ReadFile(filepath.Join(f.catalog, "CURRENT"))
	last := lastLine(c.Tail())
	rec.Detail = fmt.Sprintf("rtbd ingest into the served catalog (tmpfs): exit %d: %s; live version %s", code, last,
		map[bool]string{true: "unchanged", false: "CHANGED"}[bytes.Equal(before, after)])
	switch {
	case code != 1:
		return fmt.Errorf("ingest exit %d, want 1 (aborted): %s", code, last)
	case !strings.Contains(last, "no space left"):
		return fmt.Errorf("ingest failed, not for the full disk: %s", last)
	case !bytes.Equal(before, after):
		return fmt.Errorf("the live version changed: %q -> %q", before, after)
	}
	return nil
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return s
}

// slowIngest ingests the feed into a copy of the catalog on the work dir's
// disk, from inside a cgroup v2 group whose io.max throttles that disk.
func (f *soakFleet) slowIngest(ctx context.Context, rec *SoakFault) error {
	env := probeSoakEnv(f.o)
	if env.ioMax == "" {
		return fmt.Errorf("%w: %s", errSkipped, env.skipped[FaultDiskSlow])
	}
	dir := filepath.Join(f.work, "slow-catalog")
	if _, err := os.Stat(dir); err != nil {
		if out, err := exec.Command("cp", "-a", filepath.Join(f.demo, "catalog"), dir).CombinedOutput(); err != nil {
			return fmt.Errorf("cp: %v: %s", err, out)
		}
	}
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		return err
	}
	dev := fmt.Sprintf("%d:%d", unixMajor(uint64(st.Dev)), unixMinor(uint64(st.Dev)))
	cg := filepath.Join(env.ioMax, fmt.Sprintf("rtbd-soak-%d", os.Getpid()))
	if err := os.MkdirAll(cg, 0o755); err != nil {
		return err
	}
	defer os.Remove(cg)
	if err := os.WriteFile(filepath.Join(cg, "io.max"), []byte(dev+" rbps=1048576 wbps=1048576\n"), 0o644); err != nil {
		return fmt.Errorf("io.max for device %s: %w", dev, err)
	}
	t0 := time.Now()
	script := fmt.Sprintf("echo $$ > %s/cgroup.procs && exec \"$@\"", cg)
	err := runToEnd(ctx, "slow ingest", "sh", []string{"-c", script, "sh", f.exe, "ingest", "-data", dir, "-progress", "none",
		filepath.Join(f.demo, "feed.csv.gz")}, logPath(f.work, "ingest-slow"), 10*time.Minute)
	rec.Detail = fmt.Sprintf("rtbd ingest into a copy of the catalog on device %s under io.max rbps=wbps=1MiB/s: %v, took %v", dev,
		map[bool]string{true: "published", false: fmt.Sprint(err)}[err == nil], time.Since(t0).Round(time.Millisecond))
	return err
}

func unixMajor(dev uint64) uint64 { return (dev >> 8) & 0xfff }
func unixMinor(dev uint64) uint64 { return (dev & 0xff) | ((dev >> 12) & 0xfff00) }

// cgroupIOMax returns the cgroup v2 directory where a child group with
// io.max can be made, or why there is none.
func cgroupIOMax(root bool) (dir, why string) {
	if !root {
		return "", "needs root (cgroup v2 io.max)"
	}
	for _, d := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
		b, err := os.ReadFile(filepath.Join(d, "cgroup.controllers"))
		if err != nil {
			continue
		}
		if !slices.Contains(strings.Fields(string(b)), "io") {
			return "", fmt.Sprintf("the cgroup v2 hierarchy at %s has no io controller (controllers: %q; on a hybrid hierarchy io is bound to cgroup v1 blkio)", d, strings.TrimSpace(string(b)))
		}
		sub, _ := os.ReadFile(filepath.Join(d, "cgroup.subtree_control"))
		if !slices.Contains(strings.Fields(string(sub)), "io") {
			if err := os.WriteFile(filepath.Join(d, "cgroup.subtree_control"), []byte("+io"), 0o644); err != nil {
				return "", fmt.Sprintf("cannot enable the io controller in %s/cgroup.subtree_control: %v", d, err)
			}
		}
		return d, ""
	}
	return "", "no cgroup v2 hierarchy mounted"
}

// tmpfsCatalog copies the catalog dir onto a tmpfs mounted at mnt with
// about 1 MiB free; undo unmounts it.
func tmpfsCatalog(src, mnt string) (string, func(), error) {
	var used int64
	err := filepath.Walk(src, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			used += (fi.Size() + 4095) &^ 4095
		}
		return err
	})
	if err != nil {
		return "", nil, err
	}
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		return "", nil, err
	}
	size := used/1024 + 1024 // KiB
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+strconv.FormatInt(size, 10)+"k", "tmpfs", mnt).CombinedOutput(); err != nil {
		return "", nil, fmt.Errorf("mount tmpfs: %v: %s", err, bytes.TrimSpace(out))
	}
	undo := func() { _ = exec.Command("umount", "-l", mnt).Run() }
	dst := filepath.Join(mnt, "catalog")
	if out, err := exec.Command("cp", "-a", src, dst).CombinedOutput(); err != nil {
		undo()
		return "", nil, fmt.Errorf("cp: %v: %s", err, bytes.TrimSpace(out))
	}
	return dst, undo, nil
}

// makeNetns makes network namespace rtbd-soak-PID-nI with a veth pair to
// it: the host's end 10.213.S.(4I+1)/30, the namespace's 10.213.S.(4I+2),
// which it returns with the namespace's link name; undo deletes both.
func makeNetns(subnet, i int) (ns, link, addr string, undo func(), err error) {
	pid := os.Getpid()
	ns = fmt.Sprintf("rtbd-soak-%d-n%d", pid, i)
	host := fmt.Sprintf("rsk%dh%d", pid%100000, i)
	link = fmt.Sprintf("rsk%dn%d", pid%100000, i)
	hostAddr := fmt.Sprintf("10.213.%d.%d", subnet, 4*i+1)
	addr = fmt.Sprintf("10.213.%d.%d", subnet, 4*i+2)
	if err := ipCmd("netns", "add", ns); err != nil {
		return "", "", "", nil, err
	}
	undo = func() {
		_ = ipCmd("netns", "del", ns)
		_ = exec.Command("ip", "link", "del", host).Run()
	}
	steps := [][]string{
		{"link", "add", host, "type", "veth", "peer", "name", link},
		{"link", "set", link, "netns", ns},
		{"addr", "add", hostAddr + "/30", "dev", host},
		{"link", "set", host, "up"},
		{"netns", "exec", ns, "ip", "addr", "add", addr + "/30", "dev", link},
		{"netns", "exec", ns, "ip", "link", "set", link, "up"},
		{"netns", "exec", ns, "ip", "link", "set", "lo", "up"},
	}
	for _, s := range steps {
		if err := ipCmd(s...); err != nil {
			return "", "", "", undo, err
		}
	}
	return ns, link, addr, undo, nil
}

func ipCmd(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
