package feed

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/rtbd/rtbd/rtb/money"
)

const fuzzHeader = "id,group_id,title,description,image_url,width,height,landing_url,price,sale_price,currency,category,brand,in_stock,updated_at,op,deleted\n"

var csvSeeds = []string{
	"1,2,Tee,\"Soft, warm\",https://img.example.com/p/2/1.jpg,600,600,https://shop.example.com/i/1?u=r,19.99,,JPY,Apparel,Brand X,true,1735689600,,\n",
	"1,2,\"T \"\"q\"\"\",\"multi\nline\",https://a.example/1.jpg,1,10000,https://a.example/,0.000001,0,usd,,,Out of Stock,2025-01-31T09:00:00+09:00,upsert,false\n",
	"5,6,,,,,,,,,,,,,,delete,\n3,4,,,,,,,,,,,,,,,yes\n",
	"1,2,Tee,,https://a.example/1.jpg,600,600,https://a.example/,-1,,JPY,,,,,,\n",
	"1,2,Tee,,ftp://a/1.jpg,0,600,javascript:x,1e5,2,XXX,,,maybe,later,remove,\n",
	"1,2,\"unterminated\n",
	"1,2,a\"b,,,,,,,,,,,,,,\n\n\n\"x\"y,1\n",
	"1,2,Tee\xff,,https://a.example/1.jpg,600,600,https://a.example/,1,,JPY,,,,,,\r\n",
	"1,2\n,,,,\n",
}

var jsonSeeds = []string{
	`{"id":1,"group_id":2,"title":"Tee","image_url":"https://img.example.com/1.jpg","width":600,"height":600,"landing_url":"https://a.example/","price":19.99,"currency":"JPY"}`,
	`{"id":"1","group_id":"2","title":"caf\u00e9 \ud83c\udf63","description":"a\nb","image_url":"https://a.example/1.jpg","width":"1","height":10000,"landing_url":"https://a.example/","price":"0.000001","sale_price":0,"currency":"usd","in_stock":false,"updated_at":"2025-01-31T09:00:00Z","x":{"y":[1,2,null,true]}}`,
	`{"id":5,"group_id":6,"op":"delete"}`,
	`{"id":5,"group_id":6,"deleted":true,"op":"upsert"}`,
	`{"id":1.5e3,"group_id":-0.0e+1}`,
	`{"id":1,"group_id":2,"title":5,"price":-1,"currency":["JPY"]}`,
	`[1,2,3]`,
	`{"a":"\u12"}`,
	`{"id":1`,
	`  `,
	`{"title":"\ud800\udc00\udbff"}`,
	`{"a":[[[[[[[[[[]]]]]]]]]]}`,
}

// checkRow verifies a row the reader accepted, independently of the
// reader's own checks.
func checkRow(t *testing.T, row *Row) {
	t.Helper()
	p := &row.Product
	if p.ProductId <= 0 || p.ProductGroupId <= 0 {
		t.Fatalf("accepted ids %d/%d", p.ProductId, p.ProductGroupId)
	}
	if row.Delete {
		if p.Title != "" || p.PriceMicros != 0 {
			t.Fatalf("delete row with fields: %v", p)
		}
		return
	}
	text := func(name, s string, max int, required, multiline bool) {
		if required && s == "" {
			t.Fatalf("accepted empty %s", name)
		}
		if len(s) > max || !utf8.ValidString(s) || strings.TrimSpace(s) != s && strings.Trim(s, " \t\r\n\v\f") != s {
			t.Fatalf("accepted bad %s %q", name, s)
		}
		for _, r := range s {
			if (r < 0x20 || (r >= 0x7f && r <= 0x9f)) && !(multiline && (r == '\t' || r == '\n' || r == '\r')) {
				t.Fatalf("accepted control character in %s %q", name, s)
			}
		}
	}
	text("title", p.Title, 500, true, false)
	text("description", p.Description, 2000, false, true)
	text("category", p.Category, 200, false, false)
	text("brand", p.Brand, 200, false, false)
	text("image_url", p.ImageUrl, 2048, true, false)
	text("landing_url", p.LandingUrl, 2048, true, false)
	checkNetURL(t, p.ImageUrl)
	checkNetURL(t, p.LandingUrl)
	if p.Width < 1 || p.Width > 10000 || p.Height < 1 || p.Height > 10000 {
		t.Fatalf("accepted size %dx%d", p.Width, p.Height)
	}
	if p.PriceMicros < 0 || p.SalePriceMicros < 0 || p.SalePriceMicros > p.PriceMicros {
		t.Fatalf("accepted prices %d/%d", p.PriceMicros, p.SalePriceMicros)
	}
	if !money.IsCode(p.Currency) {
		t.Fatalf("accepted currency %q", p.Currency)
	}
	if p.UpdatedAt < 0 || p.UpdatedAt > maxUnixSeconds {
		t.Fatalf("accepted updated_at %d", p.UpdatedAt)
	}
}

