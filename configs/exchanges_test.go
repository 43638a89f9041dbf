package configs

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestExchangesLoad(t *testing.T) {
	c, err := load(writeFile(t, `
exchanges:
  pbs:
    uid_macro: "{UID}"
  gam: {}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if got, want := c.Exchanges.Names(), []string{"default", "gam", "pbs"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Names() = %v, want %v", got, want)
	}
	if e, ok := c.Exchanges.Get("pbs"); !ok || e.Macro() != "{UID}" {
		t.Errorf("pbs: %+v %v", e, ok)
	}
	if e, ok := c.Exchanges.Get("gam"); !ok || e.Macro() != DefaultUIDMacro {
		t.Errorf("gam: %+v %v, want the default macro", e, ok)
	}
	if _, ok := c.Exchanges.Get(DefaultExchange); !ok {
		t.Error("the default exchange is missing")
	}
	if _, ok := c.Exchanges.Get("nope"); ok {
		t.Error("an exchange not listed exists")
	}
	if d := mustDefault(t); !reflect.DeepEqual(d.Exchanges.Names(), []string{DefaultExchange}) {
		t.Errorf("default Names() = %v", d.Exchanges.Names())
	}
	out, err := c.YAML()
	if err != nil {
		t.Fatal(err)
	}
	back, err := load(writeFile(t, string(out)), nil)
	if err != nil || !reflect.DeepEqual(back.Exchanges, c.Exchanges) {
		t.Fatalf("YAML round trip: %v, %+v, want %+v\n%s", err, back, c.Exchanges, out)
	}
}

func TestExchangesFileErrors(t *testing.T) {
	_, err := load(writeFile(t, `
exchanges:
  pbs:
    uid_macro: $UID
    bills: burl
  gam:
    uid_macro: [a]
`), nil)
	if !errors.Is(err, ErrUnknownKey) || !errors.Is(err, ErrInvalidValue) {
		t.Fatalf("err = %v, want an unknown key and an invalid value", err)
	}
	for _, w := range []string{`unknown key "exchanges.pbs.bills"`, "exchanges.gam.uid_macro: invalid value"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%v lacks %q", err, w)
		}
	}
	if _, err := load(writeFile(t, "exchanges: [a]\n"), nil); !errors.Is(err, ErrInvalidValue) ||
		!strings.Contains(err.Error(), "exchanges: want a mapping of names to settings, got a list") {
		t.Errorf("a list for exchanges: %v", err)
	}
}

func TestExchangesValidate(t *testing.T) {
	c := mustDefault(t)
	c.Exchanges = Exchanges{"Bad Name": {}, "ok": {UIDMacro: "a b"}, strings.Repeat("x", 33): {}}
	err := c.Validate()
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("Validate: %v", err)
	}
	for _, w := range []string{"exchanges.Bad Name: an exchange name", "exchanges.ok.uid_macro:", "exchanges." + strings.Repeat("x", 33) + ": an exchange name"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%v lacks %q", err, w)
		}
	}
}

func TestUserSyncValidate(t *testing.T) {
	c := mustDefault(t)
	c.User.SyncRedirectHosts = []string{"pbs.example", "http://pbs.example:8000", "https://pbs.example", "user@evil", "Pbs.example", "a/b", ""}
	c.User.Cookie = Cookie{Name: "a b", Domain: "x;y", MaxAge: 0}
	c.User.MatchTTL = 0
	err := c.Validate()
	if err == nil {
		t.Fatal("no problem")
	}
	for _, w := range []string{"user.sync_redirect_hosts[2]", "user.sync_redirect_hosts[3]", "user.sync_redirect_hosts[4]",
		"user.sync_redirect_hosts[5]", "user.sync_redirect_hosts[6]", "user.cookie.name", "user.cookie.domain", "user.cookie.max_age", "user.match_ttl"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%v lacks %q", err, w)
		}
	}
	for _, ok := range []string{"user.sync_redirect_hosts[0]", "user.sync_redirect_hosts[1]"} {
		if strings.Contains(err.Error(), ok+":") {
			t.Errorf("%s rejected: %v", ok, err)
		}
	}
}
