package user

import (
	"errors"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
)

func parseQuery(q string) (string, int64, int64, string, error) {
	var a fasthttp.Args
	a.Parse(q)
	return ParseEvent(&a)
}

func TestParseEvent(t *testing.T) {
	uid, g, pid, ev, err := parseQuery("uid=demo-user-1&pg=3&pid=103&ev=view&cb=12345")
	if err != nil || uid != "demo-user-1" || g != 3 || pid != 103 || ev != EventView {
		t.Fatalf("ParseEvent = %q %d %d %q %v", uid, g, pid, ev, err)
	}
	// Percent-encoding is decoded; max int64 accepted.
	uid, g, pid, _, err = parseQuery("ev=view&pid=9223372036854775807&pg=1&uid=a%20b%E3%81%82")
	if err != nil || uid != "a bあ" || g != 1 || pid != 1<<63-1 {
		t.Fatalf("ParseEvent = %q %d %d %v", uid, g, pid, err)
	}
	bad := map[string]string{ // query -> parameter named
		"":                            "uid",
		"pg=1&pid=1&ev=view":          "uid",
		"uid=&pg=1&pid=1&ev=view":     "uid",
		"uid=a%00&pg=1&pid=1&ev=view": "uid",
		"uid=%FF&pg=1&pid=1&ev=view":  "uid",
		"uid=" + strings.Repeat("x", 129) + "&pg=1&pid=1&ev=view": "uid",
		"uid=a&uid=b&pg=1&pid=1&ev=view":                          "uid",
		"uid=a&pid=1&ev=view":                                     "pg",
		"uid=a&pg=0&pid=1&ev=view":                                "pg",
		"uid=a&pg=-1&pid=1&ev=view":                               "pg",
		"uid=a&pg=%2B1&pid=1&ev=view":                             "pg",
		"uid=a&pg=01&pid=1&ev=view":                               "pg",
		"uid=a&pg=1x&pid=1&ev=view":                               "pg",
		"uid=a&pg=&pid=1&ev=view":                                 "pg",
		"uid=a&pg=1&pg=2&pid=1&ev=view":                           "pg",
		"uid=a&pg=1&pid=9223372036854775808&ev=view":              "pid",
		"uid=a&pg=1&pid=99999999999999999999&ev=view":             "pid",
		"uid=a&pg=1&pid=1.5&ev=view":                              "pid",
		"uid=a&pg=1&ev=view":                                      "pid",
		"uid=a&pg=1&pid=1":                                        "ev",
		"uid=a&pg=1&pid=1&ev=click":                               "ev",
		"uid=a&pg=1&pid=1&ev=VIEW":                                "ev",
		"uid=a&pg=1&pid=1&ev=view&ev=view":                        "ev",
	}
	for q, param := range bad {
		_, _, _, _, err := parseQuery(q)
		var ee *EventError
		if !errors.Is(err, ErrInvalidEvent) || !errors.As(err, &ee) || ee.Param != param {
			t.Errorf("%q: err = %v, want an EventError on %s", q, err, param)
			continue
		}
		if param == "uid" != errors.Is(err, ErrInvalidUID) {
			t.Errorf("%q: errors.Is(ErrInvalidUID) = %v", q, errors.Is(err, ErrInvalidUID))
		}
		if !strings.HasPrefix(err.Error(), "user: invalid event: "+param+": ") {
			t.Errorf("%q: message %q", q, err)
		}
	}
}
