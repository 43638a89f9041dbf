package configs

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// writeFile writes a config file into a temp dir and returns its path.
func writeFile(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "rtbd.yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// mustDefault returns the embedded defaults.
// setting is one key=value set on the default config and the problem
// Validate must report for it alone ("" = valid).
type setting struct {
	key, value string
	problem    string
}

// checkSettings sets each key=value on a fresh default config and checks
// that Validate accepts it or reports exactly its one problem.
func checkSettings(t *testing.T, tests []setting) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.key+"="+tt.value, func(t *testing.T) {
			c := mustDefault(t)
			if err := c.Set(tt.key, tt.value); err != nil {
				t.Fatal(err)
			}
			err := c.Validate()
			switch {
			case tt.problem == "" && err != nil:
				t.Fatalf("Validate rejected a good value: %v", err)
			case tt.problem != "" && err == nil:
				t.Fatalf("Validate accepted %s=%q", tt.key, tt.value)
			case tt.problem != "" && !strings.HasPrefix(err.Error(), tt.problem):
				t.Fatalf("Validate = %q, want it to start with %q", err, tt.problem)
			case tt.problem != "" && strings.Contains(err.Error(), "\n"):
				t.Fatalf("one bad setting gave several problems: %v", err)
			}
		})
	}
}

func mustDefault(t testing.TB) *Config {
	t.Helper()
	c, err := Default()
	if err != nil {
		t.Fatalf("Default: %v", err)
	}
	return c
}

func TestDefaultsLoadAndValidate(t *testing.T) {
	c, err := load("", nil)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults do not validate:\n%v", err)
	}
	want := Config{
		Mode:  ModeBidder,
		Log:   Log{Level: "info", Format: LogFormatAuto},
		Admin: Admin{Listen: "", Pprof: true, ReadyCatalogGrace: 5 * time.Second},
		Catalog: Catalog{
			Data:                 "./data/catalog",
			Target:               "",
			GRPCListen:           "127.0.0.1:9090",
			BlockCacheMB:         64,
			HotCacheEntries:      50000,
			MaxIDs:               1000,
			RefreshInterval:      30 * time.Second,
			ConnsPerNode:         2,
			CallTimeout:          50 * time.Millisecond,
			NearCacheBytes:       256 << 20,
			NearCacheGrace:       30 * time.Second,
			NearCacheMaxAge:      5 * time.Minute,
			WatchInterval:        time.Second,
			TLS:                  TLS{},
			GracefulTimeout:      10 * time.Second,
			MaxConcurrentStreams: 256,
			MaxConns:             1024,
			MaxConnsPerAddr:      256,
			HandshakeTimeout:     5 * time.Second,
			MaxConnAge:           30 * time.Minute,
			MaxConnAgeGrace:      30 * time.Second,
			KeepaliveMinTime:     5 * time.Second,
			MaxCallTime:          5 * time.Second,
			MaxConnUnreadBytes:   1 << 20,
		},
	}
	// Sections added later are checked by their own tests; this pins the
	// ones above.
	want.Bidder = c.Bidder
	want.Spend, want.User, want.Redis, want.Aerospike, want.Fraud, want.Notice = c.Spend, c.User, c.Redis, c.Aerospike, c.Fraud, c.Notice
	want.Campaigns, want.Exchanges, want.Records = c.Campaigns, c.Exchanges, c.Records
	want.Supply = c.Supply
	want.Shading = c.Shading
	if c.Bidder.HTTPListen != "127.0.0.1:8080" {
		t.Errorf("bidder.http_listen default %q", c.Bidder.HTTPListen)
	}
	if !reflect.DeepEqual(*c, want) {
		t.Fatalf("defaults:\n got %+v\nwant %+v", *c, want)
	}
	if d := mustDefault(t); !reflect.DeepEqual(d, c) {
		t.Fatalf("Default() = %+v, load(\"\") = %+v", d, c)
	}
}

