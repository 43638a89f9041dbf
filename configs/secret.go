package configs

import (
	"errors"
	"fmt"
	"os"
	"reflect"
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
// declaration order.
func SecretKeys() []string { return secretKeys() }

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
			case isSecret(f):
				keys = append(keys, joinKey(prefix, key))
			}
		}
	}
	walk(typeOfConfig, "")
	return keys
})

// IsSecret reports whether key (dotted, or its <key>_file form) is a
// secret setting.
func IsSecret(key string) bool {
	key = strings.TrimSuffix(key, FileSuffix)
	for _, k := range secretKeys() {
		if k == key {
			return true
		}
	}
	return false
}

// secretFileKey returns the secret setting that key, "<secret>_file", names.
func secretFileKey(key string) (string, bool) {
	base, ok := strings.CutSuffix(key, FileSuffix)
	if !ok {
		return "", false
	}
	for _, k := range secretKeys() {
		if k == base {
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
// newline; what names the setting in errors.
func (c *Config) setFromFile(key, what, file string) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrSecretFile, what, err)
	}
	v, err := lookup(c, key)
	if err != nil {
		return err
	}
	value := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	if why := setString(v, value); why != "" {
		return fmt.Errorf("%w for %s: content of %s (%s)", ErrInvalidValue, what, file, why)
	}
	return nil
}

// checkNotMasked reports a secret whose value is Mask: a config printed by
// `rtbd config` and loaded again.
func checkNotMasked(c *Config, p *Problems) {
	c.eachSecret(func(key string, v reflect.Value) {
		masked := v.Kind() == reflect.String && v.String() == Mask
		for i := 0; v.Kind() == reflect.Slice && i < v.Len(); i++ {
			masked = masked || v.Index(i).String() == Mask
		}
		if masked {
			p.Addf(key, "is %q, how `rtbd config` hides a secret: give the secret itself (environment or %s%s)", Mask, key, FileSuffix)
		}
	})
}

// eachSecret calls fn with every secret setting of c.
func (c *Config) eachSecret(fn func(key string, v reflect.Value)) {
	v := valueOf(c)
	for _, key := range secretKeys() {
		fv := v
		for _, part := range strings.Split(key, ".") {
			idx, _ := fieldByKey(fv.Type(), part)
			fv = fv.Field(idx)
		}
		fn(key, fv)
	}
}

// Masked returns a copy of c whose secret settings that have a value show
// as Mask (each item of a list): the one way a config is shown (YAML, logs,
// debug output). c is unchanged.
func (c *Config) Masked() *Config {
	m := *c
	m.eachSecret(func(_ string, fv reflect.Value) {
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
