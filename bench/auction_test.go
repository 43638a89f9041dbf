package bench

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
)

// TestAuctionCommand: `rtbd bench auction` prints both shading runs and,
// with pacing days, the pacing table; bad flags are usage errors.
func TestAuctionCommand(t *testing.T) {
	ctx := context.Background()
	for _, args := range [][]string{
		{"auction", "-value", "0"},
		{"auction", "-pacing-budget", "1.5"},
		{"auction", "-shift", "-1"},
		{"auction", "extra", "-measure", "x"},
	} {
		var out, errb bytes.Buffer
		if err := Main(ctx, args, &out, &errb); !errors.Is(err, ErrUsage) {
			t.Errorf("%q: %v, want ErrUsage", args, err)
		}
	}
	var out, errb bytes.Buffer
	if err := Main(ctx, []string{"auction", "-learn", "2000", "-measure", "4000", "-after", "4000", "-pacing-days", "2", "-pacing-auctions", "20000"}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"m: true", "m: false", "near-floor", "cost per win", "after a +30% shift", "pacing: 2 days", "throttled even"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
