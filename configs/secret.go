package configs

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
)

// Secret settings are the fields tagged `secret:"true"` (token keys, price
// keys, passwords, DSNs): Masked shows them as Mask wherever the config is
// shown, and each may also be given as "<key>_file" (in the file, as
// RTBD_<KEY>_FILE or with Set), the path of a file holding the value.

// Mask is what a secret setting with a value shows as.
const Mask = "***"

// FileSuffix turns a secret's key into the key of the file holding it:
// "bidder.token_keys_file".
const FileSuffix = "_file"

// ErrSecretFile: a <key>_file names a file that cannot be read.
var ErrSecretFile = errors.New("configs: secret file")

func isSecret(f reflect.StructField) bool { return f.Tag.Get("secret") == "true" }

// SecretKeys returns the dotted keys of the secret settings, in
// declaration order. A secret inside a map of sections (exchanges) is
// listed with "*" for the entry's name: "exchanges.*.price_keys.encryption".
func SecretKeys() []string { return secretKeys() }

// AnyName is the path segment of SecretKeys that stands for the name of an
// entry of a map of sections.
const AnyName = "*"

var secretKeys = sync.OnceValue(func() []string {
	var keys []string
	var walk func(t reflect.Type, prefix string)
	walk = func(t reflect.Type, prefix string) {
		for i := range t.NumField() {
			f := t.Field(i)
			key := keyOf(f)
			switch {
			case key == "":
			case isSection(f.Type):
				walk(f.Type, joinKey(prefix, key))
			case isSectionMap(f.Type):
				walk(f.Type.Elem(), joinKey(joinKey(prefix, key), AnyName))
			case isSecret(f):
				keys = append(keys, joinKey(prefix, key))
			}
		}
	}
	walk(typeOfConfig, "")
	return keys
})

// matchKey reports whether key is the secret key pattern k (AnyName
// matching one segment, a name).
func matchKey(k, key string) bool {
	for {
		kp, krest, kmore := strings.Cut(k, ".")
		p, rest, more := strings.Cut(key, ".")
		if kp != p && (kp != AnyName || p == "") || kmore != more {
			return false
		}
		if !more {
			return true
		}
		k, key = krest, rest
	}
}

// IsSecret reports whether key (dotted, or its <key>_file form) is a
// secret setting; a key inside a map of sections names its entry
// ("exchanges.pbs.price_keys.encryption").
func IsSecret(key string) bool {
	_, ok := secretFileKey(strings.TrimSuffix(key, FileSuffix) + FileSuffix)
	return ok
}

// secretFileKey returns the secret setting that key, "<secret>_file", names.
func secretFileKey(key string) (string, bool) {
	base, ok := strings.CutSuffix(key, FileSuffix)
	if !ok {
		return "", false
	}
	for _, k := range secretKeys() {
		if matchKey(k, base) {
			return base, true
		}
	}
	return "", false
}

// secretFile is a "<key>_file" entry of a config file.
type secretFile struct {
	key, file string
	line      int
}

// setFromFile sets the secret key to the content of file, less its trailing
// newline; what names the setting in errors. A key inside a map of
// sections sets that entry (made if missing).
func (c *Config) setFromFile(key, what, file string) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrSecretFile, what, err)
	}
	value := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	var why string
	found := setPath(valueOf(c), strings.Split(key, "."), func(v reflect.Value) { why = setString(v, value) })
	if !found {
		return fmt.Errorf("%w %q", ErrUnknownKey, key)
	}
	if why != "" {
		return fmt.Errorf("%w for %s: content of %s (%s)", ErrInvalidValue, what, file, why)
	}
	return nil
}

// setPath calls set with the setting at parts below the struct value v
// (addressable), walking into maps of sections (an entry is copied, set
// and stored back); false if parts name no setting.
func setPath(v reflect.Value, parts []string, set func(reflect.Value)) bool {
	idx, ok := fieldByKey(v.Type(), parts[0])
	if !ok {
		return false
	}
	fv := v.Field(idx)
	switch {
	case len(parts) == 1:
		if isSection(fv.Type()) || isSectionMap(fv.Type()) {
			return false
		}
		set(fv)
		return true
	case isSection(fv.Type()):
		return setPath(fv, parts[1:], set)
	case isSectionMap(fv.Type()) && len(parts) > 2:
		name := reflect.ValueOf(parts[1]).Convert(fv.Type().Key())
		e := reflect.New(fv.Type().Elem()).Elem()
		if old := fv.MapIndex(name); old.IsValid() {
			e.Set(old)
		}
		if !setPath(e, parts[2:], set) {
			return false
		}
		if fv.IsNil() {
			fv.Set(reflect.MakeMap(fv.Type()))
		}
		fv.SetMapIndex(name, e)
		return true
	}
	return false
}

// checkNotMasked reports a secret whose value is Mask: a config printed by
// `rtbd config` and loaded again.
func checkNotMasked(c *Config, p *Problems) {
	c.eachSecret(false, func(key string, v reflect.Value) {
		masked := v.Kind() == reflect.String && v.String() == Mask
		for i := 0; v.Kind() == reflect.Slice && i < v.Len(); i++ {
			masked = masked || v.Index(i).String() == Mask
		}
		if masked {
			p.Addf(key, "is %q, how `rtbd config` hides a secret: give the secret itself (environment or %s%s)", Mask, key, FileSuffix)
		}
	})
}

// eachSecret calls fn with every secret setting of c, with its dotted key
// (an entry of a map of sections by its name). fn may change the value: an
// entry of a map is walked as a copy and stored back, into a new map when
// clone is set (so that a shallow copy of a Config leaves the original's
// maps alone).
func (c *Config) eachSecret(clone bool, fn func(key string, v reflect.Value)) {
	walkSecrets(valueOf(c), "", clone, fn)
}

func walkSecrets(v reflect.Value, prefix string, clone bool, fn func(key string, v reflect.Value)) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		key := keyOf(f)
		fv := v.Field(i)
		switch {
		case key == "":
		case isSection(f.Type):
			walkSecrets(fv, joinKey(prefix, key), clone, fn)
		case isSectionMap(f.Type):
			if fv.Len() == 0 {
				continue
			}
			m := fv
			if clone {
				m = reflect.MakeMapWithSize(f.Type, fv.Len())
			}
			keys := fv.MapKeys()
			slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
			for _, name := range keys {
				e := reflect.New(f.Type.Elem()).Elem()
				e.Set(fv.MapIndex(name))
				walkSecrets(e, joinKey(joinKey(prefix, key), name.String()), clone, fn)
				m.SetMapIndex(name, e)
			}
			fv.Set(m)
		case isSecret(f):
			fn(joinKey(prefix, key), fv)
		}
	}
}

// Masked returns a copy of c whose secret settings that have a value show
// as Mask (each item of a list): the one way a config is shown (YAML, logs,
// debug output). c is unchanged.
func (c *Config) Masked() *Config {
	m := *c
	m.eachSecret(true, func(_ string, fv reflect.Value) {
		switch fv.Kind() {
		case reflect.String:
			if fv.Len() > 0 {
				fv.SetString(Mask)
			}
		case reflect.Slice:
			masked := reflect.MakeSlice(fv.Type(), fv.Len(), fv.Len())
			for i := range fv.Len() {
				masked.Index(i).SetString(Mask)
			}
			if fv.Len() > 0 {
				fv.Set(masked)
			}
		}
	})
	return &m
}
