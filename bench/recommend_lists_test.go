package bench

import (
	"bytes"
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rtbd/rtbd/bidder/user"
	"github.com/rtbd/rtbd/bidder/user/pebblestore"
	"github.com/rtbd/rtbd/bidder/user/recommended"
	"github.com/rtbd/rtbd/catalog/catalogtest"
)

// TestRecommendLists: `rtbd bench recommend-lists` writes, for each user
// with a profile, the catalog's recommendations from their viewed
// products (merged, without the viewed ones, in stock) as lines `rtbd
// users recommend` accepts.
func TestRecommendLists(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "catalog")
	catalogtest.WriteFixture(t, data)
	users := filepath.Join(dir, "users")
	st, err := pebblestore.Open(users, pebblestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := user.Profile{Viewed: []user.GroupIDs{{Group: catalogtest.TalkGroup, IDs: []int64{101, 102}}}}
	if err := st.Put(context.Background(), "u-1", &p); err != nil {
		t.Fatal(err)
	}
	st.Close()
	var out, errOut bytes.Buffer
	err = Main(context.Background(), []string{"recommend-lists", "-data", data, "-users", users, "-uid-prefix", "u-", "-first", "1", "-last", "2"}, &out, &errOut)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 1 || !strings.Contains(errOut.String(), "1 users written, 1 without a profile") {
		t.Fatalf("output %q, %q: want one line (u-2 has no profile)", out.String(), errOut.String())
	}
	var l recommended.Line
	if err := recommended.ParseLine([]byte(lines[0]), user.Limits{MaxGroups: 20, MaxRecommended: 100}, &l); err != nil {
		t.Fatalf("%s: %v", lines[0], err)
	}
	// 104 is like both viewed products, 103 like 101; 105 is out of stock.
	if want := []int64{104, 103, 106}; l.UID != "u-1" || len(l.Recommended) != 1 || l.Recommended[0].Group != catalogtest.TalkGroup || !slices.Equal(l.Recommended[0].IDs, want) {
		t.Fatalf("%+v, want u-1 with %v in group %d", l, want, catalogtest.TalkGroup)
	}
	if err := Main(context.Background(), []string{"recommend-lists", "-data", data}, &out, &errOut); err == nil {
		t.Error("no -users: no error")
	}
}
