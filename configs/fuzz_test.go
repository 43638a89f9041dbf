package configs

import (
	"reflect"
	"strings"
	"testing"
)

// FuzzDecode feeds arbitrary config files to the decoder: it must never
// panic, and a file it accepts must survive YAML() and decode again to the
// same Config.
func FuzzDecode(f *testing.F) {
	f.Add(defaultYAML)
	f.Add([]byte("mode: catalog\ncatalog:\n  call_timeout: 75ms\n  tls: {cert_file: a, key_file: b}\n"))
	f.Add([]byte("catalog:\n  block_cache: 1\n  call_timeout: 50\n"))
	f.Add([]byte("a: &x {b: 1}\ncatalog: *x\n"))
	f.Add([]byte("catalog:\n  <<: {max_ids: 5}\n"))
	f.Add([]byte("- 1\n- 2\n"))
	f.Add([]byte("catalog:\n  data:\n"))
	f.Add([]byte("mode: x\n---\nmode: y\n"))
	f.Add([]byte("{catalog: {max_concurrent_streams: 99999999999}}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c := mustDefault(t)
		if err := c.decode("fuzz.yaml", data); err != nil {
			if !strings.HasPrefix(err.Error(), "configs: ") {
				t.Fatalf("error without package prefix: %v", err)
			}
			return
		}
		_ = c.Validate() // must not panic
		out, err := c.YAML()
		if err != nil {
			t.Fatalf("YAML of an accepted config: %v", err)
		}
		back := mustDefault(t)
		if err := back.decode("yaml-out", out); err != nil {
			t.Fatalf("YAML() output rejected: %v\n%s", err, out)
		}
		if !reflect.DeepEqual(c, back) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", back, c)
		}
	})
}

// FuzzSet feeds arbitrary keys and values to Set (what flags and the
// environment reach): no panic, and a value it accepts reads back with Get
// and sets again to the same Config.
func FuzzSet(f *testing.F) {
	for _, kv := range [][2]string{
		{"catalog.block_cache_mb", "128"},
		{"catalog.call_timeout", "50ms"},
		{"catalog.tls.cert_file", "a.pem"},
		{"catalog.max_concurrent_streams", "-1"},
		{"catalog", "x"},
		{"catalog..x", ""},
		{"mode", "catalog"},
		{".", "."},
	} {
		f.Add(kv[0], kv[1])
	}
	f.Fuzz(func(t *testing.T, key, value string) {
		c := mustDefault(t)
		if err := c.Set(key, value); err != nil {
			return
		}
		_ = c.Validate()
		s, err := c.Get(key)
		if err != nil {
			t.Fatalf("Get(%q) after Set: %v", key, err)
		}
		d := mustDefault(t)
		if err := d.Set(key, s); err != nil {
			t.Fatalf("Set(%q, Get() = %q): %v", key, s, err)
		}
		if !reflect.DeepEqual(c, d) {
			t.Fatalf("Set(%q, %q) then Get/Set: %+v != %+v", key, value, c, d)
		}
	})
}
