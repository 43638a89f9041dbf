package campaign

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"reflect"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/rtbd/rtbd/configs"
)

// MaxFileSize is the largest campaigns file Parse and LoadFile accept, in bytes.
const MaxFileSize = 16 << 20

// maxAliasNodes bounds the YAML nodes Parse reaches through aliases.
const maxAliasNodes = 1_000_000

// maxProblems bounds the problems of one ValidationError.
const maxProblems = 200

// ErrInvalid is wrapped by every *ValidationError: errors.Is(err, ErrInvalid)
// tells a bad campaigns file from an I/O error.
var ErrInvalid = errors.New("campaign: invalid campaigns file")

// ValidationError is the error of Parse, LoadFile and Compile for bad
// campaigns. Problems lists every problem found, each starting with the key
// path it is about and, from a file, ending with its line
// (`campaigns[2].creative.sizes[1]: "300y250" is not WxH (line 40)`), in
// order of the campaigns.
type ValidationError struct {
	Name     string // the name given to Parse (the file path for LoadFile)
	Problems []string
}

// Error implements error: all problems on one line, separated by "; ".
func (e *ValidationError) Error() string {
	var b strings.Builder
	b.WriteString("campaign: ")
	if e.Name != "" {
		b.WriteString(e.Name)
		b.WriteString(": ")
	}
	if len(e.Problems) == 1 {
		b.WriteString("1 problem: ")
	} else {
		fmt.Fprintf(&b, "%d problems: ", len(e.Problems))
	}
	b.WriteString(strings.Join(e.Problems, "; "))
	return b.String()
}

// Unwrap returns ErrInvalid.
func (e *ValidationError) Unwrap() error { return ErrInvalid }

// LoadFile reads and parses the campaigns file at path (at most MaxFileSize
// bytes). A bad file gives a *ValidationError; an unreadable one an error
// wrapping the *os.PathError.
func LoadFile(path string) (*Set, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(data, path)
}

func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("campaign: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("campaign: read %s: %w", path, err)
	}
	return data, nil
}

// file is the top level of a campaigns file; each campaign is checked and
// decoded into a Spec in turn.
type file struct {
	Campaigns *[]yaml.Node `yaml:"campaigns"`
}

var (
	typeOfSpec    = reflect.TypeFor[Spec]()
	typeOfDaypart = reflect.TypeFor[DaypartSpec]()
	typeOfNode    = reflect.TypeFor[yaml.Node]()
)

// errTooManyNodes aborts a parse that reaches more than maxAliasNodes nodes
// through aliases.
var errTooManyNodes = errors.New("too many YAML nodes (aliases?); stopped")

// Parse parses and validates a campaigns file (the YAML format of the
// package comment) and builds its Set. name is used in errors only. Any
// problem gives a *ValidationError listing all of them with their key paths
// and lines; Parse never panics. The Set does not reference data.
//
// Each campaign is decoded by yaml.v3 into a Spec after a check of its YAML
// against Spec's keys and types (unknown keys with a "did you mean",
// duplicate keys, values of the wrong kind), then compiled as Compile does.
func Parse(data []byte, name string) (set *Set, err error) {
	var doc yaml.Node
	p := configs.NewFileProblems(func(key string) int { return lineOf(&doc, key) }, maxProblems)
	k := newCompiler(p)
	defer func() {
		if r := recover(); r != nil {
			msg := fmt.Sprint(r)
			if r != errTooManyNodes { //nolint:errorlint // sentinel panic value
				// yaml.v3 is not known to panic since v3.0.0, but a bad file
				// must never take the bidder down.
				msg = "yaml: cannot parse: " + msg
			}
			set, err = nil, &ValidationError{Name: name, Problems: append(p.List(), msg)}
		}
	}()
	return k.set(name, decode(data, &doc, p, k))
}

