package remote

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
)

// Target schemes understood by New.
const (
	schemeStatic = "static"
	schemeDNS    = "dns"
	schemeFile   = "file"
)

const targetForms = "want static:///host:port[,host:port...], dns:///name:port or file:///absolute/path"

// maxNodeFileBytes bounds how much of a node file is read; a node list is a
// few hundred bytes, anything this big is a mistake (a wrong path).
const maxNodeFileBytes = 1 << 20

// target is a parsed Options.Target.
type target struct {
	scheme string
	addrs  []string // static: the fixed list, sorted and de-duplicated
	host   string   // dns: the name to look up
	port   string   // dns: the port every looked-up address gets
	path   string   // file: absolute path of the node file
}

// parseTarget parses "scheme:///endpoint". Errors quote the part that is
// wrong; they do not wrap a sentinel (New wraps them in ErrInvalidOptions).
func parseTarget(s string) (target, error) {
	if s == "" {
		return target{}, errors.New("empty; " + targetForms)
	}
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return target{}, fmt.Errorf("%q: missing scheme; %s", s, targetForms)
	}
	authority, endpoint, ok := strings.Cut(rest, "/")
	if !ok || authority != "" {
		return target{}, fmt.Errorf("%q: authority %q not supported, use three slashes (%s:///...)", s, authority, scheme)
	}
	switch scheme {
	case schemeStatic:
		if strings.TrimSpace(endpoint) == "" {
			return target{}, fmt.Errorf("%q: static target lists no addresses", s)
		}
		parts := strings.Split(endpoint, ",")
		addrs := make([]string, 0, len(parts))
		for i, p := range parts {
			p = strings.TrimSpace(p)
			if err := checkHostPort(p); err != nil {
				return target{}, fmt.Errorf("%q: address %d %q: %w", s, i+1, p, err)
			}
			addrs = append(addrs, p)
		}
		return target{scheme: scheme, addrs: normalize(addrs)}, nil
	case schemeDNS:
		if err := checkHostPort(endpoint); err != nil {
			return target{}, fmt.Errorf("%q: dns name %q: %w", s, endpoint, err)
		}
		host, port, _ := net.SplitHostPort(endpoint)
		return target{scheme: scheme, host: host, port: port}, nil
	case schemeFile:
		if endpoint == "" {
			return target{}, fmt.Errorf("%q: file target has no path", s)
		}
		if strings.ContainsRune(endpoint, 0) {
			return target{}, fmt.Errorf("%q: file path contains a NUL byte", s)
		}
		return target{scheme: scheme, path: "/" + endpoint}, nil
	default:
		return target{}, fmt.Errorf("%q: scheme %q not supported; %s", s, scheme, targetForms)
	}
}

// checkHostPort accepts "host:port" and "[v6]:port" with a non-empty host
// (no spaces, no commas) and a numeric port 1..65535.
func checkHostPort(hp string) error {
	host, port, err := net.SplitHostPort(hp)
	if err != nil {
		var ae *net.AddrError
		if errors.As(err, &ae) {
			return errors.New(ae.Err)
		}
		return err
	}
	if host == "" {
		return errors.New("empty host")
	}
	if strings.ContainsAny(host, " \t,/#[]") {
		return fmt.Errorf("bad character in host %q", host)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 || port[0] == '+' || port[0] == '0' {
		return fmt.Errorf("port %q: want a number 1..65535", port)
	}
	return nil
}

// parseNodeFile parses a node file: one host:port per line, blank lines and
// '#' comments (whole-line or trailing) ignored. Any bad line rejects the
// whole file, naming the line, so that a typo never silently shrinks the
// node set. An empty (or all-comment) file is valid and means zero nodes.
func parseNodeFile(data []byte) ([]string, error) {
	var nodes []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), maxNodeFileBytes)
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if err := checkHostPort(line); err != nil {
			return nil, fmt.Errorf("line %d %q: %w", n, line, err)
		}
		nodes = append(nodes, line)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return normalize(nodes), nil
}

// normalize sorts and de-duplicates addrs in place.
func normalize(addrs []string) []string {
	slices.Sort(addrs)
	return slices.Compact(addrs)
}
