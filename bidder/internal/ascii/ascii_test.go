package ascii

import "testing"

func TestAppendLower(t *testing.T) {
	for in, want := range map[string]string{"": "", "Ads.EXAMPLE.com": "ads.example.com", "Ä-Z@[": "Ä-z@["} {
		if got := string(AppendLower([]byte("x:"), in)); got != "x:"+want {
			t.Errorf("AppendLower(%q) = %q, want %q", in, got, "x:"+want)
		}
	}
}

func TestEqualLower(t *testing.T) {
	for _, c := range []struct {
		in, lower string
		want      bool
	}{
		{"HTTPS://", "https://", true},
		{"gZip", "gzip", true},
		{"gzip", "GZIP", false}, // lower must be lower case
		{"gzi", "gzip", false},
		{"gz@p", "gz`p", false}, // '@' and '`' are not a case pair
	} {
		if got := EqualLower(c.in, c.lower); got != c.want {
			t.Errorf("EqualLower(%q, %q) = %v", c.in, c.lower, got)
		}
		if got := EqualLower([]byte(c.in), c.lower); got != c.want {
			t.Errorf("EqualLower([]byte(%q), %q) = %v", c.in, c.lower, got)
		}
	}
}
