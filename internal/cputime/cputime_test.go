//go:build unix

package cputime_test

import (
	"testing"
	"time"

	"github.com/rtbd/rtbd/internal/cputime"
)

// Self is positive in a running process and grows as it computes.
func TestSelfGrows(t *testing.T) {
	before := cputime.Self()
	if before <= 0 {
		t.Fatalf("Self() = %v in a running test, want > 0", before)
	}
	x, deadline := uint64(1), time.Now().Add(time.Minute)
	for cputime.Self() <= before {
		if time.Now().After(deadline) {
			t.Fatalf("Self() stayed at %v through a minute of computing (%d)", before, x)
		}
		for i := 0; i < 1_000_000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
}