// Every setting of Config must be in rtbd.yaml with a comment, so the file
// documents everything and is the source of every default.
func TestDefaultFileCoversEverySettingWithAComment(t *testing.T) {
	var doc yaml.Node
	if err := yaml.Unmarshal(defaultYAML, &doc); err != nil {
		t.Fatal(err)
	}
	inFile := make(map[string]string) // key -> comment
	var walk func(n *yaml.Node, prefix string)
	walk = func(n *yaml.Node, prefix string) {
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			path := joinKey(prefix, k.Value)
			if v.Kind == yaml.MappingNode {
				walk(v, path)
				continue
			}
			inFile[path] = strings.TrimSpace(k.HeadComment + k.LineComment + v.LineComment)
		}
	}
	walk(doc.Content[0], "")
	keys := mustDefault(t).Keys()
	for _, k := range keys {
		comment, ok := inFile[k]
		switch {
		case !ok:
			t.Errorf("setting %s has no default in rtbd.yaml", k)
		case comment == "":
			t.Errorf("setting %s has no comment in rtbd.yaml", k)
		}
		delete(inFile, k)
	}
	for k := range inFile {
		t.Errorf("rtbd.yaml has %s, which is no setting", k)
	}
	if len(keys) < 19 {
		t.Errorf("Keys() = %d keys, want at least the 19 of mode, log, admin and catalog: %v", len(keys), keys)
	}
}

// Every section validates itself, and no two settings share an environment
// variable name.
func TestSectionConventions(t *testing.T) {
	vt := reflect.TypeFor[validator]()
	for i := range typeOfConfig.NumField() {
		f := typeOfConfig.Field(i)
		if !isSection(f.Type) {
			continue
		}
		if !f.Type.Implements(vt) && !reflect.PointerTo(f.Type).Implements(vt) {
			t.Errorf("section %s (%s) has no Validate(*Problems) method", keyOf(f), f.Type)
		}
	}
	seen := make(map[string]string)
	for _, k := range mustDefault(t).Keys() {
		if other, dup := seen[envName(k)]; dup {
			t.Errorf("%s and %s both map to %s", k, other, envName(k))
		}
		seen[envName(k)] = k
	}
}

func TestLoadFileOverrides(t *testing.T) {
	path := writeFile(t, `
mode: catalog
log:
  level: debug
catalog:
  block_cache_mb: 256
  call_timeout: 75ms
  refresh_interval: 1m30s
  max_concurrent_streams: 500
  target: dns:///catalog.internal:9090
  tls:
    cert_file: /etc/rtbd/node.pem
    key_file: /etc/rtbd/node.key
`)
	c, err := load(path, nil)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	want := mustDefault(t)
	want.Mode = ModeCatalog
	want.Log.Level = "debug"
	want.Catalog.BlockCacheMB = 256
	want.Catalog.CallTimeout = 75 * time.Millisecond
	want.Catalog.RefreshInterval = 90 * time.Second
	want.Catalog.MaxConcurrentStreams = 500
	want.Catalog.Target = "dns:///catalog.internal:9090"
	want.Catalog.TLS = TLS{CertFile: "/etc/rtbd/node.pem", KeyFile: "/etc/rtbd/node.key"}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("got  %+v\nwant %+v", c, want)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
}

func TestLoadFileThatOverridesNothing(t *testing.T) {
	for name, body := range map[string]string{
		"empty":         "",
		"comments only": "# nothing here\n",
		"empty section": "catalog:\nlog:\n",
		"empty mapping": "{}\n",
	} {
		t.Run(name, func(t *testing.T) {
			c, err := load(writeFile(t, body), nil)
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			if want := mustDefault(t); !reflect.DeepEqual(c, want) {
				t.Fatalf("got %+v, want the defaults %+v", c, want)
			}
		})
	}
}

