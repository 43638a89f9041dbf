package configs

import (
	"strings"
	"testing"
	"time"
)

// TestCampaignsValidate checks each rule of Campaigns.Validate: one bad
// setting gives one problem naming its key.
func TestCampaignsValidate(t *testing.T) {
	checkSettings(t, []setting{
		{"campaigns.source", "file", ""},
		{"campaigns.source", "mysql", `campaigns.source: must be one of file, postgres; got "mysql"`},
		{"campaigns.source", "postgres", "campaigns.postgres.dsn: must be set when source is postgres"},
		{"campaigns.refresh_interval", "0s", "campaigns.refresh_interval: must be > 0"},
		{"campaigns.postgres.dsn", "postgres://u:p@db/rtbd", ""},
		{"campaigns.file", "/etc/rtbd/campaigns.yaml", ""},
	})
}

// TestCampaignsDefaults: source file, a 10s refresh, and bidder.campaigns
// as the file until campaigns.file is set.
func TestCampaignsDefaults(t *testing.T) {
	c := mustDefault(t)
	if c.Campaigns.Source != CampaignsFile || c.Campaigns.RefreshInterval != 10*time.Second || c.Campaigns.Postgres.DSN != "" {
		t.Fatalf("defaults %+v", c.Campaigns)
	}
	if got := c.CampaignsFile(); got != c.Bidder.Campaigns || got == "" {
		t.Fatalf("CampaignsFile() = %q, want bidder.campaigns %q", got, c.Bidder.Campaigns)
	}
	if err := c.Set("campaigns.file", "/x/c.yaml"); err != nil || c.CampaignsFile() != "/x/c.yaml" {
		t.Fatalf("campaigns.file: %q, %v", c.CampaignsFile(), err)
	}
}

// TestCampaignsDSNSecret: the DSN comes from the environment, is masked in
// YAML (what `rtbd config` prints), and makes source postgres valid.
func TestCampaignsDSNSecret(t *testing.T) {
	const dsn = "postgres://rtbd:s3cret-pw@db.internal:5432/rtbd"
	c, err := load("", []string{"RTBD_CAMPAIGNS_SOURCE=postgres", "RTBD_CAMPAIGNS_POSTGRES_DSN=" + dsn})
	if err != nil {
		t.Fatal(err)
	}
	if c.Campaigns.Postgres.DSN != dsn || c.Campaigns.Source != CampaignsPostgres {
		t.Fatalf("from the environment: %+v", c.Campaigns)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	out, err := c.YAML()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "s3cret-pw") || !strings.Contains(string(out), `dsn: '***'`) {
		t.Fatalf("YAML shows the DSN unmasked or not at all:\n%s", out)
	}
}
