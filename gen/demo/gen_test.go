package demo_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rtbd/rtbd/gen/demo"
)

func demoMain(args ...string) (string, string, error) {
	var out, errOut bytes.Buffer
	err := demo.DemoMain(context.Background(), args, &out, &errOut)
	return out.String(), errOut.String(), err
}

func usersMain(args ...string) (string, string, error) {
	var out, errOut bytes.Buffer
	err := demo.UsersMain(context.Background(), args, &out, &errOut)
	return out.String(), errOut.String(), err
}

func TestDemoAndUsersMain(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "d")
	out, _, err := demoMain("-demo", "-out", dir, "-products", "300", "-groups", "3", "-users", "4", "-seed", "2")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"demo written to " + dir, "rtbd -config " + filepath.Join(dir, "rtbd.yaml"), "curl -s", "demo-user-4"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if got := profiles(t, filepath.Join(dir, "bidder", "users"), 4); len(got) != 4 {
		t.Errorf("%d users", len(got))
	}
	// Again: the directory is not empty, a usage error.
	if _, _, err := demoMain("-demo", "-out", dir); !errors.Is(err, demo.ErrUsage) || !errors.Is(err, demo.ErrExists) {
		t.Errorf("second run = %v, want ErrUsage wrapping ErrExists", err)
	}
	if out, _, err := demoMain("-demo", "-out", dir, "-products", "300", "-groups", "3", "-users", "4", "-seed", "2", "-skip-existing"); err != nil ||
		!strings.Contains(out, "kept as it was") {
		t.Errorf("-skip-existing = %v\n%s", err, out)
	}

	// -users alone adds users to the demo's bidder data dir, matching its feed.
	data := filepath.Join(dir, "bidder")
	out, _, err = usersMain("-users", "9", "-data", data, "-products", "300", "-groups", "3", "-seed", "2")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "wrote 9 user profiles") {
		t.Errorf("output: %s", out)
	}
	got := profiles(t, filepath.Join(data, "users"), 9)
	if len(got) != 9 {
		t.Errorf("%d users", len(got))
	}
	// Users 1..4 are the same as the demo wrote (same feed options).
	o := demo.Options{Products: 300, Groups: 3, Seed: 2, Users: 4, Dir: filepath.Join(t.TempDir(), "e")}
	r := generate(t, o)
	for uid, want := range profiles(t, r.Users, 4) {
		if !bytes.Equal(got[uid], want) {
			t.Errorf("%s written by -users differs from the demo's", uid)
		}
	}
}

func TestMainUsage(t *testing.T) {
	tmp := t.TempDir()
	for name, args := range map[string][]string{
		"demo without -out":   {"-demo"},
		"demo unknown flag":   {"-demo", "-out", filepath.Join(tmp, "x"), "-bogus"},
		"demo bad products":   {"-demo", "-out", filepath.Join(tmp, "y"), "-products", "1", "-groups", "2"},
		"demo extra argument": {"-demo", "-out", filepath.Join(tmp, "z"), "extra"},
		"users without -data": {"-users", "5"},
		"users zero":          {"-users", "0", "-data", tmp},
		"users bad number":    {"-users", "many", "-data", tmp},
		"users missing data":  {"-users", "5", "-data", filepath.Join(tmp, "nope")},
		"users with -out":     {"-users=5", "-out", tmp},
	} {
		run := demoMain
		if args[0] != "-demo" {
			run = usersMain
		}
		_, _, err := run(args...)
		if !errors.Is(err, demo.ErrUsage) {
			t.Errorf("%s: err = %v, want ErrUsage", name, err)
		}
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("usage errors wrote files: %v", ents)
	}
	if _, _, err := demoMain("-demo", "-h"); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-demo -h: err = %v, want flag.ErrHelp", err)
	}
	if _, _, err := usersMain("-users", "1", "-h"); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-users 1 -h: err = %v, want flag.ErrHelp", err)
	}
}

func TestUsage(t *testing.T) {
	var b bytes.Buffer
	demo.Usage(&b)
	for _, want := range []string{"rtbd gen -demo -out DIR", "-skip-existing", "rtbd gen -users N -data BIDDERDATA"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("usage lacks %q:\n%s", want, b.String())
		}
	}
}