func TestLoadFileErrors(t *testing.T) {
	tests := []struct {
		name string
		body string
		is   error    // errors.Is target, nil = not checked
		want []string // substrings of the error, each must appear
	}{
		{
			name: "unknown top-level key",
			body: "mode: bidder\nbidderz: {}\n",
			is:   ErrUnknownKey,
			want: []string{`:2: unknown key "bidderz"`, "mode, log, admin, catalog"},
		},
		{
			name: "unknown nested key",
			body: "catalog:\n  block_cache: 128\n",
			is:   ErrUnknownKey,
			want: []string{`:2: unknown key "catalog.block_cache"`, "block_cache_mb"},
		},
		{
			name: "unknown key in subsection",
			body: "catalog:\n  tls:\n    cert: a.pem\n",
			is:   ErrUnknownKey,
			want: []string{`unknown key "catalog.tls.cert"`},
		},
		{
			name: "every problem at once",
			body: "log:\n  levle: debug\ncatalog:\n  call_timeout: 50\n  block_cache_mb: lots\n  max_concurrent_streams: -1\n  nope: 1\n",
			want: []string{
				`:2: unknown key "log.levle"`,
				`:4: catalog.call_timeout: invalid value 50 (want a duration like "50ms" or "30s")`,
				`:5: catalog.block_cache_mb: invalid value "lots" (want an integer)`,
				`:6: catalog.max_concurrent_streams: invalid value -1`,
				`:7: unknown key "catalog.nope"`,
			},
		},
		{
			name: "bare number for a duration",
			body: "catalog:\n  watch_interval: 1\n",
			is:   ErrInvalidValue,
			want: []string{"catalog.watch_interval: invalid value 1"},
		},
		{
			name: "bad duration string",
			body: "catalog:\n  call_timeout: 50 millis\n",
			is:   ErrInvalidValue,
			want: []string{`catalog.call_timeout: invalid value "50 millis"`},
		},
		{
			name: "key without value",
			body: "catalog:\n  data:\n",
			is:   ErrInvalidValue,
			want: []string{"catalog.data: no value"},
		},
		{
			name: "section given a scalar",
			body: "catalog: fast\n",
			is:   ErrInvalidValue,
			want: []string{`catalog: want a mapping of settings, got "fast"`},
		},
		{
			name: "setting given a mapping",
			body: "admin:\n  listen:\n    host: x\n",
			is:   ErrInvalidValue,
			want: []string{"admin.listen: invalid value a mapping"},
		},
		{
			name: "top level not a mapping",
			body: "- a\n- b\n",
			is:   ErrInvalidValue,
			want: []string{"the top level: want a mapping of settings, got a list"},
		},
		{
			name: "duplicate key",
			body: "catalog:\n  max_ids: 10\n  max_ids: 20\n",
			is:   ErrInvalidValue,
			want: []string{":3: catalog.max_ids: duplicate key (first at line 2)"},
		},
		{
			name: "two documents",
			body: "mode: bidder\n---\nmode: catalog\n",
			want: []string{"want one YAML document"},
		},
		{
			name: "syntax error",
			body: "catalog:\n  data: [unclosed\n",
			want: []string{"rtbd.yaml", "yaml:"},
		},
		{
			name: "overflow",
			body: "catalog:\n  max_concurrent_streams: 5000000000\n",
			is:   ErrInvalidValue,
			want: []string{"catalog.max_concurrent_streams: invalid value 5000000000"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := load(writeFile(t, tt.body), nil)
			if err == nil {
				t.Fatalf("load accepted %q: %+v", tt.body, c)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not contain %q:\n%v", w, err)
				}
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("errors.Is(err, %v) = false: %v", tt.is, err)
			}
		})
	}
	t.Run("missing file", func(t *testing.T) {
		_, err := load(filepath.Join(t.TempDir(), "absent.yaml"), nil)
		if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "absent.yaml") {
			t.Fatalf("err = %v, want a not-exist error naming the file", err)
		}
	})
}

func TestEnvOverrides(t *testing.T) {
	path := writeFile(t, "catalog:\n  block_cache_mb: 256\n  call_timeout: 75ms\n")
	t.Setenv("RTBD_CATALOG_BLOCK_CACHE_MB", "128")
	t.Setenv("RTBD_LOG_LEVEL", "debug")
	t.Setenv("RTBD_MODE", "catalog")
	t.Setenv("RTBD_CATALOG_TLS_CERT_FILE", "/tls/c.pem")
	t.Setenv("RTBD_CATALOG_WATCH_INTERVAL", "250ms")
	t.Setenv("RTBD_CATALOG_MAX_CONCURRENT_STREAMS", "64")
	t.Setenv(EnvConfigPath, "/somewhere/else.yaml") // not a setting, ignored
	c, err := Load(path)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want := mustDefault(t)
	want.Catalog.BlockCacheMB = 128                  // env beats file
	want.Catalog.CallTimeout = 75 * time.Millisecond // file beats default
	want.Log.Level = "debug"
	want.Mode = ModeCatalog
	want.Catalog.TLS.CertFile = "/tls/c.pem"
	want.Catalog.WatchInterval = 250 * time.Millisecond
	want.Catalog.MaxConcurrentStreams = 64
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("got  %+v\nwant %+v", c, want)
	}
}

