package main

import (
	"bytes"
	"os"
	"reflect"
	"testing"

	"github.com/prebid/openrtb/v20/openrtb2"
)

// TestUpToDate fails when rtb/jsondec_gen.go is not what decgen writes
// for the openrtb version in go.mod: run `make generate`.
func TestUpToDate(t *testing.T) {
	want, err := generate(reflect.TypeFor[openrtb2.BidRequest]())
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../jsondec_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("rtb/jsondec_gen.go is stale: run make generate")
	}
}