// decode reads data into doc and checks, decodes and compiles each
// campaign, in order.
func decode(data []byte, doc *yaml.Node, p *configs.Problems, k *compiler) []*Campaign {
	const empty = "missing: the file is empty (write `campaigns: []` for no campaigns)"
	if len(data) > MaxFileSize {
		p.Addf("", "file larger than %d bytes", MaxFileSize)
		return nil
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(doc); err != nil {
		if errors.Is(err, io.EOF) {
			p.Addf("campaigns", empty)
		} else {
			p.Addf("", "%v", err)
		}
		return nil
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		p.Addf("", "more than one YAML document (line %d)", extra.Line)
		return nil
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 || isNull(doc.Content[0]) {
		p.Addf("campaigns", empty)
		return nil
	}
	c := &checker{}
	root := doc.Content[0]
	isMapping := c.resolve(root).Kind == yaml.MappingNode
	if c.check(p, "", root, reflect.TypeFor[file]()); !isMapping {
		return nil
	}
	var f file
	if err := root.Decode(&f); err != nil && len(p.List()) == 0 {
		p.Addf("", "%v", err)
	}
	if f.Campaigns == nil {
		p.Addf("campaigns", "missing (write `campaigns: []` for no campaigns)")
		return nil
	}
	cs := make([]*Campaign, 0, len(*f.Campaigns))
	for i := range *f.Campaigns {
		n, key := &(*f.Campaigns)[i], "campaigns["+strconv.Itoa(i)+"]"
		if isNull(c.resolve(n)) {
			p.Addf(key, "empty campaign")
			continue
		}
		before := len(p.List())
		c.check(p, key, n, typeOfSpec)
		var s Spec
		if err := n.Decode(&s); err != nil && len(p.List()) == before {
			p.Addf(key, "%v", err) // a problem the check missed: the campaign's others follow from it
		}
		cs = append(cs, k.campaign(i, &s))
	}
	return cs
}

// checker checks YAML nodes against the types they decode into, so that
// every problem is reported with its key path, and writes the scalars it
// accepts in the form yaml.v3 decodes into the type (a quoted "5" into an
// int, True into a bool).
//
// The nodes it checks through aliases are counted against maxAliasNodes
// (the file's own nodes are bounded by MaxFileSize), so a small file of
// aliases to big lists cannot make Parse work for long.
type checker struct {
	aliased    int // depth of aliases above the node being checked
	aliasNodes int
}

// check checks n, the value of key under p, against type t. Null is the
// zero value of any type.
func (c *checker) check(p *configs.Problems, key string, n *yaml.Node, t reflect.Type) {
	if t == typeOfNode {
		return
	}
	if n != nil && n.Kind == yaml.AliasNode {
		c.aliased++
		defer func() { c.aliased-- }()
	}
	if c.aliased > 0 {
		if c.aliasNodes++; c.aliasNodes > maxAliasNodes {
			panic(errTooManyNodes)
		}
	}
	if n = c.resolve(n); isNull(n) {
		return
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		if n.Kind != yaml.MappingNode {
			p.Addf(key, "must be a mapping of key: value")
			reject(n, t)
			return
		}
		c.mapping(p, key, n, t)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			p.Addf(key, "must be a list")
			reject(n, t)
			return
		}
		for i, it := range n.Content {
			ik := key + "[" + strconv.Itoa(i) + "]"
			if r := c.resolve(it); isNull(r) && r != nil && t.Elem() != typeOfNode {
				if t.Elem() == typeOfDaypart {
					p.Addf(ik, "empty daypart")
				} else {
					p.Addf(ik, "must not be empty")
				}
				reject(r, t.Elem())
				continue
			}
			c.check(p, ik, it, t.Elem())
		}
	default:
		if n.Kind != yaml.ScalarNode {
			p.Addf(key, "must be a single value, not a list or mapping")
			reject(n, t)
			return
		}
		c.scalar(p, key, n, t)
	}
}

// maxMapEntries bounds a multiplier table (yaml.v3's duplicate check is
// quadratic); the largest, by country, has one entry per country.
const maxMapEntries = 256

// mapping checks the keys and values of n against struct or map type t. It
// drops the pairs it reports (unknown, duplicate or merge keys), so that
// yaml.v3 decodes the rest.
func (c *checker) mapping(p *configs.Problems, key string, n *yaml.Node, t reflect.Type) {
	if t.Kind() == reflect.Map && len(n.Content)/2 > maxMapEntries {
		p.Addf(key, "has %d entries, more than %d", len(n.Content)/2, maxMapEntries)
		n.Content = nil
		return
	}
	sub := p.Sub(key)
	seen := make(map[string]bool, len(n.Content)/2)
	kept := n.Content[:0:0]
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, v := c.resolve(n.Content[i]), n.Content[i+1]
		if kn == nil || kn.Kind != yaml.ScalarNode {
			p.Addf(key, "keys must be plain strings")
			continue
		}
		k := pathKey(kn.Value)
		if kn.ShortTag() == "!!merge" {
			sub.Addf(k, "merge keys (<<) are not supported")
			continue
		}
		if seen[k] {
			sub.Addf(k, "duplicate key")
			continue
		}
		seen[k] = true
		if t.Kind() == reflect.Map {
			kn.Tag = "!!str"
			if r := c.resolve(v); isNull(r) && r != nil {
				sub.Addf(k, "must not be empty")
				reject(r, t.Elem())
			}
			c.check(sub, k, v, t.Elem())
			kept = append(kept, kn, v)
			continue
		}
		var known []string
		field := -1
		for j := range t.NumField() {
			if fk := configs.YAMLKey(t.Field(j)); fk != "" {
				known = append(known, fk)
				if fk == k {
					field = j
				}
			}
		}
		switch s := configs.Suggest(k, known); {
		case field >= 0:
			c.check(sub, k, v, t.Field(field).Type)
			kept = append(kept, kn, v)
		case s != "":
			sub.Addf(k, "unknown key (did you mean %q?)", s)
		default:
			sub.Addf(k, "unknown key (known: %s)", strings.Join(known, ", "))
		}
	}
	n.Content = kept
}