func TestEnvErrors(t *testing.T) {
	_, err := load("", []string{
		"RTBD_CATALOG_BLOCKCACHE_MB=128", // typo
		"RTBD_CATALOG_CALL_TIMEOUT=50",   // no unit
		"RTBD_CATALOG_MAX_IDS=many",
		"PATH=/usr/bin", // not ours
		"RTBD_CATALOG=x",
	})
	if err == nil {
		t.Fatal("load accepted bad environment")
	}
	for _, w := range []string{
		"environment variable RTBD_CATALOG_BLOCKCACHE_MB names no setting",
		"environment variable RTBD_CATALOG names no setting",
		`catalog.call_timeout (environment variable RTBD_CATALOG_CALL_TIMEOUT): "50"`,
		`catalog.max_ids (environment variable RTBD_CATALOG_MAX_IDS): "many"`,
	} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error does not contain %q:\n%v", w, err)
		}
	}
	if !errors.Is(err, ErrUnknownKey) || !errors.Is(err, ErrInvalidValue) {
		t.Errorf("want both ErrUnknownKey and ErrInvalidValue in %v", err)
	}
}

func TestSet(t *testing.T) {
	tests := []struct {
		key, value string
		check      func(c *Config) bool
	}{
		{"mode", "catalog", func(c *Config) bool { return c.Mode == "catalog" }},
		{"log.format", "console", func(c *Config) bool { return c.Log.Format == "console" }},
		{"catalog.block_cache_mb", "128", func(c *Config) bool { return c.Catalog.BlockCacheMB == 128 }},
		{"catalog.block_cache_mb", " 96 ", func(c *Config) bool { return c.Catalog.BlockCacheMB == 96 }},
		{"catalog.max_concurrent_streams", "4294967295", func(c *Config) bool { return c.Catalog.MaxConcurrentStreams == 1<<32-1 }},
		{"catalog.call_timeout", "50ms", func(c *Config) bool { return c.Catalog.CallTimeout == 50*time.Millisecond }},
		{"catalog.refresh_interval", "1h2m3s", func(c *Config) bool { return c.Catalog.RefreshInterval == time.Hour+2*time.Minute+3*time.Second }},
		{"catalog.watch_interval", "1.5s", func(c *Config) bool { return c.Catalog.WatchInterval == 1500*time.Millisecond }},
		{"catalog.tls.cert_file", "/x/c.pem", func(c *Config) bool { return c.Catalog.TLS.CertFile == "/x/c.pem" }},
		{"catalog.target", "static:///a:1,b:2", func(c *Config) bool { return c.Catalog.Target == "static:///a:1,b:2" }},
		{"catalog.target", "", func(c *Config) bool { return c.Catalog.Target == "" }},
	}
	for _, tt := range tests {
		t.Run(tt.key+"="+tt.value, func(t *testing.T) {
			c := mustDefault(t)
			if err := c.Set(tt.key, tt.value); err != nil {
				t.Fatalf("Set: %v", err)
			}
			if !tt.check(c) {
				t.Fatalf("Set(%q, %q) did not take: %+v", tt.key, tt.value, c)
			}
		})
	}
}

