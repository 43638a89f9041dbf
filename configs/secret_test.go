package configs

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestSecretKeys(t *testing.T) {
	want := []string{"bidder.token_keys", "notice.price_keys.encryption", "notice.price_keys.integrity", "campaigns.postgres.dsn",
		"exchanges.*.price_keys.encryption", "exchanges.*.price_keys.integrity"}
	if got := SecretKeys(); !slices.Equal(got, want) {
		t.Fatalf("SecretKeys() = %v, want %v", got, want)
	}
	if !IsSecret("bidder.token_keys_file") || IsSecret("bidder.http_listen") || !IsSecret("exchanges.pbs.price_keys.integrity") ||
		!IsSecret("exchanges.pbs.price_keys.encryption_file") || IsSecret("exchanges.pbs.uid_macro") || IsSecret("exchanges..price_keys.integrity") {
		t.Fatal("IsSecret")
	}
}

func TestMasked(t *testing.T) {
	c := mustDefault(t)
	c.Bidder.TokenKeys = []string{"k1-0123456789abcdef", "k2-0123456789abcdef"}
	c.Notice.PriceKeys.Encryption = "ZW5j"
	m := c.Masked()
	if !slices.Equal(m.Bidder.TokenKeys, []string{Mask, Mask}) || m.Notice.PriceKeys.Encryption != Mask ||
		m.Notice.PriceKeys.Integrity != "" || m.Bidder.HTTPListen != c.Bidder.HTTPListen {
		t.Fatalf("Masked: %+v %+v", m.Bidder, m.Notice)
	}
	if c.Bidder.TokenKeys[0] != "k1-0123456789abcdef" || c.Notice.PriceKeys.Encryption != "ZW5j" {
		t.Fatal("Masked changed the config it copies")
	}
}

// TestSecretFile: every secret may be given as <key>_file, in the config
// file, the environment or Set; the trailing newline is dropped; a missing
// file is an error naming the key.
func TestSecretFile(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("k1-0123456789abcdef,k2-0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	want := []string{"k1-0123456789abcdef", "k2-0123456789abcdef"}
	c, err := load(writeFile(t, "bidder:\n  token_keys_file: "+secret+"\n  seat: s\n"), nil)
	if err != nil || !slices.Equal(c.Bidder.TokenKeys, want) || c.Bidder.Seat != "s" {
		t.Fatalf("file: %v, %v", c, err)
	}
	c, err = load("", []string{"RTBD_BIDDER_TOKEN_KEYS_FILE=" + secret})
	if err != nil || !slices.Equal(c.Bidder.TokenKeys, want) {
		t.Fatalf("env: %v, %v", c, err)
	}
	c = mustDefault(t)
	if err := c.Set("notice.price_keys.integrity_file", secret); err != nil || c.Notice.PriceKeys.Integrity != strings.Join(want, ",") {
		t.Fatalf("Set: %q, %v", c.Notice.PriceKeys.Integrity, err)
	}
	missing := filepath.Join(dir, "absent")
	for _, err := range []error{
		func() error {
			_, err := load(writeFile(t, "bidder:\n  token_keys_file: "+missing+"\n"), nil)
			return err
		}(),
		func() error { _, err := load("", []string{"RTBD_BIDDER_TOKEN_KEYS_FILE=" + missing}); return err }(),
		mustDefault(t).Set("bidder.token_keys_file", missing),
	} {
		if !errors.Is(err, ErrSecretFile) || !strings.Contains(err.Error(), "bidder.token_keys_file") {
			t.Errorf("missing file: %v, want ErrSecretFile naming bidder.token_keys_file", err)
		}
	}
	if _, err := load(writeFile(t, "bidder:\n  seat_file: x\n"), nil); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("seat_file (not a secret): %v, want ErrUnknownKey", err)
	}
}

