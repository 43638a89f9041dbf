package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rtbd/rtbd/bidder/server"
	"github.com/rtbd/rtbd/catalog/catalogtest"
	"github.com/rtbd/rtbd/configs"
)

// TestSecretsKept sets every secret setting, through the environment and
// through <key>_file (env and config file), runs `rtbd config` and a
// bidder, and greps what they show for the secret values: `rtbd config`,
// /debug/pprof/cmdline, /metrics and the logs (stderr) of the run.
func TestSecretsKept(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tokenA, tokenB := "token-secret-aaaaaaaaaaaa", "token-secret-bbbbbbbbbbbb"
	enc := base64.URLEncoding.EncodeToString([]byte("price-encryption-secret-32-bytes"))
	integ := base64.URLEncoding.EncodeToString([]byte("price-integrity-secret-32-bytes!"))
	dsn := "postgres://rtbd:dsn-secret-eeeeeeeeeeee@db.invalid:5432/rtbd"
	xenc := base64.URLEncoding.EncodeToString([]byte("exchange-encryption-secret-32byt"))
	xinteg := base64.URLEncoding.EncodeToString([]byte("exchange-integrity-secret-32byte"))
	secrets := []string{tokenA, tokenB, enc, integ, "dsn-secret-eeeeeeeeeeee", xenc, xinteg}
	for _, k := range configs.SecretKeys() { // every secret is set below
		switch k {
		case "bidder.token_keys", "notice.price_keys.encryption", "notice.price_keys.integrity", "campaigns.postgres.dsn",
			"exchanges.*.price_keys.encryption", "exchanges.*.price_keys.integrity":
		default:
			t.Fatalf("secret %s is not covered by this test", k)
		}
	}
	catalogDir := filepath.Join(dir, "catalog")
	catalogtest.WriteFixture(t, catalogDir)
	campaigns, err := os.ReadFile(filepath.Join("bidder", "testdata", "campaigns.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := write("rtbd.yaml", "notice:\n  price_keys:\n    integrity_file: "+write("integrity", integ+"\n")+"\n"+
		"exchanges:\n  pbs:\n    price_keys:\n      encryption_file: "+write("xencryption", xenc+"\n")+"\n      integrity: "+xinteg+"\n")
	t.Setenv("RTBD_BIDDER_TOKEN_KEYS", tokenA+","+tokenB)
	t.Setenv("RTBD_NOTICE_PRICE_KEYS_ENCRYPTION_FILE", write("encryption", enc+"\n"))
	t.Setenv("RTBD_CAMPAIGNS_POSTGRES_DSN", dsn) // set, unused with campaigns.source file
	args := []string{"-config", cfgPath, "-data", catalogDir, "-http-listen", "127.0.0.1:0", "-admin-listen", "127.0.0.1:0",
		"-set", "bidder.data_dir=" + filepath.Join(dir, "bidder"), "-set", "bidder.campaigns=" + write("campaigns.yaml", string(campaigns)),
		"-set", "log.format=json", "-set", "log.level=debug", "-set", "bidder.shutdown_delay=0s"}
	check := func(where string, b []byte) {
		t.Helper()
		for _, s := range secrets {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("%s shows the secret %q:\n%s", where, s, b)
			}
		}
	}

	var out, errOut bytes.Buffer
	if code := run(append([]string{"config"}, args...), &out, &errOut); code != exitOK {
		t.Fatalf("rtbd config: exit %d: %s", code, errOut.String())
	}
	check("rtbd config", out.Bytes())
	check("rtbd config's stderr", errOut.Bytes())
	for _, want := range []string{"token_keys:\n    - '***'\n    - '***'\n", "encryption: '***'", "integrity: '***'", "dsn: '***'"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("rtbd config lacks %q:\n%s", want, out.String())
		}
	}

	// The run, its logs on a captured stderr.
	logged := captureStderr(t)
	cfg, log, err := loadServerConfig("rtbd", args, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Bidder.TokenKeys[1] != tokenB || cfg.Notice.PriceKeys.Encryption != enc || cfg.Notice.PriceKeys.Integrity != integ ||
		cfg.Campaigns.Postgres.DSN != dsn || cfg.Exchanges["pbs"].PriceKeys.Encryption != xenc || cfg.Exchanges["pbs"].PriceKeys.Integrity != xinteg {
		t.Fatalf("secrets not loaded: %+v", cfg.Masked())
	}
	s, err := server.Start(cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string) []byte {
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Get("http://" + s.AdminAddr() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || len(b) == 0 {
			t.Fatalf("GET %s: %d %q", path, resp.StatusCode, b)
		}
		return b
	}
	check("/debug/pprof/cmdline", get("/debug/pprof/cmdline"))
	check("/metrics", get("/metrics"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	log.Sync()
	logs := logged()
	if !bytes.Contains(logs, []byte("bidder serving")) {
		t.Fatalf("captured no logs of the run:\n%s", logs)
	}
	check("the logs", logs)
}

// captureStderr points os.Stderr (where the logger writes) at a file until
// the returned function, which returns what was written (or the test's end).
func captureStderr(t *testing.T) func() []byte {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	stderr := os.Stderr
	os.Stderr = f
	t.Cleanup(func() { os.Stderr = stderr })
	return func() []byte {
		os.Stderr = stderr
		b, err := os.ReadFile(f.Name())
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
}

// TestSecretOnCommandLineWarns: a secret given with -set logs a warning
// naming the key and the ways to give it instead.
func TestSecretOnCommandLineWarns(t *testing.T) {
	logged := captureStderr(t)
	_, log, err := loadServerConfig("rtbd", []string{"-set", "bidder.token_keys=token-secret-cccccccccccc", "-set", "log.format=json"}, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	log.Sync()
	logs := logged()
	if !bytes.Contains(logs, []byte(`"level":"warn"`)) || !bytes.Contains(logs, []byte(`"key":"bidder.token_keys"`)) ||
		!bytes.Contains(logs, []byte("RTBD_BIDDER_TOKEN_KEYS")) {
		t.Fatalf("no warning for a secret given with -set:\n%s", logs)
	}
}

// bidderArgs returns the flags of a bidder on loopback ports of the
// system's choosing, the fixture catalog and the data dir dataDir.
func bidderArgs(t *testing.T, dataDir string) []string {
	t.Helper()
	dir := t.TempDir()
	catalogtest.WriteFixture(t, filepath.Join(dir, "catalog"))
	campaigns, err := os.ReadFile(filepath.Join("bidder", "testdata", "campaigns.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "campaigns.yaml"), campaigns, 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"-data", filepath.Join(dir, "catalog"), "-http-listen", "127.0.0.1:0", "-admin-listen", "127.0.0.1:0",
		"-set", "bidder.data_dir=" + dataDir, "-set", "bidder.campaigns=" + filepath.Join(dir, "campaigns.yaml"),
		"-set", "bidder.token_keys_file=" + writeTemp(t, "token-secret-dddddddddddd")}
}

func writeTemp(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestGenUsageError: usage errors of rtbd gen, whichever form, say "rtbd gen:".
func TestGenUsageError(t *testing.T) {
	for _, args := range [][]string{{"gen", "-bogus"}, {"gen"}, {"gen", "-demo", "-bogus"}, {"gen", "-users", "5", "-bogus"}} {
		var errOut bytes.Buffer
		code := run(args, io.Discard, &errOut)
		last := strings.TrimSpace(errOut.String())
		if i := strings.LastIndex(last, "\nrtbd"); i >= 0 {
			last = last[i+1:] // after the flag package's usage text
		}
		if code != exitUsage || !strings.HasPrefix(last, "rtbd gen: ") || strings.Contains(last, "usage:") {
			t.Errorf("%v: exit %d, %q; want %d and a line starting \"rtbd gen: \"", args, code, last, exitUsage)
		}
	}
}