func TestSetErrors(t *testing.T) {
	tests := []struct {
		key, value string
		is         error
		want       []string
	}{
		{"catalog.block_cache", "1", ErrUnknownKey, []string{`"catalog.block_cache"`}},
		{"nope", "1", ErrUnknownKey, []string{`"nope"`}},
		{"catalog", "1", ErrUnknownKey, []string{`"catalog": it is a section`, "block_cache_mb"}},
		{"catalog.tls", "x", ErrUnknownKey, []string{`"catalog.tls": it is a section`}},
		{"catalog.data.x", "1", ErrUnknownKey, []string{`"catalog.data.x"`}},
		{"", "1", ErrUnknownKey, []string{`""`}},
		{"catalog.block_cache_mb", "lots", ErrInvalidValue, []string{"catalog.block_cache_mb", `"lots"`, "want an integer"}},
		{"catalog.block_cache_mb", "1.5", ErrInvalidValue, []string{"catalog.block_cache_mb", `"1.5"`}},
		{"catalog.max_concurrent_streams", "-1", ErrInvalidValue, []string{"catalog.max_concurrent_streams", `"-1"`}},
		{"catalog.max_concurrent_streams", "4294967296", ErrInvalidValue, []string{`"4294967296"`, "out of range for uint32"}},
		{"catalog.call_timeout", "50", ErrInvalidValue, []string{"catalog.call_timeout", `"50"`, "duration"}},
		{"catalog.call_timeout", "fast", ErrInvalidValue, []string{"catalog.call_timeout", `"fast"`}},
	}
	for _, tt := range tests {
		t.Run(tt.key+"="+tt.value, func(t *testing.T) {
			c := mustDefault(t)
			before := *c
			err := c.Set(tt.key, tt.value)
			if !errors.Is(err, tt.is) {
				t.Fatalf("Set(%q, %q) = %v, want %v", tt.key, tt.value, err, tt.is)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not contain %q: %v", w, err)
				}
			}
			if !reflect.DeepEqual(*c, before) {
				t.Errorf("failed Set changed the config: %+v", c)
			}
		})
	}
}

// kinds has a setting of every kind the reflection supports, including some
// Config does not use yet (bool, float, []string, TextUnmarshaler).
type kinds struct {
	S   string        `yaml:"s"`
	B   bool          `yaml:"b"`
	I   int           `yaml:"i"`
	I8  int8          `yaml:"i8"`
	U32 uint32        `yaml:"u32"`
	U64 uint64        `yaml:"u64"`
	F   float64       `yaml:"f"`
	D   time.Duration `yaml:"d"`
	L   []string      `yaml:"l"`
	T   textValue     `yaml:"t"`
	Sub struct {
		X int `yaml:"x"`
	} `yaml:"sub"`
	Skip int `yaml:"-"`
	//lint:ignore U1000 unexported on purpose: the reflection must skip it
	hidden int
}

// textValue is a setting that parses itself: "a" or "b".
type textValue string

func (v *textValue) UnmarshalText(b []byte) error {
	if s := string(b); s != "a" && s != "b" {
		return errors.New(`want "a" or "b"`)
	}
	*v = textValue(b)
	return nil
}

func (v textValue) MarshalText() ([]byte, error) { return []byte(v), nil }

func TestSetStringEveryKind(t *testing.T) {
	var k kinds
	v := reflect.ValueOf(&k).Elem()
	field := func(key string) reflect.Value {
		i, ok := fieldByKey(v.Type(), key)
		if !ok {
			t.Fatalf("no field %s", key)
		}
		return v.Field(i)
	}
	good := []struct{ key, in, out string }{
		{"s", " spaced ", " spaced "},
		{"b", "true", "true"},
		{"b", "0", "false"},
		{"i", "-42", "-42"},
		{"i8", "127", "127"},
		{"u32", "7", "7"},
		{"u64", "18446744073709551615", "18446744073709551615"},
		{"f", "0.25", "0.25"},
		{"d", "50ms", "50ms"},
		{"d", "2m", "2m0s"},
		{"l", "a, b,,c ", "a,b,c"},
		{"l", "", ""},
		{"t", "b", "b"},
	}
	for _, g := range good {
		f := field(g.key)
		if why := setString(f, g.in); why != "" {
			t.Errorf("setString(%s, %q): %s", g.key, g.in, why)
			continue
		}
		if got := formatValue(f); got != g.out {
			t.Errorf("%s after %q = %q, want %q", g.key, g.in, got, g.out)
		}
	}
	if len(k.L) != 0 || k.L == nil {
		t.Errorf(`"" should set an empty, non-nil list, got %#v`, k.L)
	}
	bad := []struct{ key, in, why string }{
		{"b", "yes please", "want true or false"},
		{"i", "1e3", "want an integer"},
		{"i8", "128", "out of range for int8"},
		{"u32", "-1", "want a non-negative integer"},
		{"f", "half", "want a number"},
		{"d", "10", "want a duration"},
		{"t", "c", `want "a" or "b"`},
	}
	for _, b := range bad {
		f := field(b.key)
		before := formatValue(f)
		why := setString(f, b.in)
		if !strings.Contains(why, b.why) {
			t.Errorf("setString(%s, %q) = %q, want %q", b.key, b.in, why, b.why)
		}
		if after := formatValue(f); after != before {
			t.Errorf("failed setString changed %s from %q to %q", b.key, before, after)
		}
	}

	var keys []string
	walkLeaves(v, "", func(path string, _ reflect.Value) { keys = append(keys, path) })
	if got, want := strings.Join(keys, " "), "s b i i8 u32 u64 f d l t sub.x"; got != want {
		t.Errorf("leaves = %q, want %q", got, want)
	}
}

