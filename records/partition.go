package records

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// PartitionDir is the directory of the partition of kind k holding hour
// (UTC) under root: root/kind=K/date=YYYY-MM-DD/hour=HH.
func PartitionDir(root string, k Kind, hour time.Time) string {
	h := hour.UTC()
	return filepath.Join(root, "kind="+k.String(), "date="+h.Format(time.DateOnly), fmt.Sprintf("hour=%02d", h.Hour()))
}

// FileName is the name of a complete file: <instance>-<seq>.parquet. While
// it is written the file is named "." + FileName (hidden: readers skip
// names starting with "." or "_").
func FileName(instance string, seq uint64) string {
	return instance + "-" + strconv.FormatUint(seq, 10) + ".parquet"
}

// ParseFileName returns the instance and seq of a complete file's name.
func ParseFileName(name string) (instance string, seq uint64, ok bool) {
	base, found := strings.CutSuffix(name, ".parquet")
	if !found || Hidden(name) {
		return "", 0, false
	}
	i := strings.LastIndexByte(base, '-')
	if i <= 0 {
		return "", 0, false
	}
	seq, err := strconv.ParseUint(base[i+1:], 10, 64)
	if err != nil {
		return "", 0, false
	}
	return base[:i], seq, true
}

// Hidden reports whether a file name is one readers skip (a file being
// written, or a state file): it starts with "." or "_".
func Hidden(name string) bool { return strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") }

// parseDate reads a "date=YYYY-MM-DD" directory name.
func parseDate(name string) (time.Time, bool) {
	v, ok := strings.CutPrefix(name, "date=")
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(time.DateOnly, v)
	return t, err == nil
}

// parseHour reads an "hour=HH" directory name.
func parseHour(name string) (int, bool) {
	v, ok := strings.CutPrefix(name, "hour=")
	if !ok || len(v) != 2 {
		return 0, false
	}
	h, err := strconv.Atoi(v)
	return h, err == nil && h >= 0 && h < 24
}
