// Package configs is rtbd's configuration: the Config struct, its defaults
// (rtbd.yaml, embedded in the binary and parsed as the defaults, so the file
// is the one source of them), loading, overrides and validation. The process
// logger built from its log section is package admin's NewLogger.
//
// # Precedence
//
// Lowest first: the embedded rtbd.yaml; the YAML file given to Load; the
// environment, RTBD_<SECTION>_<KEY> (the dotted key upper-cased with dots
// turned into underscores: RTBD_CATALOG_BLOCK_CACHE_MB=128, RTBD_LOG_LEVEL,
// RTBD_MODE, RTBD_CATALOG_TLS_CERT_FILE); then Set, which command-line flags
// call. Then Validate. A typical main:
//
//	cfg, err := configs.Load(path)           // defaults, file, environment
//	if err == nil { err = cfg.Set("mode", m) } // one call per flag given
//	if err == nil { err = cfg.Validate() }    // every problem at once
//	log, err := admin.NewLogger(cfg.Log, admin.IsTerminal(os.Stderr))
//
// Unknown keys are errors wherever they come from (file, RTBD_* variable
// other than RTBD_CONFIG, Set), each naming the key; so is a value of the
// wrong type. Durations are Go duration strings ("50ms", "30s"); a bare
// number for a duration is rejected rather than read as nanoseconds. In a
// file, a key with no value ("target:") is an error: write "" for an empty
// string, or remove the key to keep the default.
//
// # Secrets
//
// A setting tagged `secret:"true"` (token keys, price keys, the campaigns
// database's DSN; a password added later gets the tag too) is a secret: Masked, which YAML uses, shows
// it as "***" wherever the config is shown, and it may also be given as
// "<key>_file", the path of a file holding it (in the file, as
// RTBD_<KEY>_FILE, or with Set), read at load without its trailing newline.
// SecretKeys lists them.
//
// # Adding a section
//
// Everything is driven by reflection over the yaml tags, so a new section
// (bidder, spend, redis, aerospike...) needs exactly:
//
//  1. a field of Config with a yaml tag, whose type is a struct of settings
//     (each with a yaml tag; nested structs are subsections; settings may be
//     strings, bools, ints, uints, floats, time.Duration, []string, or types
//     implementing encoding.TextUnmarshaler; use value fields, not pointers);
//  2. every setting's default in rtbd.yaml, each with a comment (a test fails
//     if a setting is missing from the file or has no comment);
//  3. a method Validate(p *Problems) on the section type that adds each
//     problem with the key relative to the section (p.Range("tmax_margin",
//     ...)); subsections with their own Validate are called too, so a parent
//     must not call them again.
//
// File checking, the RTBD_* variables, Set, Get, Keys and YAML then work for
// the new settings without more code.
//
// A map from names to a section type (Exchanges: exchanges.NAME.KEY) is a
// map of sections: each entry's keys and values are checked like a
// section's and validated as NAME (the map's own Validate checks the
// names). Its entries are given in files only: Keys, the environment and Set
// do not reach them, and YAML shows them as they are.
//
// # Concurrency
//
// A *Config is a plain value: read it from many goroutines, but do not Set it
// while others read. To reload, Load and Validate a new one, and keep the old
// one if that fails.
package configs