// readFuzz reads a whole feed checking the invariants every feed must keep.
func readFuzz(t *testing.T, data []byte, format Format, maxLine int) []error {
	t.Helper()
	r, err := NewReader(bytes.NewReader(data), "", Options{Format: format, MaxLineBytes: maxLine})
	if err != nil {
		if errors.Is(err, ErrBadHeader) {
			return nil
		}
		t.Fatalf("NewReader: %v", err)
	}
	physical := int64(bytes.Count(data, []byte("\n")) + 1)
	var row Row
	var errs []error
	last := int64(0)
	for n := 0; ; n++ {
		if n > len(data)+1 {
			t.Fatal("reader does not end")
		}
		err := r.Next(&row)
		if err == io.EOF {
			break
		}
		var re *RowError
		if err != nil && !errors.As(err, &re) {
			t.Fatalf("fatal error on in-memory data: %v", err)
		}
		if row.Line <= last || row.Line > physical {
			t.Fatalf("line %d after %d (file has %d lines)", row.Line, last, physical)
		}
		last = row.Line
		if re != nil {
			if re.Line != row.Line || len(re.Raw) > DefaultMaxRawInReject || re.Reason == "" {
				t.Fatalf("bad RowError %+v", re)
			}
			found := false
			for _, reason := range Reasons() {
				found = found || reason == re.Reason
			}
			if !found {
				t.Fatalf("reason %q not in Reasons()", re.Reason)
			}
		} else {
			checkRow(t, &row)
		}
		errs = append(errs, err)
	}
	return errs
}

// splitAll splits data with the reader's CSV splitter (no header).
func splitAll(data []byte) (recs [][]string, lines []int64, failed bool) {
	r := &Reader{opts: Options{MaxLineBytes: 1 << 20}, format: CSV}
	r.br = bufio.NewReaderSize(bytes.NewReader(data), 16)
	for {
		start, st, reason, err := r.readRecord()
		if err != nil {
			panic(err)
		}
		if st == lineEOF {
			return recs, lines, failed
		}
		if reason != "" {
			failed = true
			continue
		}
		rec := make([]string, len(r.csv.fields))
		for i, f := range r.csv.fields {
			rec[i] = string(f)
		}
		recs = append(recs, rec)
		lines = append(lines, start)
	}
}

func FuzzCSVRow(f *testing.F) {
	for _, s := range csvSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		readFuzz(t, append([]byte(fuzzHeader), data...), CSV, 4096)
		readFuzz(t, data, CSV, 64) // data as its own header, tight line limit

		// Differential: where encoding/csv reads every record without error,
		// the splitter must give the same records from the same lines. (It
		// handles a lone '\r' and a BOM differently, so skip those.)
		if bytes.IndexByte(data, '\r') >= 0 || bytes.HasPrefix(data, []byte("\xef\xbb\xbf")) {
			return
		}
		cr := csv.NewReader(bytes.NewReader(data))
		cr.FieldsPerRecord = -1
		var want [][]string
		var wantLines []int64
		csvFailed := false
		for {
			rec, err := cr.Read()
			if err == io.EOF {
				break
			}
			if err != nil {
				csvFailed = true
				break
			}
			line, _ := cr.FieldPos(0)
			want = append(want, rec)
			wantLines = append(wantLines, int64(line))
		}
		got, gotLines, failed := splitAll(data)
		if csvFailed {
			if !failed {
				t.Fatalf("encoding/csv failed, splitter accepted everything: %q", got)
			}
			return
		}
		if failed {
			t.Fatalf("splitter failed where encoding/csv read %q", want)
		}
		if len(got) != len(want) {
			t.Fatalf("splitter: %d records %q; encoding/csv: %d %q", len(got), got, len(want), want)
		}
		for i := range got {
			if strings.Join(got[i], "\x00|") != strings.Join(want[i], "\x00|") || gotLines[i] != wantLines[i] {
				t.Fatalf("record %d: splitter %q at line %d; encoding/csv %q at line %d", i, got[i], gotLines[i], want[i], wantLines[i])
			}
		}
	})
}

func FuzzJSONLRow(f *testing.F) {
	for _, s := range jsonSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		readFuzz(t, line, JSONL, 64<<10)
		if bytes.ContainsAny(line, "\n\r") || bytes.HasPrefix(line, []byte("\xef\xbb\xbf")) || len(trimSpace(line)) == 0 {
			return
		}
		errs := readFuzz(t, append(line, '\n'), JSONL, 1<<20)
		if len(errs) != 1 {
			t.Fatalf("one line gave %d rows", len(errs))
		}
		var re *RowError
		syntaxBad := errors.As(errs[0], &re) && (re.Reason == ReasonBadJSON && re.Field == "")
		t0 := trimSpace(line)
		wantValid := json.Valid(line) && t0[0] == '{'
		if syntaxBad == wantValid {
			t.Fatalf("json.Valid=%v (object) but reader says %v", wantValid, errs[0])
		}
		if errs[0] != nil {
			return
		}
		// Accepted: text fields must match encoding/json's decoding.
		var m map[string]any
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.UseNumber()
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("reader accepted, encoding/json: %v", err)
		}
		var row Row
		r, _ := NewReader(bytes.NewReader(line), "", Options{Format: JSONL})
		if err := r.Next(&row); err != nil {
			t.Fatal(err)
		}
		for key, got := range map[string]string{
			"title": row.Product.Title, "description": row.Product.Description, "brand": row.Product.Brand,
			"category": row.Product.Category, "image_url": row.Product.ImageUrl, "landing_url": row.Product.LandingUrl,
		} {
			want, _ := m[key].(string)
			if row.Delete {
				want = ""
			}
			if string(trimSpace([]byte(want))) != got {
				t.Fatalf("%s: reader %q, encoding/json %q", key, got, want)
			}
		}
		var idText string
		switch v := m["id"].(type) {
		case json.Number:
			idText = v.String()
		case string:
			idText = string(trimSpace([]byte(v)))
		}
		if id, err := strconv.ParseInt(idText, 10, 64); err != nil || id != row.Product.ProductId {
			t.Fatalf("id: reader %d, encoding/json %q", row.Product.ProductId, idText)
		}
	})
}