// A file is checked for every kind too, e.g. a list for []string.
func TestCheckNodeEveryKind(t *testing.T) {
	check := func(body string) *FileError {
		var doc yaml.Node
		if err := yaml.Unmarshal([]byte(body), &doc); err != nil {
			t.Fatal(err)
		}
		var fe FileError
		checkNode(&fe, "f", doc.Content[0], reflect.TypeFor[kinds](), "", new([]secretFile))
		return &fe
	}
	if fe := check("s: x\nb: true\ni: 1\nu32: 2\nf: 0.5\nd: 1s\nl: [a, b]\nt: a\nsub: {x: 3}\n"); len(fe.Problems) > 0 {
		t.Fatalf("good file rejected: %v", fe)
	}
	fe := check("b: maybe\nl: a\nt: c\nsub: {y: 1}\nskip: 1\nhidden: 2\n")
	for _, w := range []string{
		`f:1: b: invalid value "maybe" (want true or false)`,
		`f:2: l: invalid value "a" (want a list of strings)`,
		`f:3: t: invalid value "c"`,
		`f:4: unknown key "sub.y" (sub keys: x)`,
		`f:5: unknown key "skip"`,
		`f:6: unknown key "hidden"`,
	} {
		if !strings.Contains(fe.Error(), w) {
			t.Errorf("missing %q in\n%v", w, fe)
		}
	}
}

func TestGetRoundTripsEverySetting(t *testing.T) {
	src := mustDefault(t)
	src.Catalog.TLS.CAFile = "/ca.pem"
	src.Catalog.CallTimeout = 1500 * time.Microsecond
	dst := new(Config)
	for _, k := range src.Keys() {
		s, err := src.Get(k)
		if err != nil {
			t.Fatalf("Get(%s): %v", k, err)
		}
		if err := dst.Set(k, s); err != nil {
			t.Fatalf("Set(%s, %q): %v", k, s, err)
		}
	}
	if !reflect.DeepEqual(src, dst) {
		t.Fatalf("Get/Set round trip:\n got %+v\nwant %+v", dst, src)
	}
	if _, err := src.Get("catalog.nope"); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("Get unknown key: %v", err)
	}
}

