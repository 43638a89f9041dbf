package pebblestore_test

import (
	"testing"

	"github.com/rtbd/rtbd/bidder/user/pebblestore"
	"github.com/rtbd/rtbd/bidder/user/usertest"
)

func TestConformance(t *testing.T) {
	usertest.Run(t, func(t *testing.T, lim usertest.Limits) usertest.Store {
		s, err := pebblestore.Open(t.TempDir(), pebblestore.Options{MaxGroups: lim.MaxGroups, MaxViewed: lim.MaxViewed, TTL: lim.TTL, MatchTTL: lim.MatchTTL})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}
