// Command decgen writes rtb's bid request decoder (rtb/jsondec_gen.go):
// one function per struct type reachable from openrtb2.BidRequest, each
// matching the JSON keys of its fields (as encoding/json names them) and
// calling the runtime in rtb/jsondec.go for each field's type. Run by
// `go generate ./rtb` (`make generate`); TestUpToDate fails when the
// committed file differs from what this would write, e.g. after an
// upgrade of github.com/prebid/openrtb.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"go/format"
	"os"
	"reflect"
	"strings"

	"github.com/prebid/openrtb/v20/openrtb2"
)

func main() {
	out := flag.String("out", "jsondec_gen.go", "file to write")
	flag.Parse()
	src, err := generate(reflect.TypeFor[openrtb2.BidRequest]())
	if err != nil {
		fmt.Fprintln(os.Stderr, "decgen:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(*out, src, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "decgen:", err)
		os.Exit(1)
	}
}

var rawMessage = reflect.TypeFor[json.RawMessage]()

// extHooks are the ext fields whose members the decoder reads into rtb.Exts
// as it keeps their raw value (rtb/exts.go): struct.field -> the decoder
// method called in place of d.raw. generate fails when one is not found.
var extHooks = map[string]string{
	"BidRequest.Ext": "d.extRequest",
	"Regs.Ext":       "d.extRegs",
	"User.Ext":       "d.extUser",
	"Source.Ext":     "d.extSource",
}

// field is one decodable struct field.
type field struct {
	goName, jsonName string
	typ              reflect.Type
}

// fields returns t's fields as encoding/json sees them: exported, not
// tagged "-", named by the tag or else the Go name.
func fields(t reflect.Type) ([]field, error) {
	var fs []field
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			return nil, fmt.Errorf("%s.%s: embedded fields are not supported", t, f.Name)
		}
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if opts != "" && opts != "omitempty" {
			return nil, fmt.Errorf("%s.%s: tag option %q is not supported", t, f.Name, opts)
		}
		if name == "" {
			name = f.Name
		}
		fs = append(fs, field{goName: f.Name, jsonName: name, typ: f.Type})
	}
	return fs, nil
}

type gen struct {
	structs []reflect.Type // in the order found
	seen    map[reflect.Type]bool
	pkgs    map[string]string // import path -> name
	hooked  map[string]bool   // extHooks used
}

// qual is t's name as the generated file spells it.
func (g *gen) qual(t reflect.Type) string {
	if t.PkgPath() == "" {
		return t.Name()
	}
	name := t.PkgPath()[strings.LastIndex(t.PkgPath(), "/")+1:]
	g.pkgs[t.PkgPath()] = name
	return name + "." + t.Name()
}

// fn is the decoding function for a value of type t.
func (g *gen) fn(t reflect.Type) (string, error) {
	switch t.Kind() {
	case reflect.String:
		if t.Name() != "string" {
			return "", fmt.Errorf("%s: named string types are not supported", t)
		}
		return "decString", nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "decInt[" + g.qual(t) + "]", nil
	case reflect.Float64:
		if t.Name() != "float64" {
			return "", fmt.Errorf("%s: named float types are not supported", t)
		}
		return "decFloat", nil
	case reflect.Struct:
		if !g.seen[t] {
			g.seen[t] = true
			g.structs = append(g.structs, t)
		}
		return "dec" + t.Name(), nil
	}
	return "", fmt.Errorf("%s: type not supported", t)
}

// call is the expression decoding field f of v, true unless the JSON type
// does not fit.
func (g *gen) call(s reflect.Type, f field) (string, error) {
	addr := "&v." + f.goName
	t := f.typ
	switch hook, ok := extHooks[s.Name()+"."+f.goName]; {
	case ok && t == rawMessage:
		g.hooked[s.Name()+"."+f.goName] = true
		return hook + "(" + addr + ")", nil
	case ok:
		return "", fmt.Errorf("%s.%s: an ext hook on a field that is not a json.RawMessage", s, f.goName)
	case t == rawMessage:
		return "d.raw(" + addr + ")", nil
	case t.Kind() == reflect.Pointer:
		fn, err := g.fn(t.Elem())
		return "decPtr(d, " + addr + ", " + fn + ")", err
	case t.Kind() == reflect.Slice:
		fn, err := g.fn(t.Elem())
		return "decSlice(d, " + addr + ", " + fn + ")", err
	}
	fn, err := g.fn(t)
	return fn + "(d, " + addr + ")", err
}

func generate(root reflect.Type) ([]byte, error) {
	g := &gen{seen: map[reflect.Type]bool{}, pkgs: map[string]string{}, hooked: map[string]bool{}}
	g.fn(root)
	var body bytes.Buffer
	for i := 0; i < len(g.structs); i++ { // g.structs grows as fields are seen
		t := g.structs[i]
		fs, err := fields(t)
		if err != nil {
			return nil, err
		}
		n := t.Name()
		fmt.Fprintf(&body, "\n// dec%s decodes a %s.\nfunc dec%s(d *decoder, v *%s) bool {\n", n, g.qual(t), n, g.qual(t))
		fmt.Fprintf(&body, "switch d.open() {\ncase openNull:\nreturn true\ncase openOther:\nreturn false\n}\n")
		fmt.Fprintf(&body, "for ok := d.first(); ok; ok = d.next() {\nswitch field%s(d.key) {\n", n)
		for j, f := range fs {
			c, err := g.call(t, f)
			if err != nil {
				return nil, fmt.Errorf("%s.%s: %w", t, f.goName, err)
			}
			fmt.Fprintf(&body, "case %d:\nif !%s {\nd.typeErr(%q, %q)\n}\n", j, c, n, f.goName)
		}
		fmt.Fprintf(&body, "default:\nd.skip()\n}\n}\nreturn true\n}\n")
		fmt.Fprintf(&body, "\n// names%s are %s's JSON keys, by field number.\nvar names%s = [...]string{", n, n, n)
		for _, f := range fs {
			fmt.Fprintf(&body, "%q, ", f.jsonName)
		}
		fmt.Fprintf(&body, "}\n\n// field%s is the number of %s's field for key k, or -1.\nfunc field%s(k []byte) int {\nswitch string(k) {\n", n, n, n)
		for j, f := range fs {
			fmt.Fprintf(&body, "case %q:\nreturn %d\n", f.jsonName, j)
		}
		fmt.Fprintf(&body, "}\nreturn foldField(k, names%s[:])\n}\n", n)
	}
	for h := range extHooks {
		if !g.hooked[h] {
			return nil, fmt.Errorf("ext hook %s: no such field", h)
		}
	}
	var src bytes.Buffer
	src.WriteString("// Code generated by rtb/internal/decgen; DO NOT EDIT.\n\npackage rtb\n\nimport (\n")
	for _, p := range []string{"github.com/prebid/openrtb/v20/adcom1", "github.com/prebid/openrtb/v20/openrtb2"} {
		if _, ok := g.pkgs[p]; ok {
			fmt.Fprintf(&src, "%q\n", p)
			delete(g.pkgs, p)
		}
	}
	if len(g.pkgs) > 0 {
		return nil, fmt.Errorf("unexpected packages %v", g.pkgs)
	}
	src.WriteString(")\n")
	src.Write(body.Bytes())
	return format.Source(src.Bytes())
}
