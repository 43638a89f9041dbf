package rtb

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/prebid/openrtb/v20/openrtb2"
	"github.com/prebid/openrtb/v20/openrtb3"
)

// fill sets every field of the struct v points to a non-zero value, so that
// a field AppendResponse forgets shows up as a difference to encoding/json.
func fill(t *testing.T, v reflect.Value, seed int) {
	t.Helper()
	v = v.Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		name := v.Type().Field(i).Name
		switch f.Kind() {
		case reflect.String:
			f.SetString(name + "-\"<&>\u2028é" + strings.Repeat("x", seed%3))
		case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Int:
			f.SetInt(int64(i + seed + 1))
		case reflect.Float64:
			f.SetFloat(float64(i+seed) + 0.25)
		case reflect.Slice:
			switch {
			case f.Type() == reflect.TypeOf(json.RawMessage(nil)):
				f.SetBytes([]byte(`{ "k" : [1, "a b", {"n":null}] }`))
			case f.Type().Elem().Kind() == reflect.String:
				f.Set(reflect.ValueOf([]string{"a", "b<c>"}).Convert(f.Type()))
			case f.Type().Elem().Kind() == reflect.Int64 || f.Type().Elem().Kind() == reflect.Int8:
				s := reflect.MakeSlice(f.Type(), 2, 2)
				s.Index(0).SetInt(1)
				s.Index(1).SetInt(int64(seed + 2))
				f.Set(s)
			case f.Type().Elem().Kind() == reflect.Struct:
				s := reflect.MakeSlice(f.Type(), 2, 2)
				fill(t, s.Index(0).Addr(), seed+1)
				fill(t, s.Index(1).Addr(), seed+2)
				f.Set(s)
			default:
				t.Fatalf("fill: unhandled slice field %s %s", name, f.Type())
			}
		case reflect.Pointer:
			p := reflect.New(f.Type().Elem())
			if p.Elem().Kind() != reflect.Int64 {
				t.Fatalf("fill: unhandled pointer field %s %s", name, f.Type())
			}
			p.Elem().SetInt(503)
			f.Set(p)
		default:
			t.Fatalf("fill: unhandled field %s %s", name, f.Type())
		}
	}
}

func TestAppendResponseAllFields(t *testing.T) {
	var resp openrtb2.BidResponse
	fill(t, reflect.ValueOf(&resp), 0)
	got, err := AppendResponse(nil, &resp)
	if err != nil {
		t.Fatal(err)
	}
	if want := stdEncode(t, &resp); !bytes.Equal(got, want) {
		t.Fatalf("differs from encoding/json:\n got %s\nwant %s", got, want)
	}
	if bytes.Contains(got, []byte(`\u003c`)) {
		t.Error("HTML was escaped")
	}
}

func TestAppendResponseEdgeCases(t *testing.T) {
	cases := map[string]openrtb2.BidResponse{
		"empty":             {},
		"nil bids":          {ID: "x", SeatBid: []openrtb2.SeatBid{{Seat: "s"}}},
		"empty bids":        {ID: "x", SeatBid: []openrtb2.SeatBid{{Bid: []openrtb2.Bid{}}}},
		"zero price":        {ID: "x", SeatBid: []openrtb2.SeatBid{{Bid: []openrtb2.Bid{{}}}}},
		"tiny price":        {ID: "x", SeatBid: []openrtb2.SeatBid{{Bid: []openrtb2.Bid{{Price: 1e-7}}}}},
		"huge price":        {ID: "x", SeatBid: []openrtb2.SeatBid{{Bid: []openrtb2.Bid{{Price: 1e21}}}}},
		"negative price":    {ID: "x", SeatBid: []openrtb2.SeatBid{{Bid: []openrtb2.Bid{{Price: -0.000123}}}}},
		"odd strings":       {ID: "a\x00\x1f\x7f\"\\/\b\f\n\r\t\xff\xc3(\u2029"},
		"nbr":               {ID: "x", NBR: openrtb3.NoBidReason(2).Ptr()},
		"ext null":          {ID: "x", Ext: json.RawMessage(`null`)},
		"ext with spaces":   {ID: "x", Ext: json.RawMessage(" {\"a b\" :\t[ 1 , \"\\\" x\" ]}\n")},
		"ext string spaces": {ID: "x", Ext: json.RawMessage(`"  \\\\" `)},
	}
	for name, resp := range cases {
		got, err := AppendResponse(nil, &resp)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if want := stdEncode(t, &resp); !bytes.Equal(got, want) {
			t.Errorf("%s: differs from encoding/json:\n got %s\nwant %s", name, got, want)
		}
	}
}

func TestAppendResponseErrors(t *testing.T) {
	for name, c := range map[string]struct {
		resp openrtb2.BidResponse
		err  error
	}{
		"NaN":      {openrtb2.BidResponse{SeatBid: []openrtb2.SeatBid{{Bid: []openrtb2.Bid{{Price: math.NaN()}}}}}, ErrResponseFloat},
		"Inf":      {openrtb2.BidResponse{SeatBid: []openrtb2.SeatBid{{Bid: []openrtb2.Bid{{Price: math.Inf(1)}}}}}, ErrResponseFloat},
		"bad ext":  {openrtb2.BidResponse{Ext: json.RawMessage(`{"a":}`)}, ErrResponseExt},
		"bid ext":  {openrtb2.BidResponse{SeatBid: []openrtb2.SeatBid{{Bid: []openrtb2.Bid{{Ext: json.RawMessage(`{`)}}}}}, ErrResponseExt},
		"seat ext": {openrtb2.BidResponse{SeatBid: []openrtb2.SeatBid{{Ext: json.RawMessage(`x`)}}}, ErrResponseExt},
	} {
		dst := []byte("keep")
		out, err := AppendResponse(dst, &c.resp)
		if !errors.Is(err, c.err) {
			t.Errorf("%s: err %v, want %v", name, err, c.err)
		}
		if string(out) != "keep" {
			t.Errorf("%s: dst not restored: %q", name, out)
		}
	}
}

func TestAppendNoBid(t *testing.T) {
	for _, id := range []string{"", "abc", "a\"b\\c\n\x01</script>", "\xff", "é\u2028"} {
		for _, nbr := range []NoBidReason{NoBidInvalidRequest, NoBidDeadline, NoBidUnknownError} {
			got := AppendNoBid([]byte("x"), id, nbr)
			n := openrtb3.NoBidReason(nbr)
			want := append([]byte("x"), stdEncode(t, &openrtb2.BidResponse{ID: id, NBR: &n})...)
			if !bytes.Equal(got, want) {
				t.Errorf("AppendNoBid(%q, %d) = %s, want %s", id, nbr, got, want)
			}
		}
	}
	if got := string(AppendNoBid(nil, "r1", NoBidNoMatchingCampaign)); got != `{"id":"r1","nbr":500}` {
		t.Errorf("got %s", got)
	}
}

// The encoder covers every field of the three response types; a new field
// in a prebid/openrtb upgrade must fail here, not be dropped silently.
func TestAppendResponseFieldCount(t *testing.T) {
	for typ, n := range map[reflect.Type]int{
		reflect.TypeOf(openrtb2.BidResponse{}): 7,
		reflect.TypeOf(openrtb2.SeatBid{}):     4,
		reflect.TypeOf(openrtb2.Bid{}):         33,
	} {
		if typ.NumField() != n {
			t.Errorf("%s has %d fields, AppendResponse encodes %d: update encode.go", typ, typ.NumField(), n)
		}
	}
}
