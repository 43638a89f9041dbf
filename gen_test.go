package main

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
	"github.com/rtbd/rtbd/ingest"
)

func TestGenForm(t *testing.T) {
	for _, c := range []struct {
		args []string
		want int
	}{
		{[]string{"-demo", "-out", "d"}, genDemo},
		{[]string{"--demo=true", "-users", "5"}, genDemo},
		{[]string{"-users=5", "-data", "d"}, genUsers},
		{[]string{"-out", "f.csv", "-products", "5"}, genFeed},
		{[]string{"-out", "users"}, genFeed},
	} {
		if got := genForm(c.args); got != c.want {
			t.Errorf("genForm(%v) = %d, want %d", c.args, got, c.want)
		}
	}
}

func TestGenMain(t *testing.T) {
	tmp := t.TempDir()
	var out, errOut bytes.Buffer
	path := filepath.Join(tmp, "f.csv")
	if err := genMain(context.Background(), []string{"-out", path, "-products", "10", "-groups", "2"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "wrote 10 products") {
		t.Errorf("output: %s", out.String())
	}
	b, err := os.ReadFile(path)
	if err != nil || bytes.Count(b, []byte("\n")) != 11 {
		t.Errorf("feed: %v, %d lines", err, bytes.Count(b, []byte("\n")))
	}
	// Each form's usage errors are its package's, and exit 2.
	for _, c := range []struct {
		args []string
		want error
	}{
		{[]string{"-products", "5"}, ingest.ErrUsage},
		{[]string{"-demo"}, demo.ErrUsage},
		{[]string{"-users", "5"}, demo.ErrUsage},
	} {
		err := genMain(context.Background(), c.args, &out, &errOut)
		if !errors.Is(err, c.want) {
			t.Errorf("%v: err = %v, want %v", c.args, err, c.want)
		}
		if code := exit(&errOut, err); code != exitUsage {
			t.Errorf("%v: exit code %d, want %d", c.args, code, exitUsage)
		}
	}
	if err := genMain(context.Background(), []string{"-h"}, &out, &errOut); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: err = %v, want flag.ErrHelp", err)
	}
}

func TestGenUsage(t *testing.T) {
	var b bytes.Buffer
	genUsage(&b)
	for _, want := range []string{"rtbd gen -demo -out DIR", "-skip-existing", "rtbd gen -users N -data BIDDERDATA", "rtbd gen -out FILE", "-out-of-stock"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("usage lacks %q:\n%s", want, b.String())
		}
	}
}
