package campaign

import (
	"os"
	"strings"
	"testing"
)

// docExample returns the YAML example of doc.go.
func docExample(tb testing.TB) []byte {
	tb.Helper()
	src, err := os.ReadFile("doc.go")
	if err != nil {
		tb.Fatal(err)
	}
	var b strings.Builder
	in := false
	for _, line := range strings.Split(string(src), "\n") {
		switch {
		case strings.HasPrefix(line, "//\tcampaigns:"):
			in = true
		case in && !strings.HasPrefix(line, "//\t"):
			in = false
		}
		if in {
			b.WriteString(strings.TrimPrefix(line, "//\t"))
			b.WriteByte('\n')
		}
	}
	if b.Len() == 0 {
		tb.Fatal("no example in doc.go")
	}
	return []byte(b.String())
}
