package configs

import (
	"encoding"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// The generic machinery below walks Config by its yaml tags, so that a new
// section gets file checking, environment overrides, Set/Get and validation
// without code of its own. A struct field is a section (walked into) unless
// its type decodes itself (encoding.TextUnmarshaler or yaml.Unmarshaler);
// every other field is a setting (a leaf).

var (
	typeOfConfig          = reflect.TypeFor[Config]()
	typeOfDuration        = reflect.TypeFor[time.Duration]()
	typeOfTextUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
	typeOfTextMarshaler   = reflect.TypeFor[encoding.TextMarshaler]()
	typeOfYAMLUnmarshaler = reflect.TypeFor[yaml.Unmarshaler]()
)

// validator is implemented by every section: Validate adds the section's
// problems to p, with keys relative to the section (p adds the prefix).
type validator interface {
	Validate(p *Problems)
}

func valueOf(c *Config) reflect.Value { return reflect.ValueOf(c).Elem() }

// keyOf returns the YAML key of a struct field, "" if the field is not a
// setting (unexported or tagged "-").
func keyOf(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	switch name {
	case "-":
		return ""
	case "":
		return strings.ToLower(f.Name) // yaml.v3's default
	}
	return name
}

// isSection reports whether a field of type t is a section to walk into.
func isSection(t reflect.Type) bool {
	if t.Kind() != reflect.Struct {
		return false
	}
	pt := reflect.PointerTo(t)
	return !pt.Implements(typeOfTextUnmarshaler) && !pt.Implements(typeOfYAMLUnmarshaler)
}

// isSectionMap reports whether a field of type t is a map of sections by
// name (Exchanges): neither a setting nor a section of fixed keys. Its
// entries are checked and validated like sections, as KEY.NAME; they are
// set in files only (Keys, the environment and Set do not reach them, but
// for a secret's "<key>_file", which Set takes too). Secret settings inside
// one are masked by Masked, listed by SecretKeys with "*" for the name,
// and may be given as "<key>_file" in the file.
func isSectionMap(t reflect.Type) bool {
	return t.Kind() == reflect.Map && t.Key().Kind() == reflect.String && isSection(t.Elem())
}

// YAMLKey returns the YAML key of a struct field as yaml.v3 reads it, ""
// if yaml.v3 skips the field.
func YAMLKey(f reflect.StructField) string { return keyOf(f) }

func joinKey(prefix, key string) string {
	switch {
	case prefix == "":
		return key
	case key == "":
		return prefix
	}
	return prefix + "." + key
}

// fieldByKey returns the index of the field of struct type t whose key is key.
func fieldByKey(t reflect.Type, key string) (int, bool) {
	for i := range t.NumField() {
		if k := keyOf(t.Field(i)); k != "" && k == key {
			return i, true
		}
	}
	return 0, false
}

// keysOf lists the keys of struct type t, for error messages.
func keysOf(t reflect.Type) string {
	var keys []string
	for i := range t.NumField() {
		if k := keyOf(t.Field(i)); k != "" {
			keys = append(keys, k)
		}
	}
	return strings.Join(keys, ", ")
}

// walkLeaves calls fn for every setting below the struct value v, in
// declaration order, with its dotted key.
func walkLeaves(v reflect.Value, prefix string, fn func(path string, v reflect.Value)) {
	t := v.Type()
	for i := range t.NumField() {
		key := keyOf(t.Field(i))
		if key == "" {
			continue
		}
		path, fv := joinKey(prefix, key), v.Field(i)
		switch {
		case isSection(fv.Type()):
			walkLeaves(fv, path, fn)
			continue
		case isSectionMap(fv.Type()):
			continue
		}
		fn(path, fv)
	}
}

// validateSections calls Validate on every section below the struct value v
// (at any depth) that has one, with problems scoped to the section's key.
func validateSections(v reflect.Value, p *Problems) {
	t := v.Type()
	for i := range t.NumField() {
		key := keyOf(t.Field(i))
		fv := v.Field(i)
		if key != "" && isSectionMap(fv.Type()) {
			validateSectionMap(fv, p.Sub(key))
			continue
		}
		if key == "" || !isSection(fv.Type()) {
			continue
		}
		sub := p.Sub(key)
		if val, ok := fv.Interface().(validator); ok {
			val.Validate(sub)
		} else if val, ok := fv.Addr().Interface().(validator); ok {
			val.Validate(sub)
		}
		validateSections(fv, sub)
	}
}

// validateSectionMap validates a map of sections: the map itself (its
// names) when it has a Validate method, then each entry as NAME, in name
// order.
func validateSectionMap(m reflect.Value, p *Problems) {
	if val, ok := m.Interface().(validator); ok {
		val.Validate(p)
	}
	keys := m.MapKeys()
	slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
	for _, k := range keys {
		e := reflect.New(m.Type().Elem()).Elem()
		e.Set(m.MapIndex(k))
		sub := p.Sub(k.String())
		if val, ok := e.Addr().Interface().(validator); ok {
			val.Validate(sub)
		}
		validateSections(e, sub)
	}
}

// lookup returns the settable value of the setting key (dotted).
func lookup(c *Config, key string) (reflect.Value, error) {
	v := valueOf(c)
	parts := strings.Split(key, ".")
	for i, part := range parts {
		idx, ok := fieldByKey(v.Type(), part)
		if !ok {
			return reflect.Value{}, fmt.Errorf("%w %q", ErrUnknownKey, key)
		}
		v = v.Field(idx)
		last := i == len(parts)-1
		switch {
		case isSection(v.Type()) && last:
			return reflect.Value{}, fmt.Errorf("%w %q: it is a section, set one of its keys (%s)",
				ErrUnknownKey, key, keysOf(v.Type()))
		case !isSection(v.Type()) && !last:
			return reflect.Value{}, fmt.Errorf("%w %q", ErrUnknownKey, key)
		}
	}
	return v, nil
}

// setString parses s as the type of v and stores it. It returns "" on
// success, else what the value should look like; v is unchanged then.
func setString(v reflect.Value, s string) string {
	if reflect.PointerTo(v.Type()).Implements(typeOfTextUnmarshaler) {
		tmp := reflect.New(v.Type()) // parse aside: v stays unchanged on error
		if err := tmp.Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s)); err != nil {
			return err.Error()
		}
		v.Set(tmp.Elem())
		return ""
	}
	t := strings.TrimSpace(s)
	if v.Type() == typeOfDuration {
		d, err := time.ParseDuration(t)
		if err != nil {
			return want(v.Type())
		}
		v.SetInt(int64(d))
		return ""
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(s)
	case reflect.Bool:
		b, err := strconv.ParseBool(t)
		if err != nil {
			return want(v.Type())
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(t, 10, v.Type().Bits())
		if err != nil {
			return numError(err, v.Type())
		}
		v.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, err := strconv.ParseUint(t, 10, v.Type().Bits())
		if err != nil {
			return numError(err, v.Type())
		}
		v.SetUint(n)
	case reflect.Float32, reflect.Float64:
		f, err := strconv.ParseFloat(t, v.Type().Bits())
		if err != nil {
			return numError(err, v.Type())
		}
		v.SetFloat(f)
	case reflect.Slice:
		if v.Type().Elem().Kind() != reflect.String {
			return fmt.Sprintf("a %s cannot be set from a string; set it in the file", v.Type())
		}
		list := reflect.MakeSlice(v.Type(), 0, strings.Count(s, ",")+1)
		for _, item := range strings.Split(s, ",") {
			if item = strings.TrimSpace(item); item != "" {
				list = reflect.Append(list, reflect.ValueOf(item).Convert(v.Type().Elem()))
			}
		}
		v.Set(list)
	default:
		return fmt.Sprintf("a %s cannot be set from a string; set it in the file", v.Type())
	}
	return ""
}

