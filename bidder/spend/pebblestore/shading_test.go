package pebblestore_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/rtbd/rtbd/bidder/shading"
	"github.com/rtbd/rtbd/bidder/spend/pebblestore"
	"github.com/rtbd/rtbd/bidder/spend/spendtest"
	"github.com/rtbd/rtbd/internal/clocktest"
)

func TestShadingSuite(t *testing.T) {
	clk := clocktest.New(time.Now())
	spendtest.RunShadingSuite(t, func(t *testing.T) shading.Store {
		s, err := pebblestore.Open(filepath.Join(t.TempDir(), "spend"), pebblestore.Options{Now: clk.Now, NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}, spendtest.ShadingCaps{Advance: clk.Add})
}
