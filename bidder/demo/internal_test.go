package demo

import "testing"

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"/tmp/demo/sample-request.json": "/tmp/demo/sample-request.json",
		"/tmp/my demo/x.json":           "'/tmp/my demo/x.json'",
		"/tmp/it's/x":                   `'/tmp/it'\''s/x'`,
		"/tmp/$HOME":                    "'/tmp/$HOME'",
		"":                              "''",
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestBidURL(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:8080": "http://127.0.0.1:8080/openrtb2/bid",
		":8080":          "http://127.0.0.1:8080/openrtb2/bid",
		"0.0.0.0:9000":   "http://127.0.0.1:9000/openrtb2/bid",
		"[::]:8080":      "http://[::1]:8080/openrtb2/bid",
		"bidder:80":      "http://bidder:80/openrtb2/bid",
	} {
		if got := bidURL(in); got != want {
			t.Errorf("bidURL(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestMode(t *testing.T) {
	for _, c := range []struct {
		args        []string
		demo, users bool
	}{
		{[]string{"-demo", "-out", "d"}, true, false},
		{[]string{"--demo=true", "-users", "5"}, true, true},
		{[]string{"-users=5", "-data", "d"}, false, true},
		{[]string{"-out", "f.csv", "-products", "5"}, false, false},
		{[]string{"-out", "users"}, false, false},
	} {
		d, u := mode(c.args)
		if d != c.demo || u != c.users {
			t.Errorf("mode(%v) = %v %v, want %v %v", c.args, d, u, c.demo, c.users)
		}
	}
}