// TestMaskedDoesNotLoad: the output of YAML (secrets masked) loaded again
// is invalid, naming each masked secret, rather than signing with "***".
func TestMaskedDoesNotLoad(t *testing.T) {
	c := mustDefault(t)
	c.Bidder.TokenKeys = []string{"k1-0123456789abcdef"}
	c.Notice.PriceKeys.Encryption, c.Notice.PriceKeys.Integrity = "ZW5j", "aW50"
	c.Campaigns.Postgres.DSN = "postgres://rtbd:pw@db/rtbd"
	c.Exchanges = Exchanges{"pbs": {PriceKeys: PriceKeys{Encryption: "ZW5j", Integrity: "aW50"}}}
	out, err := c.YAML()
	if err != nil {
		t.Fatal(err)
	}
	back, err := load(writeFile(t, string(out)), nil)
	if err != nil {
		t.Fatal(err)
	}
	err = back.Validate()
	for _, key := range SecretKeys() {
		key = strings.ReplaceAll(key, AnyName, "pbs")
		if err == nil || !strings.Contains(err.Error(), key+`: is "***"`) {
			t.Errorf("Validate: %v, want %s reported as masked", err, key)
		}
	}
}

// TestSecretInMap: the price keys of an exchange (a secret inside the
// exchanges map) are masked by Masked, without touching the config it
// copies; may be given as <key>_file in the file or with Set; a missing
// file names the key; and the other settings of the entry are kept.
func TestSecretInMap(t *testing.T) {
	dir := t.TempDir()
	enc := filepath.Join(dir, "enc")
	if err := os.WriteFile(enc, []byte("ZW5jcnlwdGlvbg==\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := load(writeFile(t, "exchanges:\n  pbs:\n    uid_macro: $U\n    billing: render\n    price_keys:\n"+
		"      encryption_file: "+enc+"\n      integrity: aW50ZWdyaXR5\n  other: {}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	x := c.Exchanges["pbs"]
	if x.PriceKeys.Encryption != "ZW5jcnlwdGlvbg==" || x.PriceKeys.Integrity != "aW50ZWdyaXR5" || x.UIDMacro != "$U" || x.Billing != "render" {
		t.Fatalf("exchanges.pbs = %+v", x)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	m := c.Masked()
	if mx := m.Exchanges["pbs"]; mx.PriceKeys.Encryption != Mask || mx.PriceKeys.Integrity != Mask || mx.UIDMacro != "$U" {
		t.Fatalf("Masked: exchanges.pbs = %+v", mx)
	}
	if o := m.Exchanges["other"]; o.PriceKeys.Encryption != "" {
		t.Fatalf("Masked: an empty secret shows as %q", o.PriceKeys.Encryption)
	}
	if c.Exchanges["pbs"].PriceKeys.Encryption != "ZW5jcnlwdGlvbg==" {
		t.Fatal("Masked changed the config it copies")
	}
	out, err := c.YAML()
	if err != nil || strings.Contains(string(out), "ZW5jcnlwdGlvbg") || strings.Contains(string(out), "aW50ZWdyaXR5") {
		t.Fatalf("YAML shows an exchange's price key (%v):\n%s", err, out)
	}
	if err := c.Set("exchanges.other.price_keys.integrity_file", enc); err != nil || c.Exchanges["other"].PriceKeys.Integrity != "ZW5jcnlwdGlvbg==" {
		t.Fatalf("Set: %+v, %v", c.Exchanges["other"], err)
	}
	if err := c.Set("exchanges.new.price_keys.encryption_file", enc); err != nil || c.Exchanges["new"].PriceKeys.Encryption != "ZW5jcnlwdGlvbg==" {
		t.Fatalf("Set on a new entry: %+v, %v", c.Exchanges["new"], err)
	}
	missing := filepath.Join(dir, "absent")
	_, err = load(writeFile(t, "exchanges:\n  pbs:\n    price_keys:\n      encryption_file: "+missing+"\n"), nil)
	if !errors.Is(err, ErrSecretFile) || !strings.Contains(err.Error(), "exchanges.pbs.price_keys.encryption_file") {
		t.Errorf("missing file: %v, want ErrSecretFile naming exchanges.pbs.price_keys.encryption_file", err)
	}
	if _, err := load(writeFile(t, "exchanges:\n  pbs:\n    uid_macro_file: x\n"), nil); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("uid_macro_file (not a secret): %v, want ErrUnknownKey", err)
	}
	bad := mustDefault(t)
	bad.Exchanges = Exchanges{"pbs": {Billing: "imp", PriceKeys: PriceKeys{Encryption: "ZW5j"}}}
	err = bad.Validate()
	for _, want := range []string{"exchanges.pbs.billing", "exchanges.pbs.price_keys.encryption"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: %v, want a problem naming %s", err, want)
		}
	}
}
