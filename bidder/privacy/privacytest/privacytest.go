// Package privacytest holds what the tests of the privacy policies and of
// the bid path share: a TCF v2 consent string encoder (go-gdpr has a
// parser, no encoder) and the GPP strings of testdata/gpp.json. Only
// tests import it.
package privacytest

import (
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"testing"
)

// bitWriter writes big-endian bit fields (the TCF encoding).
type bitWriter struct {
	b []byte
	n int
}

func (w *bitWriter) put(v uint64, bits int) {
	for i := bits - 1; i >= 0; i-- {
		if w.n%8 == 0 {
			w.b = append(w.b, 0)
		}
		if v>>uint(i)&1 == 1 {
			w.b[w.n/8] |= 0x80 >> uint(w.n%8)
		}
		w.n++
	}
}

// TCF2 encodes a TCF v2 core string with the given purpose consents,
// vendor consents (bit field up to maxVendor) and, when restrictPurpose is
// not 0, a publisher restriction of type 0 (not allowed) on
// restrictPurpose for restrictVendor.
func TCF2(purposes []int, vendors []int, maxVendor int, restrictPurpose, restrictVendor int) string {
	w := &bitWriter{}
	w.put(2, 6)            // version
	w.put(17000000000, 36) // created (deciseconds)
	w.put(17000000000, 36) // last updated
	w.put(7, 12)           // cmp id
	w.put(1, 12)           // cmp version
	w.put(1, 6)            // consent screen
	w.put(('E'-'A')<<6|('N'-'A'), 12)
	w.put(100, 12) // vendor list version
	w.put(2, 6)    // policy version
	w.put(1, 1)    // service specific
	w.put(0, 1)    // non-standard texts
	w.put(0, 12)   // special features
	var pc uint64
	for _, p := range purposes {
		pc |= 1 << uint(24-p)
	}
	w.put(pc, 24) // purpose consents
	w.put(0, 24)  // purpose LI
	w.put(0, 1)   // purpose one treatment
	w.put(('D'-'A')<<6|('E'-'A'), 12)
	// vendor consents: bit field
	w.put(uint64(maxVendor), 16)
	w.put(0, 1)
	for v := 1; v <= maxVendor; v++ {
		bit := uint64(0)
		for _, x := range vendors {
			if x == v {
				bit = 1
			}
		}
		w.put(bit, 1)
	}
	// vendor legitimate interests: none
	w.put(uint64(maxVendor), 16)
	w.put(0, 1)
	w.put(0, maxVendor)
	if restrictPurpose == 0 {
		w.put(0, 12)
	} else {
		w.put(1, 12)                      // one restriction
		w.put(uint64(restrictPurpose), 6) // purpose
		w.put(0, 2)                       // type 0: not allowed
		w.put(1, 12)                      // one entry
		w.put(0, 1)                       // single id
		w.put(uint64(restrictVendor), 16) // vendor
	}
	return base64.RawURLEncoding.EncodeToString(w.b)
}

// GPPFixture is one string of testdata/gpp.json: its name, the GPP
// string, and where it comes from.
type GPPFixture struct {
	Name, GPP, Source string
}

//go:embed testdata/gpp.json
var gppJSON []byte

// GPPFixtures returns the strings of testdata/gpp.json by name.
func GPPFixtures(t testing.TB) map[string]GPPFixture {
	t.Helper()
	var file struct {
		Strings []GPPFixture
	}
	if err := json.Unmarshal(gppJSON, &file); err != nil {
		t.Fatal(err)
	}
	m := make(map[string]GPPFixture, len(file.Strings))
	for _, f := range file.Strings {
		if f.Source == "" {
			t.Fatalf("%s: no source", f.Name)
		}
		m[f.Name] = f
	}
	return m
}
