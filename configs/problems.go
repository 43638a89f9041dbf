package configs

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Problems collects the problems Validate finds, each prefixed with the
// dotted key of the setting it is about. A section's Validate method receives
// a Problems scoped to the section, so it names keys relative to itself:
// in Catalog.Validate, p.Range("block_cache_mb", ...) reports
// "catalog.block_cache_mb: ...". The zero Problems is ready to use; see
// NewFileProblems for one that checks a file value by value.
// Not safe for concurrent use.
type Problems struct {
	prefix string
	list   *problemList
}

type problemList struct {
	msgs, keys []string
	file       bool                 // NewFileProblems's rules
	lineOf     func(key string) int // nil: no line numbers
	max        int                  // > 0: stop after max problems
}

// MaxProblemsNote ends the list of a Problems from NewFileProblems that
// stopped at its maximum.
const MaxProblemsNote = "too many problems; stopped"

// NewFileProblems returns an empty Problems for the values of a file (a
// campaigns file, rows of a table), checked one by one:
//   - a problem about a key that already has one, or whose value above or
//     below already has one, is dropped: it follows from the first (a value
//     of the wrong type is also missing, zero, out of range);
//   - a problem ends with " (line N)" when lineOf(key) returns N > 0 for
//     its full key (lineOf may be nil);
//   - after max problems (0: no limit), MaxProblemsNote ends the list and
//     later problems are dropped.
func NewFileProblems(lineOf func(key string) int, max int) *Problems {
	return &Problems{list: &problemList{file: true, lineOf: lineOf, max: max}}
}

func (p *Problems) init() {
	if p.list == nil {
		p.list = &problemList{}
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
	return p.list.msgs
}

// Addf adds the problem "prefix.key: <formatted message>" (key "" is the
// prefix itself; with neither, the message alone).
func (p *Problems) Addf(key, format string, args ...any) {
	p.init()
	l, key := p.list, joinKey(p.prefix, key)
	if l.file {
		if l.max > 0 && len(l.msgs) >= l.max || key != "" && slices.ContainsFunc(l.keys, func(k string) bool {
			return related(k, key)
		}) {
			return
		}
	}
	msg := fmt.Sprintf(format, args...)
	if key != "" {
		msg = key + ": " + msg
	}
	if n := 0; l.lineOf != nil && key != "" {
		if n = l.lineOf(key); n > 0 {
			msg += " (line " + strconv.Itoa(n) + ")"
		}
	}
	l.msgs, l.keys = append(l.msgs, msg), append(l.keys, key)
	if l.file && l.max > 0 && len(l.msgs) == l.max {
		l.msgs, l.keys = append(l.msgs, MaxProblemsNote), append(l.keys, "")
	}
}

// related reports whether a and b are the same key or one is below the
// other ("a.b" and "a.b.c" or "a.b[2]"; not "a.b" and "a.bc").
func related(a, b string) bool {
	if len(a) > len(b) {
		a, b = b, a
	}
	return a != "" && strings.HasPrefix(b, a) && (len(b) == len(a) || b[len(a)] == '.' || b[len(a)] == '[')
}

// Suggest returns the one of known within edit distance 2 of key, the
// nearest, for a "did you mean" hint; "" if none is that near.
func Suggest(key string, known []string) string {
	best, bestD := "", 3
	for _, k := range known {
		if d := editDistance(key, k); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 99
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
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
