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