func numError(err error, t reflect.Type) string {
	if errors.Is(err, strconv.ErrRange) {
		return "out of range for " + t.String()
	}
	return want(t)
}

// want describes the values a setting of type t accepts.
func want(t reflect.Type) string {
	if t == typeOfDuration {
		return `want a duration like "50ms" or "30s"`
	}
	switch t.Kind() {
	case reflect.String:
		return "want a string"
	case reflect.Bool:
		return "want true or false"
	case reflect.Int:
		return "want an integer"
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "want an integer that fits in " + t.String()
	case reflect.Uint:
		return "want a non-negative integer"
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "want a non-negative integer that fits in " + t.String()
	case reflect.Float32, reflect.Float64:
		return "want a number"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.String {
			return "want a list of strings"
		}
	}
	return "want a " + t.String()
}

// formatValue returns the string form of a setting, as setString accepts it.
func formatValue(v reflect.Value) string {
	if v.Type() == typeOfDuration {
		return time.Duration(v.Int()).String()
	}
	if v.Type().Implements(typeOfTextMarshaler) {
		b, err := v.Interface().(encoding.TextMarshaler).MarshalText()
		if err == nil {
			return string(b)
		}
	}
	if v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.String {
		items := make([]string, v.Len())
		for i := range items {
			items[i] = v.Index(i).String()
		}
		return strings.Join(items, ",")
	}
	return fmt.Sprint(v.Interface())
}