func TestValidateNamesEveryBadKey(t *testing.T) {
	c := mustDefault(t)
	bad := map[string]string{
		"mode":                      "ingest",
		"log.level":                 "verbose",
		"log.format":                "xml",
		"admin.listen":              "9091",
		"catalog.data":              "",
		"catalog.target":            "http://catalog:9090",
		"catalog.grpc_listen":       "127.0.0.1:http2",
		"catalog.block_cache_mb":    "2",
		"catalog.hot_cache_entries": "-1",
		"catalog.max_ids":           "0",
		"catalog.refresh_interval":  "0s",
		"catalog.conns_per_node":    "65",
		"catalog.call_timeout":      "-5ms",
		"catalog.watch_interval":    "0s",
		"catalog.tls.cert_file":     "/c.pem",
		"catalog.graceful_timeout":  "-1s",
	}
	for k, v := range bad {
		if err := c.Set(k, v); err != nil {
			t.Fatalf("Set(%s): %v", k, err)
		}
	}
	err := c.Validate()
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("Validate = %v, want *ValidationError", err)
	}
	// tls.cert_file without key_file is reported on key_file.
	wantKeys := make(map[string]bool)
	for k := range bad {
		wantKeys[k] = true
	}
	delete(wantKeys, "catalog.tls.cert_file")
	wantKeys["catalog.tls.key_file"] = true
	for k := range wantKeys {
		found := false
		for _, p := range ve.Problems {
			if strings.HasPrefix(p, k+": ") {
				found = true
			}
		}
		if !found {
			t.Errorf("no problem names %s in:\n%v", k, err)
		}
	}
	if len(ve.Problems) != len(wantKeys) {
		t.Errorf("%d problems, want %d:\n%v", len(ve.Problems), len(wantKeys), err)
	}
	if got := strings.Count(err.Error(), "\n") + 1; got != len(ve.Problems) {
		t.Errorf("Error() has %d lines, want one per problem (%d)", got, len(ve.Problems))
	}
	for _, w := range []string{
		"catalog.block_cache_mb: must be >= 8, got 2",
		"catalog.conns_per_node: must be <= 64, got 65",
		"catalog.call_timeout: must be > 0, got -5ms",
		`mode: must be one of bidder, catalog; got "ingest"`,
		`log.level: must be one of debug, info, warn, error; got "verbose"`,
		`admin.listen: must be host:port, got "9091"`,
		`catalog.grpc_listen: port must be a number 0..65535, got "127.0.0.1:http2"`,
		`catalog.target: must start with static:///, dns:/// or file:///, got "http://catalog:9090"`,
		`catalog.tls.key_file: must be set when cert_file is set ("/c.pem")`,
		"catalog.data: must not be empty",
	} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("missing %q in:\n%v", w, err)
		}
	}
}

func TestValidateSingleSettings(t *testing.T) {
	tests := []setting{
		{"admin.listen", ":9091", ""},
		{"admin.listen", "[::1]:9091", ""},
		{"admin.listen", "localhost:0", ""},
		{"admin.listen", "127.0.0.1:70000", "admin.listen: port must be a number 0..65535"},
		{"admin.listen", "", ""}, // empty: the mode's default
		{"admin.ready_catalog_grace", "200ms", ""},
		{"admin.ready_catalog_grace", "0s", "admin.ready_catalog_grace: must be > 0, got 0s"},
		{"catalog.target", "static:///10.0.0.1:9090,10.0.0.2:9090", ""},
		{"catalog.target", "dns:///catalog.internal:9090", ""},
		{"catalog.target", "dns:///catalog.internal", ""},
		{"catalog.target", "file:///etc/rtbd/nodes", ""},
		{"catalog.target", "static:///", "catalog.target: must name nodes after static:///"},
		{"catalog.target", "static:///10.0.0.1", "catalog.target: static:/// wants a comma-separated list of host:port"},
		{"catalog.target", "dns:///a b", "catalog.target: dns:/// wants one name[:port]"},
		{"catalog.target", "catalog:9090", "catalog.target: must start with"},
		{"catalog.tls.key_file", "/k.pem", "catalog.tls.cert_file: must be set when key_file is set"},
		{"catalog.tls.ca_file", "/ca.pem", ""},
		{"catalog.block_cache_mb", "8", ""},
		{"catalog.block_cache_mb", "65537", "catalog.block_cache_mb: must be <= 65536, got 65537"},
		{"catalog.hot_cache_entries", "0", ""},
		{"catalog.max_concurrent_streams", "1", ""},
		{"catalog.max_concurrent_streams", "0", "catalog.max_concurrent_streams: must be >= 1, got 0"},
		{"catalog.max_conns", "1", ""},
		{"catalog.max_conns", "0", "catalog.max_conns: must be >= 1, got 0"},
		{"catalog.max_conn_age", "0s", "catalog.max_conn_age: must be > 0, got 0s"},
		{"catalog.max_conn_age_grace", "-1s", "catalog.max_conn_age_grace: must be > 0, got -1s"},
		{"catalog.keepalive_min_time", "0s", "catalog.keepalive_min_time: must be > 0, got 0s"},
		{"catalog.max_call_time", "0s", "catalog.max_call_time: must be > 0, got 0s"},
		{"catalog.max_conn_unread_bytes", "65536", ""},
		{"catalog.max_conn_unread_bytes", "1000", "catalog.max_conn_unread_bytes: must be >= 65536, got 1000"},
		{"catalog.call_timeout", "1ms", ""},
		{"catalog.call_timeout", "0s", "catalog.call_timeout: must be > 0, got 0s"},
		{"log.level", "warn", ""},
		{"log.format", "json", ""},
		{"mode", "catalog", ""},
		{"mode", "", `mode: must be one of bidder, catalog; got ""`},
	}
	checkSettings(t, tests)
}