// scalar checks the scalar n against type t and writes it as yaml.v3
// decodes it into t.
func (c *checker) scalar(p *configs.Problems, key string, n *yaml.Node, t reflect.Type) {
	s := strings.TrimSpace(n.Value)
	switch t.Kind() {
	case reflect.Int, reflect.Int64:
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			p.Addf(key, "%q is not an integer", n.Value)
			reject(n, t)
			return
		}
		n.Tag, n.Value = "!!int", strconv.FormatInt(v, 10)
	case reflect.Bool:
		switch s {
		case "true", "True", "TRUE":
			n.Tag, n.Value = "!!bool", "true"
		case "false", "False", "FALSE":
			n.Tag, n.Value = "!!bool", "false"
		default:
			p.Addf(key, "%q is not true or false", n.Value)
			reject(n, t)
		}
	case reflect.Float64:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			p.Addf(key, "%q is not a number", n.Value)
			reject(n, t)
			return
		}
		n.Tag, n.Value = "!!float", strconv.FormatFloat(f, 'g', -1, 64)
	default: // strings
		n.Tag = "!!str"
	}
	n.Style = 0
}

// reject makes a value the check reported (or a null list item) the zero
// value of t, so that yaml.v3 decodes it as such, in its place in a list
// (the file is rejected; its other problems are still found).
func reject(n *yaml.Node, t reflect.Type) {
	z := yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Line: n.Line, Column: n.Column}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		z.Kind, z.Tag = yaml.MappingNode, "!!map"
	case reflect.Slice:
		z.Kind, z.Tag = yaml.SequenceNode, "!!seq"
	case reflect.Int, reflect.Int64:
		z.Tag, z.Value = "!!int", "0"
	case reflect.Bool:
		z.Tag, z.Value = "!!bool", "false"
	case reflect.Float64:
		z.Tag, z.Value = "!!float", "0"
	}
	*n = z
}

// resolve follows aliases.
func (c *checker) resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode; i++ {
		if i > 100 {
			return nil
		}
		n = n.Alias
	}
	return n
}

// pathKey is k as a key path names it: "" would name the mapping itself.
func pathKey(k string) string {
	if k == "" {
		return `""`
	}
	return k
}

func isNull(n *yaml.Node) bool {
	return n == nil || n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// lineOf returns the line of the value at key (a key path such as
// campaigns[2].creative.sizes[1]) in doc, or of the nearest value above it
// that doc has (the mapping a missing key belongs in); 0 if none. Of a
// duplicate key, the last is found.
func lineOf(doc *yaml.Node, key string) int {
	if key == "" || len(doc.Content) == 0 {
		return 0
	}
	line := 0
	for n := doc.Content[0]; n != nil && key != ""; {
		for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < 100; i++ {
			n = n.Alias
		}
		line = n.Line
		var next *yaml.Node
		if rest, ok := strings.CutPrefix(key, "["); ok {
			ix, after, _ := strings.Cut(rest, "]")
			i, err := strconv.Atoi(ix)
			if err == nil && n.Kind == yaml.SequenceNode && i >= 0 && i < len(n.Content) {
				next = n.Content[i]
			}
			key = after
		} else {
			key = strings.TrimPrefix(key, ".")
			j := strings.IndexAny(key, ".[")
			switch {
			case j == 0:
				return line // an empty key: no progress
			case j < 0:
				j = len(key)
			}
			for i := 0; n.Kind == yaml.MappingNode && i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == key[:j] {
					next = n.Content[i+1]
				}
			}
			key = key[j:]
		}
		if key == "" && next != nil {
			return next.Line
		}
		n = next
	}
	return line
}

// DecodeSpec decodes one campaign written as a YAML or JSON mapping (JSON
// is YAML: a table row's jsonb document) into a Spec, with Parse's checks
// of its keys and types: unknown keys (with a "did you mean"), duplicate
// keys and values of the wrong kind give a *ValidationError whose problems
// start with the key inside the campaign ("bid_cpm: ..."). Values are
// checked by Compile, not here. name is used in errors only.
func DecodeSpec(data []byte, name string) (s Spec, err error) {
	p := configs.NewFileProblems(nil, maxProblems)
	defer func() {
		if r := recover(); r != nil {
			msg := fmt.Sprint(r)
			if r != errTooManyNodes { //nolint:errorlint // sentinel panic value
				msg = "yaml: cannot parse: " + msg
			}
			s, err = Spec{}, &ValidationError{Name: name, Problems: append(p.List(), msg)}
		}
	}()
	if len(data) > MaxFileSize {
		p.Addf("", "larger than %d bytes", MaxFileSize)
	} else {
		var doc yaml.Node
		if err := yaml.Unmarshal(data, &doc); err != nil {
			p.Addf("", "%v", err)
		} else if c := (&checker{}); doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 || isNull(c.resolve(doc.Content[0])) {
			p.Addf("", "empty campaign")
		} else {
			n := doc.Content[0]
			c.check(p, "", n, typeOfSpec)
			if err := n.Decode(&s); err != nil && len(p.List()) == 0 {
				p.Addf("", "%v", err)
			}
		}
	}
	if probs := p.List(); len(probs) > 0 {
		return Spec{}, &ValidationError{Name: name, Problems: probs}
	}
	return s, nil
}