// checkNode checks a YAML mapping n against the section type t before it is
// decoded: every key must name a field, every value must decode into its
// field's type. All problems go to fe, each with file, line and dotted key.
//
// A "<key>_file" entry of a secret setting is appended to files and removed
// from n (it is no field: decoding reads the rest).
func checkNode(fe *FileError, name string, n *yaml.Node, t reflect.Type, prefix string, files *[]secretFile) {
	where := "the top level"
	if prefix != "" {
		where = prefix
	}
	if n = mappingNode(fe, name, n, where, "a mapping of settings"); n == nil {
		return
	}
	seen := make(map[string]int)
	kept := n.Content[:0:0]
	defer func() { n.Content = kept }()
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if base, ok := strings.CutSuffix(k.Value, FileSuffix); ok && k.Kind == yaml.ScalarNode {
			if idx, ok := fieldByKey(t, base); ok && isSecret(t.Field(idx)) {
				path := joinKey(prefix, base)
				if val.Kind != yaml.ScalarNode || val.Tag == "!!null" || val.Value == "" {
					fe.add(ErrInvalidValue, "%s:%d: %s%s: want a file path, got %s", name, val.Line, path, FileSuffix, describe(val))
					continue
				}
				*files = append(*files, secretFile{key: path, file: val.Value, line: k.Line})
				continue
			}
		}
		kept = append(kept, k, val)
		if k.Kind != yaml.ScalarNode {
			fe.add(ErrInvalidValue, "%s:%d: %s: keys must be plain names", name, k.Line, joinKey(prefix, "?"))
			continue
		}
		if k.Tag == "!!merge" {
			continue // "<<: *anchor": left to the strict decoder
		}
		path := joinKey(prefix, k.Value)
		if first, dup := seen[k.Value]; dup {
			fe.add(ErrInvalidValue, "%s:%d: %s: duplicate key (first at line %d)", name, k.Line, path, first)
			continue
		}
		seen[k.Value] = k.Line
		idx, ok := fieldByKey(t, k.Value)
		if !ok {
			where := "top-level keys"
			if prefix != "" {
				where = prefix + " keys"
			}
			fe.add(ErrUnknownKey, "%s:%d: unknown key %q (%s: %s)", name, k.Line, path, where, keysOf(t))
			continue
		}
		ft := t.Field(idx).Type
		if isSection(ft) {
			checkNode(fe, name, val, ft, path, files)
			continue
		}
		if isSectionMap(ft) {
			checkMapNode(fe, name, val, ft.Elem(), path, files)
			continue
		}
		checkLeaf(fe, name, val, ft, path)
	}
}

// mappingNode returns the YAML mapping n is (through an alias), or nil: for
// a key with nothing below it ("section:", nothing to check), and for any
// other node, reported in fe as not the mapping that where wants.
func mappingNode(fe *FileError, name string, n *yaml.Node, where, want string) *yaml.Node {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	switch {
	case n.Kind == yaml.MappingNode:
		return n
	case n.Kind == yaml.ScalarNode && n.Tag == "!!null":
		return nil
	}
	fe.add(ErrInvalidValue, "%s:%d: %s: want %s, got %s", name, n.Line, where, want, describe(n))
	return nil
}

// checkMapNode checks the YAML mapping n of a map of sections (isSectionMap):
// each entry's name must be a plain key, given once; its value is checked
// as a section of type elem. The names themselves are checked by the map's
// Validate.
func checkMapNode(fe *FileError, name string, n *yaml.Node, elem reflect.Type, prefix string, files *[]secretFile) {
	if n = mappingNode(fe, name, n, prefix, "a mapping of names to settings"); n == nil {
		return
	}
	seen := make(map[string]int)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.Tag == "!!merge" {
			fe.add(ErrInvalidValue, "%s:%d: %s: keys must be plain names", name, k.Line, joinKey(prefix, "?"))
			continue
		}
		path := joinKey(prefix, k.Value)
		if first, dup := seen[k.Value]; dup {
			fe.add(ErrInvalidValue, "%s:%d: %s: duplicate key (first at line %d)", name, k.Line, path, first)
			continue
		}
		seen[k.Value] = k.Line
		checkNode(fe, name, val, elem, path, files)
	}
}

func checkLeaf(fe *FileError, name string, n *yaml.Node, t reflect.Type, path string) {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		fe.add(ErrInvalidValue, `%s:%d: %s: no value (write "" for an empty string or [] for an empty list; remove the key to keep the default)`,
			name, n.Line, path)
		return
	}
	if err := n.Decode(reflect.New(t).Interface()); err != nil {
		fe.add(ErrInvalidValue, "%s:%d: %s: invalid value %s (%s)", name, n.Line, path, describe(n), want(t))
	}
}

// describe shows a YAML value in an error message.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Tag == "!!str" {
			return strconv.Quote(n.Value)
		}
		return n.Value
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	}
	return "an unsupported YAML value"
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
