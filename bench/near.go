package bench

import (
	"flag"
	"fmt"
	"os"
	"strconv"
)

// EnvNearCacheBytes sets the default of the -near-cache flag: the near
// cache size (config catalog.near_cache_bytes) of the bidders the harness
// starts on a remote catalog.
const EnvNearCacheBytes = "RTBD_BENCH_NEAR_CACHE_BYTES"

// nearCacheFlag is -near-cache: a byte count, or "" for the bidder's own
// setting (its config and environment).
type nearCacheFlag struct {
	args *[]string
	val  string
}

func (f *nearCacheFlag) String() string { return f.val }

func (f *nearCacheFlag) Set(v string) error {
	n, err := parseByteSize(v)
	if err != nil {
		return err
	}
	f.val = v
	*f.args = append(*f.args, "-set", "catalog.near_cache_bytes="+strconv.FormatInt(n, 10))
	return nil
}

// nearFlag registers -near-cache on fs; a set flag (or $RTBD_BENCH_NEAR_CACHE_BYTES)
// appends "-set catalog.near_cache_bytes=N" to args.
func nearFlag(fs *flag.FlagSet, args *[]string) {
	f := &nearCacheFlag{args: args}
	if v := os.Getenv(EnvNearCacheBytes); v != "" {
		_ = f.Set(v) // a bad value is reported by the flag's own parse below
	}
	fs.Var(f, "near-cache", "near cache size of the started bidders on a remote catalog (catalog.near_cache_bytes; a size: 0, 64MiB, 1GiB; env "+EnvNearCacheBytes+"); default the bidder's config")
}

// parseByteSize reads a byte count: a plain integer or one with a suffix
// B, KB/MB/GB (powers of 1000) or KiB/MiB/GiB (powers of 1024).
func parseByteSize(s string) (int64, error) {
	num, mult := s, int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"k", 1 << 10}, {"B", 1}} {
		if len(s) > len(u.suffix) && s[len(s)-len(u.suffix):] == u.suffix {
			num, mult = s[:len(s)-len(u.suffix)], u.mult
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || n > (1<<40)/mult {
		return 0, fmt.Errorf("want a size in bytes from 0 to 1TiB (e.g. 0, 67108864, 64MiB), got %q", s)
	}
	return n * mult, nil
}
