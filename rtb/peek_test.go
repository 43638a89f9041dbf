package rtb

import (
	"bytes"
	"encoding/json"
	"strconv"
	"testing"
	"unicode/utf8"
)

func TestPeek(t *testing.T) {
	body := []byte(` { "a" : {"tmax":5, "s":"}"}, "b":[1,"x\"y",{}], "tmax":120 , "id":"r-1_x", "n": -3 } `)
	if got := PeekTMax(body); got != 120 {
		t.Errorf("PeekTMax = %d, want 120 (the top-level one)", got)
	}
	if got := PeekID(body); got != "r-1_x" {
		t.Errorf("PeekID = %q", got)
	}
	for _, tc := range []struct {
		body string
		tmax int64
		id   string
	}{
		{`{"id":"a\u0041b","tmax":"80"}`, 80, "aAb"},
		{`{"id":1,"tmax":1.5}`, 0, ""},
		{`{"tmax":90,"tmax":10,"id":""}`, 90, ""},
		{`{"TMAX":90,"t\u006dax":10}`, 0, ""},
		{`{"tmax":null,"id":null}`, 0, ""},
		{`{"imp":[{"tmax":5}],"tmax":-1}`, -1, ""},
	} {
		if got := PeekTMax([]byte(tc.body)); got != tc.tmax {
			t.Errorf("PeekTMax(%s) = %d, want %d", tc.body, got, tc.tmax)
		}
		if got := PeekID([]byte(tc.body)); got != tc.id {
			t.Errorf("PeekID(%s) = %q, want %q", tc.body, got, tc.id)
		}
	}
	for _, bad := range []string{"", "[]", `{"tmax"`, `{"tmax":`, `{"a":"x`, `{"a":{`, `{"tmax" 1}`, `{,}`, `{"id":"x`} {
		if got := PeekTMax([]byte(bad)); got != 0 {
			t.Errorf("PeekTMax(%q) = %d", bad, got)
		}
		if got := PeekID([]byte(bad)); got != "" {
			t.Errorf("PeekID(%q) = %q", bad, got)
		}
	}
	if got := PeekTMax([]byte(`{"tmax":1`)); got != 1 {
		t.Errorf("a truncated body may still be peeked: %d", got)
	}
}

// FuzzPeek: the peeks never panic, and on valid UTF-8 JSON without escapes
// they agree with encoding/json reading the first top-level member.
func FuzzPeek(f *testing.F) {
	addRequestSeeds(f)
	f.Add([]byte(`{"id":"x","tmax":"12"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		tmax, id := PeekTMax(body), PeekID(body)
		if !json.Valid(body) || !utf8.Valid(body) || bytes.IndexByte(body, '\\') >= 0 {
			return
		}
		var wantTMax int64
		if v, ok := refMember(body, "tmax"); ok {
			s := string(v)
			if len(v) > 0 && v[0] == '"' {
				s = refString(v)
			}
			if n, err := strconv.ParseInt(s, 10, 64); err == nil {
				wantTMax = n
			}
		}
		v, _ := refMember(body, "id")
		if wantID := refString(v); tmax != wantTMax || id != wantID {
			t.Fatalf("%s: peeked tmax %d id %q, want %d %q", body, tmax, id, wantTMax, wantID)
		}
	})
}
