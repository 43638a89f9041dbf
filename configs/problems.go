package configs

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// Problems collects the problems Validate finds, each prefixed with the
// dotted key of the setting it is about. A section's Validate method receives
// a Problems scoped to the section, so it names keys relative to itself:
// in Catalog.Validate, p.Range("block_cache_mb", ...) reports
// "catalog.block_cache_mb: ...". The zero Problems is ready to use.
// Not safe for concurrent use.
type Problems struct {
	prefix string
	list   *[]string
}

func (p *Problems) init() {
	if p.list == nil {
		p.list = new([]string)
	}
}

// Sub returns a Problems for the subsection key, sharing p's list.
func (p *Problems) Sub(key string) *Problems {
	p.init()
	return &Problems{prefix: joinKey(p.prefix, key), list: p.list}
}

// List returns every problem added so far (to p and to its Subs).
func (p *Problems) List() []string {
	if p.list == nil {
		return nil
	}
	return *p.list
}

// Addf adds the problem "prefix.key: <formatted message>".
func (p *Problems) Addf(key, format string, args ...any) {
	p.init()
	*p.list = append(*p.list, joinKey(p.prefix, key)+": "+fmt.Sprintf(format, args...))
}

// OneOf checks that got is one of allowed.
func (p *Problems) OneOf(key, got string, allowed ...string) {
	for _, a := range allowed {
		if got == a {
			return
		}
	}
	p.Addf(key, "must be one of %s; got %q", strings.Join(allowed, ", "), got)
}

// NonEmpty checks that got is not empty.
func (p *Problems) NonEmpty(key, got string) {
	if strings.TrimSpace(got) == "" {
		p.Addf(key, "must not be empty")
	}
}

// Range checks lo <= got <= hi.
func (p *Problems) Range(key string, got, lo, hi int64) {
	switch {
	case got < lo:
		p.Addf(key, "must be >= %d, got %d", lo, got)
	case got > hi:
		p.Addf(key, "must be <= %d, got %d", hi, got)
	}
}

// Positive checks that a duration is > 0.
func (p *Problems) Positive(key string, got time.Duration) {
	if got <= 0 {
		p.Addf(key, "must be > 0, got %s", got)
	}
}

// HostPort checks that got is a listen or dial address "host:port" with a
// numeric port (the host may be empty: ":9091" listens on every interface).
func (p *Problems) HostPort(key, got string) {
	if msg := checkHostPort(got); msg != "" {
		p.Addf(key, "%s", msg)
	}
}

// checkHostPort returns "" if addr is host:port with a numeric port, else
// what is wrong.
func checkHostPort(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Sprintf("must be host:port, got %q", addr)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Sprintf("port must be a number 0..65535, got %q", addr)
	}
	if strings.ContainsAny(host, " \t/") {
		return fmt.Sprintf("host must be a name or an IP address, got %q", addr)
	}
	return ""
}
