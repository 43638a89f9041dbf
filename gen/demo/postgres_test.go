package demo_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rtbd/rtbd/bidder/campaign"
	"github.com/rtbd/rtbd/bidder/campaign/pgsource"
	"github.com/rtbd/rtbd/bidder/campaign/pgsource/pgtest"
	"github.com/rtbd/rtbd/gen/demo"
)

// TestDemoCampaignsPostgres: -campaigns-postgres loads the demo's campaigns
// into the table, where a campaign source reads the same campaigns as the
// file; without the DSN in the environment it is a usage error.
func TestDemoCampaignsPostgres(t *testing.T) {
	t.Setenv(demo.EnvCampaignsDSN, "")
	if _, _, err := demoMain("-demo", "-out", filepath.Join(t.TempDir(), "x"), "-campaigns-postgres"); !errors.Is(err, demo.ErrUsage) {
		t.Fatalf("without the DSN: %v, want ErrUsage", err)
	}
	pg := pgtest.Start(t)
	t.Setenv(demo.EnvCampaignsDSN, pg.DSN)
	dir := filepath.Join(t.TempDir(), "d")
	out, _, err := demoMain("-demo", "-out", dir, "-products", "300", "-groups", "3", "-users", "2", "-campaigns-postgres")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "in PostgreSQL table "+pgsource.Table) || strings.Contains(out, pg.DSN) {
		t.Errorf("output:\n%s", out)
	}
	file, err := campaign.LoadFile(filepath.Join(dir, demo.CampaignsFile))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	src, err := pgsource.Open(ctx, pgsource.Options{DSN: pg.DSN})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if got := src.Current().Len(); got != file.Len() || got == 0 || len(src.Rejected()) != 0 {
		t.Fatalf("table has %d campaigns (rejected %v), file %d", got, src.Rejected(), file.Len())
	}
	for _, c := range file.All() {
		if _, ok := src.Current().Get(c.ID); !ok {
			t.Errorf("campaign %s not in the table", c.ID)
		}
	}
}
