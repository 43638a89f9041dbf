package pebblestore_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/rtbd/rtbd/bidder/internal/spendtest"
	"github.com/rtbd/rtbd/bidder/internal/testclock"
	"github.com/rtbd/rtbd/bidder/shading"
	"github.com/rtbd/rtbd/bidder/spend/pebblestore"
)

func TestShadingSuite(t *testing.T) {
	clk := testclock.New(time.Now())
	spendtest.RunShadingSuite(t, func(t *testing.T) shading.Store {
		s, err := pebblestore.Open(filepath.Join(t.TempDir(), "spend"), pebblestore.Options{Now: clk.Now, NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}, spendtest.ShadingCaps{Advance: clk.Add})
}
