package ingest

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestCrashSafety: a real ingest process is killed with
// SIGKILL while parsing, while writing tables, just before the switch and
// just after it. After each kill the live version serves every product it
// served before (the new ones after the switch), opens cleanly, and a
// re-run of the same ingest succeeds and clears what the killed run left.
func TestCrashSafety(t *testing.T) {
	src := t.TempDir()
	o1, o2 := testFeedOpts(scaled(20_000), ""), testFeedOpts(scaled(20_000), " v2")
	f1, f2 := writeFeed(t, src, "v1.csv", o1), writeFeed(t, src, "v2.csv.gz", o2)
	for _, tc := range []struct {
		point     string
		delta     bool
		switched  bool // the kill came after CURRENT changed
		leftovers bool // the kill leaves a half-built version or temp files
	}{
		{CrashParse, false, false, true},
		{CrashSST, false, false, true},
		{CrashBeforePublish, false, false, true},
		{CrashAfterPublish, false, true, false},
		{CrashSST, true, false, true},
		{CrashBeforePublish, true, false, true},
	} {
		name := tc.point
		if tc.delta {
			name = "delta-" + name
		}
		t.Run(name, func(t *testing.T) {
			if tc.delta && raceEnabled {
				t.Skip("the full-ingest cases cover the race detector; the children are slow under it")
			}
			dir := t.TempDir()
			mustIngest(t, testOptions(dir), f1)
			live := current(t, dir)
			args := []string{"-data", dir, "-progress", "none", "-sort-mem", "1MiB", "-table-size", "1MiB"}
			if tc.delta {
				args = append(args, "-delta")
			}
			args = append(args, f2)
			r := runChild(t, 60*time.Second, []string{CrashPointEnv + "=" + tc.point}, args...)
			if !r.killed {
				t.Fatalf("the ingest was not killed at %s: exit %d\n%s", tc.point, r.code, r.stderr)
			}
			left := leftovers(t, dir)
			if tc.leftovers != (len(left) > 0) {
				t.Errorf("after a kill at %s, leftovers %v (want some: %v)", tc.point, left, tc.leftovers)
			}
			if tc.switched {
				if current(t, dir) == live {
					t.Fatal("killed after the switch, but CURRENT is unchanged")
				}
				checkDir(t, dir, feedExpect(o2))
			} else {
				if current(t, dir) != live {
					t.Fatalf("CURRENT changed to %s by a killed ingest", current(t, dir))
				}
				checkDir(t, dir, feedExpect(o1))
			}
			r = runChild(t, 60*time.Second, nil, args...)
			if r.code != 0 {
				t.Fatalf("re-run: exit %d\n%s", r.code, r.stderr)
			}
			if !strings.Contains(r.stderr, "removed leftovers") && len(left) > 0 {
				t.Errorf("the re-run did not report removing %v:\n%s", left, r.stderr)
			}
			checkDir(t, dir, feedExpect(o2))
			if l := leftovers(t, dir); len(l) > 0 {
				t.Errorf("after the re-run: %v", l)
			}
			if m, _ := filepath.Glob(filepath.Join(dir, "versions", "*")); !slices.ContainsFunc(m, func(p string) bool { return filepath.Base(p) == live }) && !tc.switched {
				t.Errorf("the version live before the crash is gone: %v", m)
			}
		})
	}
}
