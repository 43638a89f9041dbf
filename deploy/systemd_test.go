package deploy

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// unit is a systemd unit file: its [Service] settings (repeated ones
// joined by "\n").
type unit map[string]string

func readUnit(t *testing.T, path string) unit {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	u := unit{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), "=")
		if !ok || strings.HasPrefix(k, "#") {
			continue
		}
		if u[k] != "" {
			v = u[k] + "\n" + v
		}
		u[k] = v
	}
	return u
}

// systemdConfigs maps the units' config paths to the files beside them.
var systemdConfigs = map[string]string{
	"/etc/rtbd/bidder.yaml":  "systemd/bidder.yaml",
	"/etc/rtbd/catalog.yaml": "systemd/catalog.yaml",
}

// TestSystemdUnits runs each server unit's command line and environment
// through `rtbd config` and checks them and the ingest unit against the
// binary: flags, settings, the stop timeout against the shutdown, the
// writable paths, the bidder's catalog target and the ingest's directory.
func TestSystemdUnits(t *testing.T) {
	serverFlags, ingestFlags := flagsOf(t), flagsOf(t, "ingest")
	creds := t.TempDir()
	writeFile(t, filepath.Join(creds, "token_keys"), "systemd-test-token-key-0123456789")
	effective := map[string]map[string]any{}
	for _, name := range []string{"rtbd-catalog.service", "rtbd-bidder.service"} {
		u := readUnit(t, filepath.Join("systemd", name))
		args := strings.Fields(u["ExecStart"])[1:]
		checkFlags(t, name, args, serverFlags)
		for i, a := range args {
			if local, ok := systemdConfigs[a]; ok {
				args[i] = local
			}
		}
		var env []string
		for _, e := range strings.Split(u["Environment"], "\n") {
			if e != "" {
				env = append(env, strings.ReplaceAll(e, "%d", creds))
			}
		}
		for _, c := range strings.Split(u["LoadCredential"], "\n") {
			if id, _, _ := strings.Cut(c, ":"); c != "" {
				if _, err := os.Stat(filepath.Join(creds, id)); err != nil {
					t.Errorf("%s: credential %s: the test has no stand-in", name, id)
				}
			}
		}
		cfg, err := effectiveConfig(t, env, args...)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		mode := setting(t, cfg, "mode")
		effective[mode] = cfg
		stop, err := time.ParseDuration(u["TimeoutStopSec"] + "s")
		if err != nil {
			t.Fatalf("%s: TimeoutStopSec %q", name, u["TimeoutStopSec"])
		}
		var need time.Duration
		var data string
		switch mode {
		case "bidder":
			need = duration(t, cfg, "bidder.shutdown_delay") + 2*duration(t, cfg, "bidder.shutdown_timeout") + 2*time.Second
			data = setting(t, cfg, "bidder.data_dir")
		case "catalog":
			need = duration(t, cfg, "catalog.graceful_timeout")
			data = setting(t, cfg, "catalog.data")
		}
		if stop < need {
			t.Errorf("%s: TimeoutStopSec %v < %v the shutdown may take", name, stop, need)
		}
		if !underAny(data, u["ReadWritePaths"]) {
			t.Errorf("%s: data %s is not in ReadWritePaths %q", name, data, u["ReadWritePaths"])
		}
	}
	if target, want := setting(t, effective["bidder"], "catalog.target"), "static:///"+setting(t, effective["catalog"], "catalog.grpc_listen"); target != want {
		t.Errorf("the bidder's catalog.target is %s, the node listens at %s", target, want)
	}
	u := readUnit(t, filepath.Join("systemd", "rtbd-ingest.service"))
	args := strings.Fields(u["ExecStart"])[1:]
	if args[0] != "ingest" {
		t.Fatalf("rtbd-ingest.service runs %v", args)
	}
	checkFlags(t, "rtbd-ingest.service", args[1:], ingestFlags)
	for i, a := range args {
		switch {
		case a == "-data" && args[i+1] != setting(t, effective["catalog"], "catalog.data"):
			t.Errorf("rtbd-ingest.service: -data %s, the node serves %s", args[i+1], setting(t, effective["catalog"], "catalog.data"))
		case (a == "-data" || a == "-textfile") && !underAny(args[i+1], u["ReadWritePaths"]):
			t.Errorf("rtbd-ingest.service: %s %s is not in ReadWritePaths", a, args[i+1])
		}
	}
	timer := readUnit(t, filepath.Join("systemd", "rtbd-ingest.timer"))
	if timer["OnCalendar"] == "" {
		t.Error("rtbd-ingest.timer has no OnCalendar")
	}
	verifyUnits(t)
}

func underAny(path, dirs string) bool {
	for _, d := range strings.Fields(dirs) {
		if path == d || strings.HasPrefix(path, d+"/") {
			return true
		}
	}
	return false
}

// verifyUnits runs systemd-analyze verify on the units (the binary's
// path replaced by the test's), where systemd is installed.
func verifyUnits(t *testing.T) {
	t.Helper()
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Log("systemd-analyze not installed: units not verified by systemd")
		return
	}
	dir := t.TempDir()
	units, _ := filepath.Glob(filepath.Join("systemd", "rtbd-*"))
	var paths []string
	for _, u := range units {
		data, err := os.ReadFile(u)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.Base(u))
		writeFile(t, p, strings.ReplaceAll(string(data), "/usr/local/bin/rtbd", rtbdBin))
		paths = append(paths, p)
	}
	cmd := exec.Command(sa, append([]string{"verify"}, paths...)...)
	cmd.Env = append(os.Environ(), "SYSTEMD_LOG_LEVEL=warning")
	out, err := cmd.CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}