func TestDurationParsing(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want time.Duration
	}{
		{"50ms", 50 * time.Millisecond},
		{"250us", 250 * time.Microsecond},
		{"1.5s", 1500 * time.Millisecond},
		{"1m30s", 90 * time.Second},
		{"2h", 2 * time.Hour},
	} {
		// The same string through the file, the environment and Set.
		c, err := load(writeFile(t, "catalog:\n  call_timeout: "+tt.in+"\n"), nil)
		if err != nil {
			t.Fatalf("file %q: %v", tt.in, err)
		}
		if c.Catalog.CallTimeout != tt.want {
			t.Errorf("file %q = %v, want %v", tt.in, c.Catalog.CallTimeout, tt.want)
		}
		c, err = load("", []string{"RTBD_CATALOG_CALL_TIMEOUT=" + tt.in})
		if err != nil {
			t.Fatalf("env %q: %v", tt.in, err)
		}
		if c.Catalog.CallTimeout != tt.want {
			t.Errorf("env %q = %v, want %v", tt.in, c.Catalog.CallTimeout, tt.want)
		}
		if err := c.Set("catalog.refresh_interval", tt.in); err != nil || c.Catalog.RefreshInterval != tt.want {
			t.Errorf("Set %q = %v, %v; want %v", tt.in, c.Catalog.RefreshInterval, err, tt.want)
		}
	}
	// Quoted in the file is the same as unquoted.
	c, err := load(writeFile(t, "catalog:\n  call_timeout: \"50ms\"\n"), nil)
	if err != nil || c.Catalog.CallTimeout != 50*time.Millisecond {
		t.Fatalf("quoted 50ms: %v, %v", c, err)
	}
}

func TestYAMLRoundTrip(t *testing.T) {
	c := mustDefault(t)
	c.Mode = ModeCatalog
	c.Catalog.CallTimeout = 75 * time.Millisecond
	c.Catalog.Target = "static:///a:1,b:2"
	c.Catalog.TLS = TLS{CertFile: "c.pem", KeyFile: "k.pem", CAFile: "ca.pem"}
	c.Catalog.MaxConcurrentStreams = 1000
	out, err := c.YAML()
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{
		"mode: catalog\n",
		"  call_timeout: 75ms\n",
		"    cert_file: c.pem\n",
		"# Pebble block cache of the index, in MiB.\n", // comments come along
	} {
		if !strings.Contains(string(out), w) {
			t.Errorf("YAML() lacks %q:\n%s", w, out)
		}
	}
	back, err := load(writeFile(t, string(out)), nil)
	if err != nil {
		t.Fatalf("YAML() output does not load: %v\n%s", err, out)
	}
	if !reflect.DeepEqual(back, c) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", back, c)
	}
}

// TestAdminListenPerMode checks that an empty admin.listen resolves to a
// different default per mode (a bidder and a catalog node on one host do
// not clash) and that a set one is kept.
func TestAdminListenPerMode(t *testing.T) {
	c, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	if got := c.AdminListen(); got != DefaultBidderAdminListen {
		t.Errorf("bidder: %q", got)
	}
	c.Mode = ModeCatalog
	if got := c.AdminListen(); got != DefaultCatalogAdminListen || got == DefaultBidderAdminListen {
		t.Errorf("catalog: %q", got)
	}
	c.Admin.Listen = "127.0.0.1:7000"
	if got := c.AdminListen(); got != "127.0.0.1:7000" {
		t.Errorf("set: %q", got)
	}
}
