package usersync

import (
	"strings"
	"testing"

	"github.com/rtbd/rtbd/bidder/user"
)

// FuzzCookieUID: a cookie value accepted as rtbd's uid is a valid uid.
func FuzzCookieUID(f *testing.F) {
	for _, s := range []string{"AAAAAAAAAAAAAAAAAAAAAA", "demo-user-1", "", "a b", "\x00", strings.Repeat("a", 129)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		if validCookieUID(v) && user.CheckUID(v) != nil {
			t.Fatalf("cookie %q accepted, but CheckUID says %v", v, user.CheckUID(v))
		}
	})
}
