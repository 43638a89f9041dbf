package server

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rtbd/rtbd/bidder/internal/biddertest"
)

// The sample user of the tests (its profile is biddertest.BulkProfile).
const userBulk = biddertest.UserBulk

// specDir holds the OpenRTB sample requests.
const specDir = "../../rtb/testdata"

// bannerRequest is the sample banner request of specDir for userBulk, with
// biddertest.WithUser's top-level edits (key, value, ...).
func bannerRequest(t testing.TB, edits ...any) []byte {
	t.Helper()
	body := biddertest.ReadFile(t, filepath.Join(specDir, "request-1-simple-banner.json"))
	return biddertest.WithUser(t, body, userBulk, edits...)
}

func TestMain(m *testing.M) {
	if sets := os.Getenv(configChild); sets != "" {
		os.Exit(runConfigChild(sets))
	}
	code := m.Run()
	os.RemoveAll(biddertest.CatalogDir())
	os.Exit(code)
}
