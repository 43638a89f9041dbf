package exchange

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rtbd/rtbd/bidder/token"
)

// TestNewSet: Default is always index 0 (its settings replaced when
// listed), defaults are filled, and bad entries are errors, left out.
func TestNewSet(t *testing.T) {
	s, errs := NewSet([]Exchange{
		{Name: "pbs"},
		{Name: Default, UIDMacro: "[UID]"},
		{Name: "pbs"},
		{Name: "Bad Name"},
		{Name: "half", PriceEncryptionKey: []byte("k")},
		{Name: "bill", Billing: token.Billing(99)},
	})
	if len(errs) != 4 {
		t.Errorf("%d errors %v, want 4", len(errs), errs)
	}
	if names := s.Names(); len(names) != 2 || names[0] != Default || names[1] != "pbs" {
		t.Fatalf("names %v", names)
	}
	if s.List[0].UIDMacro != "[UID]" || s.List[1].UIDMacro != DefaultUIDMacro || s.Index["pbs"] != 1 {
		t.Errorf("set %+v", s)
	}
}

// TestNewRedirectHosts: a host is https only, an http:// host both.
func TestNewRedirectHosts(t *testing.T) {
	h, errs := NewRedirectHosts([]string{"a.example", "http://b.example:8000", "https://c.example/path"})
	if len(errs) != 1 {
		t.Errorf("errors %v, want 1", errs)
	}
	if !h["https://a.example"] || h["http://a.example"] || !h["http://b.example:8000"] || !h["https://b.example:8000"] || len(h) != 3 {
		t.Errorf("hosts %v", h)
	}
}

// TestNewGuard: the guard is on only when an exchange has ranges, with a
// counter per exchange and route.
func TestNewGuard(t *testing.T) {
	s, _ := NewSet([]Exchange{{Name: "pbs"}})
	g, err := NewGuard(s, prometheus.NewRegistry())
	if err != nil || g.On || len(g.Refused) != 2 {
		t.Fatalf("guard %+v, %v", g, err)
	}
}
