package cliflag_test

import (
	"bytes"
	"errors"
	"flag"
	"strings"
	"testing"

	"github.com/rtbd/rtbd/internal/cliflag"
)

var errUsage = errors.New("cmd: usage")

func TestParse(t *testing.T) {
	for _, c := range []struct {
		args     []string
		help     bool
		usage    bool
		n        int
		complain string
	}{
		{args: []string{"-n", "3", "rest"}, n: 3},
		{args: []string{"-h"}, help: true, complain: "-n int"},
		{args: []string{"-help"}, help: true, complain: "-n int"},
		{args: []string{"-n", "x"}, usage: true, complain: "invalid value"},
		{args: []string{"-bogus"}, usage: true, complain: "not defined: -bogus"},
	} {
		fs := flag.NewFlagSet("cmd", flag.ContinueOnError)
		n := fs.Int("n", 0, "a number")
		var stderr bytes.Buffer
		err := cliflag.Parse(fs, c.args, &stderr, errUsage)
		switch {
		case c.help && err != flag.ErrHelp:
			t.Errorf("%q: %v, want flag.ErrHelp itself", c.args, err)
		case c.usage && (!errors.Is(err, errUsage) || !strings.Contains(err.Error(), c.complain)):
			t.Errorf("%q: %v, want a usage error saying %q", c.args, err, c.complain)
		case !c.help && !c.usage && (err != nil || *n != c.n || fs.NArg() != 1):
			t.Errorf("%q: %v, n %d, %d args", c.args, err, *n, fs.NArg())
		}
		if !strings.Contains(stderr.String(), c.complain) {
			t.Errorf("%q: stderr %q, want it to say %q", c.args, stderr.String(), c.complain)
		}
	}
}

func TestParseNoArgs(t *testing.T) {
	fs := flag.NewFlagSet("cmd", flag.ContinueOnError)
	fs.Int("n", 0, "a number")
	if err := cliflag.ParseNoArgs(fs, []string{"-n", "1"}, &bytes.Buffer{}, errUsage); err != nil {
		t.Errorf("flags only: %v", err)
	}
	err := cliflag.ParseNoArgs(fs, []string{"-n", "1", "extra"}, &bytes.Buffer{}, errUsage)
	if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), `cmd: unexpected argument "extra"`) {
		t.Errorf("an argument left: %v, want a usage error naming it", err)
	}
	if err := cliflag.ParseNoArgs(fs, []string{"-h"}, &bytes.Buffer{}, errUsage); err != flag.ErrHelp {
		t.Errorf("-h: %v, want flag.ErrHelp", err)
	}
}
