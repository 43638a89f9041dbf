package remote

import (
	"slices"
	"strings"
	"testing"
)

// FuzzParseTarget: Options.Target comes from config files and flags.
func FuzzParseTarget(f *testing.F) {
	for _, s := range []string{
		"static:///127.0.0.1:7070,127.0.0.1:7071", "static:///[::1]:1, h:2", "dns:///localhost:7070",
		"dns://8.8.8.8/x:1", "file:///etc/rtbd/nodes.txt", "file://x", "file:///", "static:///", "",
		"://", ":///", "static:///:0", "static:///h:65536", "dns:///[::1]:80", "static:///a:1,,b:2",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tg, err := parseTarget(s)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		switch tg.scheme {
		case schemeStatic:
			if len(tg.addrs) == 0 || !slices.IsSorted(tg.addrs) {
				t.Fatalf("%q: addrs %q", s, tg.addrs)
			}
			for _, a := range tg.addrs {
				if err := checkHostPort(a); err != nil {
					t.Fatalf("%q: accepted bad address %q: %v", s, a, err)
				}
			}
		case schemeDNS:
			if tg.host == "" || tg.port == "" {
				t.Fatalf("%q: dns %+v", s, tg)
			}
		case schemeFile:
			if !strings.HasPrefix(tg.path, "/") || len(tg.path) < 2 {
				t.Fatalf("%q: path %q", s, tg.path)
			}
		default:
			t.Fatalf("%q: scheme %q", s, tg.scheme)
		}
	})
}

// FuzzParseNodeFile: node files are written by operators and tools.
func FuzzParseNodeFile(f *testing.F) {
	for _, s := range []string{
		"", "# c\n", "10.0.0.1:7070\n10.0.0.2:7070 # x\n", "[::1]:1\r\n", "a:1\nb\n", "a:1 b:2", "\x00:1",
		strings.Repeat("h:1\n", 100),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		nodes, err := parseNodeFile(data)
		if err != nil {
			return
		}
		if !slices.IsSorted(nodes) || len(slices.Compact(slices.Clone(nodes))) != len(nodes) {
			t.Fatalf("nodes not sorted and unique: %q", nodes)
		}
		for _, n := range nodes {
			if err := checkHostPort(n); err != nil {
				t.Fatalf("accepted bad node %q: %v", n, err)
			}
		}
		// Writing the result back out and parsing it again is stable.
		again, err := parseNodeFile([]byte(strings.Join(nodes, "\n")))
		if err != nil || !slices.Equal(again, nodes) {
			t.Fatalf("round trip: %q -> %q, %v", nodes, again, err)
		}
	})
}
