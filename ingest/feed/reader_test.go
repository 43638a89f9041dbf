package feed_test

import (
	"bytes"
	"compress/gzip"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"testing"

	"github.com/rtbd/rtbd/ingest/feed"
)

// columns is the order the tests write CSV columns in (not the documented
// order, on purpose), with an unknown column in the middle.
var columns = []string{
	"ID", "group_id", "title", "image_url", "width", "height", "landing_url", "extra",
	"price", "sale_price", "currency", "category", "brand", "in_stock", "updated_at",
	"op", "deleted", "description",
}

// goodRow returns a valid row as column -> value.
func goodRow(id int) map[string]string {
	return map[string]string{
		"ID": fmt.Sprint(id), "group_id": "7", "title": "Brand X Organic Cotton Crew T-Shirt - Navy, M",
		"image_url": "https://img.example-shop.com/p/7/1.jpg", "width": "600", "height": "600",
		"landing_url": "https://www.example-shop.com/g/7/item/1?utm_source=rtbd", "extra": "ignored",
		"price": "19.99", "sale_price": "", "currency": "JPY", "category": "Apparel & Accessories > Clothing",
		"brand": "Brand X", "in_stock": "", "updated_at": "", "op": "", "deleted": "",
		"description": "Soft, \"organic\" cotton.\nMachine washable.",
	}
}

// want is what reading one row should give.
type want struct {
	field  string      // "" for a valid row, else the RowError field
	reason feed.Reason // "" for a valid row
	del    bool
	check  func(t *testing.T, r *feed.Row) // optional, for valid rows
}

type rowCase struct {
	name string
	set  map[string]string // overrides of goodRow
	want want
}

func ok(check func(t *testing.T, r *feed.Row)) want { return want{check: check} }
func bad(field string, reason feed.Reason) want     { return want{field: field, reason: reason} }

// rowCases apply to CSV and JSONL alike (values are strings in both).
var rowCases = []rowCase{
	{"good", nil, ok(func(t *testing.T, r *feed.Row) {
		p := &r.Product
		if p.ProductId != 1000 || p.ProductGroupId != 7 || p.Title != "Brand X Organic Cotton Crew T-Shirt - Navy, M" ||
			p.Width != 600 || p.Height != 600 || p.PriceMicros != 19_990_000 || p.SalePriceMicros != 0 ||
			p.Currency != "JPY" || p.Brand != "Brand X" || p.Category != "Apparel & Accessories > Clothing" ||
			!p.InStock || p.UpdatedAt != 0 || r.Delete ||
			p.ImageUrl != "https://img.example-shop.com/p/7/1.jpg" ||
			p.LandingUrl != "https://www.example-shop.com/g/7/item/1?utm_source=rtbd" ||
			p.Description != "Soft, \"organic\" cotton.\nMachine washable." {
			t.Errorf("product = %v", p)
		}
	})},
	{"trimmed", map[string]string{"title": "  Spaced out \t", "price": " 1980 ", "currency": " jpy"}, ok(func(t *testing.T, r *feed.Row) {
		if r.Product.Title != "Spaced out" || r.Product.PriceMicros != 1980_000_000 || r.Product.Currency != "JPY" {
			t.Errorf("product = %v", &r.Product)
		}
	})},
	{"empty id", map[string]string{"ID": ""}, bad("id", feed.ReasonMissingField)},
	{"blank id", map[string]string{"ID": "   "}, bad("id", feed.ReasonMissingField)},
	{"id not a number", map[string]string{"ID": "12a"}, bad("id", feed.ReasonBadNumber)},
	{"id zero", map[string]string{"ID": "0"}, bad("id", feed.ReasonBadNumber)},
	{"id negative", map[string]string{"ID": "-5"}, bad("id", feed.ReasonBadNumber)},
	{"id overflow", map[string]string{"ID": "9223372036854775808"}, bad("id", feed.ReasonBadNumber)},
	{"id max", map[string]string{"ID": "9223372036854775807"}, ok(func(t *testing.T, r *feed.Row) {
		if r.Product.ProductId != 9223372036854775807 {
			t.Errorf("id = %d", r.Product.ProductId)
		}
	})},
	{"group missing", map[string]string{"group_id": ""}, bad("group_id", feed.ReasonMissingField)},
	{"group float", map[string]string{"group_id": "7.0"}, bad("group_id", feed.ReasonBadNumber)},
	{"title missing", map[string]string{"title": ""}, bad("title", feed.ReasonMissingField)},
	{"title 500 bytes", map[string]string{"title": strings.Repeat("é", 250)}, ok(nil)},
	{"title 501 bytes", map[string]string{"title": strings.Repeat("a", 501)}, bad("title", feed.ReasonFieldTooLong)},
	{"title huge", map[string]string{"title": strings.Repeat("x", 30000)}, bad("title", feed.ReasonFieldTooLong)},
	{"title bad utf8", map[string]string{"title": "caf\xe9 au lait"}, bad("title", feed.ReasonBadUTF8)},
	{"title tab", map[string]string{"title": "a\tb"}, bad("title", feed.ReasonBadUTF8)},
	{"title newline", map[string]string{"title": "a\nb"}, bad("title", feed.ReasonBadUTF8)},
	{"title NUL", map[string]string{"title": "a\x00b"}, bad("title", feed.ReasonBadUTF8)},
	{"title C1 control", map[string]string{"title": "a\u0085b"}, bad("title", feed.ReasonBadUTF8)},
	{"title japanese", map[string]string{"title": "オーガニックコットン Tシャツ"}, ok(func(t *testing.T, r *feed.Row) {
		if r.Product.Title != "オーガニックコットン Tシャツ" {
			t.Errorf("title = %q", r.Product.Title)
		}
	})},
	{"description tabs and CRLF", map[string]string{"description": "a\tb\r\nc"}, ok(nil)},
	{"description 2001", map[string]string{"description": strings.Repeat("d", 2001)}, bad("description", feed.ReasonFieldTooLong)},
	{"description NUL", map[string]string{"description": "a\x00"}, bad("description", feed.ReasonBadUTF8)},
	{"description absent", map[string]string{"description": ""}, ok(func(t *testing.T, r *feed.Row) {
		if r.Product.Description != "" {
			t.Errorf("description = %q", r.Product.Description)
		}
	})},
	{"image ftp", map[string]string{"image_url": "ftp://img.example.com/a.jpg"}, bad("image_url", feed.ReasonBadURL)},
	{"image relative", map[string]string{"image_url": "/p/1.jpg"}, bad("image_url", feed.ReasonBadURL)},
	{"image no host", map[string]string{"image_url": "https:///p/1.jpg"}, bad("image_url", feed.ReasonBadURL)},
	{"image space", map[string]string{"image_url": "https://img.example.com/a b.jpg"}, bad("image_url", feed.ReasonBadURL)},
	{"image bad escape", map[string]string{"image_url": "https://img.example.com/%zz.jpg"}, bad("image_url", feed.ReasonBadURL)},
	{"image quote", map[string]string{"image_url": `https://img.example.com/"onerror=x.jpg`}, bad("image_url", feed.ReasonBadURL)},
	{"image too long", map[string]string{"image_url": "https://img.example.com/" + strings.Repeat("a", 2030)}, bad("image_url", feed.ReasonFieldTooLong)},
	{"image missing", map[string]string{"image_url": ""}, bad("image_url", feed.ReasonMissingField)},
	{"image upper case, port, query", map[string]string{"image_url": "HTTPS://Img.Example.com:8443/p/%E3%81%82.jpg?x=1&y=2#f"}, ok(nil)},
	{"image ipv6 and idn", map[string]string{"image_url": "http://[2001:db8::1]:8080/a.jpg"}, ok(nil)},
	{"landing non-ascii path", map[string]string{"landing_url": "https://例え.jp/商品/1"}, ok(nil)},
	{"landing javascript", map[string]string{"landing_url": "javascript:alert(1)"}, bad("landing_url", feed.ReasonBadURL)},
	{"landing userinfo", map[string]string{"landing_url": "https://user@evil.example/"}, bad("landing_url", feed.ReasonBadURL)},
	{"landing bad port", map[string]string{"landing_url": "https://shop.example:80a/"}, bad("landing_url", feed.ReasonBadURL)},
	{"width zero", map[string]string{"width": "0"}, bad("width", feed.ReasonBadSize)},
	{"width 10001", map[string]string{"width": "10001"}, bad("width", feed.ReasonBadSize)},
	{"width 10000", map[string]string{"width": "10000"}, ok(nil)},
	{"width negative", map[string]string{"width": "-1"}, bad("width", feed.ReasonBadSize)},
	{"width text", map[string]string{"width": "wide"}, bad("width", feed.ReasonBadNumber)},
	{"width fraction", map[string]string{"width": "600.5"}, bad("width", feed.ReasonBadNumber)},
	{"height missing", map[string]string{"height": ""}, bad("height", feed.ReasonMissingField)},
	{"price negative", map[string]string{"price": "-1"}, bad("price", feed.ReasonNegativePrice)},
	{"price exponent", map[string]string{"price": "1e5"}, bad("price", feed.ReasonBadPrice)},
	{"price 7 decimals", map[string]string{"price": "1.0000001"}, bad("price", feed.ReasonBadPrice)},
	{"price 6 decimals", map[string]string{"price": "0.000001"}, ok(func(t *testing.T, r *feed.Row) {
		if r.Product.PriceMicros != 1 {
			t.Errorf("price = %d", r.Product.PriceMicros)
		}
	})},
	{"price zero", map[string]string{"price": "0"}, ok(nil)},
	{"price huge", map[string]string{"price": "99999999999999"}, bad("price", feed.ReasonBadPrice)},
	{"price separators", map[string]string{"price": "1,980"}, bad("price", feed.ReasonBadPrice)},
	{"price currency sign", map[string]string{"price": "$19.99"}, bad("price", feed.ReasonBadPrice)},
	{"price missing", map[string]string{"price": ""}, bad("price", feed.ReasonMissingField)},
	{"sale above price", map[string]string{"sale_price": "20"}, bad("sale_price", feed.ReasonSaleAbovePrice)},
	{"sale equal price", map[string]string{"sale_price": "19.990"}, ok(func(t *testing.T, r *feed.Row) {
		if r.Product.SalePriceMicros != 19_990_000 {
			t.Errorf("sale = %d", r.Product.SalePriceMicros)
		}
	})},
	{"sale negative", map[string]string{"sale_price": "-0.5"}, bad("sale_price", feed.ReasonNegativePrice)},
	{"sale bad", map[string]string{"sale_price": "cheap"}, bad("sale_price", feed.ReasonBadPrice)},
	{"currency unknown", map[string]string{"currency": "XXX"}, bad("currency", feed.ReasonUnknownCurrency)},
	{"currency word", map[string]string{"currency": "YEN"}, bad("currency", feed.ReasonUnknownCurrency)},
	{"currency long", map[string]string{"currency": "JPYY"}, bad("currency", feed.ReasonUnknownCurrency)},
	{"currency missing", map[string]string{"currency": ""}, bad("currency", feed.ReasonMissingField)},
	{"currency krw", map[string]string{"currency": "KRW"}, ok(nil)},
	{"category 201", map[string]string{"category": strings.Repeat("c", 201)}, bad("category", feed.ReasonFieldTooLong)},
	{"brand control", map[string]string{"brand": "a\x1bb"}, bad("brand", feed.ReasonBadUTF8)},
	{"in_stock maybe", map[string]string{"in_stock": "maybe"}, bad("in_stock", feed.ReasonBadBool)},
	{"in_stock out of stock", map[string]string{"in_stock": "Out Of Stock"}, ok(func(t *testing.T, r *feed.Row) {
		if r.Product.InStock {
			t.Error("in_stock = true")
		}
	})},
	{"in_stock NO", map[string]string{"in_stock": "NO"}, ok(func(t *testing.T, r *feed.Row) {
		if r.Product.InStock {
			t.Error("in_stock = true")
		}
	})},
	{"in_stock 1", map[string]string{"in_stock": "1"}, ok(func(t *testing.T, r *feed.Row) {
		if !r.Product.InStock {
			t.Error("in_stock = false")
		}
	})},
	{"updated unix", map[string]string{"updated_at": "1735689600"}, ok(func(t *testing.T, r *feed.Row) {
		if r.Product.UpdatedAt != 1735689600 {
			t.Errorf("updated_at = %d", r.Product.UpdatedAt)
		}
	})},
	{"updated rfc3339", map[string]string{"updated_at": "2025-01-01T09:00:00.5+09:00"}, ok(func(t *testing.T, r *feed.Row) {
		if r.Product.UpdatedAt != 1735689600 {
			t.Errorf("updated_at = %d", r.Product.UpdatedAt)
		}
	})},
	{"updated words", map[string]string{"updated_at": "yesterday"}, bad("updated_at", feed.ReasonBadTime)},
	{"updated feb 30", map[string]string{"updated_at": "2025-02-30T00:00:00Z"}, bad("updated_at", feed.ReasonBadTime)},
	{"updated millis", map[string]string{"updated_at": "1735689600000"}, bad("updated_at", feed.ReasonBadTime)},
	{"op bad", map[string]string{"op": "remove"}, bad("op", feed.ReasonBadOp)},
	{"op upsert", map[string]string{"op": "UPSERT"}, ok(nil)},
	{"op delete, only ids", map[string]string{"op": "delete", "title": "", "image_url": "", "width": "", "height": "",
		"landing_url": "", "price": "", "currency": "", "description": "", "category": "", "brand": ""},
		want{del: true, check: func(t *testing.T, r *feed.Row) {
			if r.Product.ProductId != 1000 || r.Product.ProductGroupId != 7 || r.Product.Title != "" {
				t.Errorf("product = %v", &r.Product)
			}
		}}},
	{"op delete ignores bad fields", map[string]string{"op": "Delete", "price": "-1", "currency": "???"}, want{del: true}},
	{"op delete needs id", map[string]string{"op": "delete", "ID": ""}, bad("id", feed.ReasonMissingField)},
	{"deleted true", map[string]string{"deleted": "true", "price": ""}, want{del: true}},
	{"deleted false", map[string]string{"deleted": "false"}, ok(nil)},
	{"deleted maybe", map[string]string{"deleted": "maybe"}, bad("deleted", feed.ReasonBadBool)},
	{"deleted contradicts op", map[string]string{"deleted": "yes", "op": "upsert"}, bad("op", feed.ReasonBadOp)},
	{"first missing field wins", map[string]string{"title": "", "price": ""}, bad("title", feed.ReasonMissingField)},
}

// renderCSV writes one record with encoding/csv (proper quoting).
func renderCSV(t *testing.T, vals []string) string {
	t.Helper()
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	if err := w.Write(vals); err != nil {
		t.Fatal(err)
	}
	w.Flush()
	return b.String()
}

func rowValues(c rowCase, id int) map[string]string {
	m := goodRow(id)
	for k, v := range c.set {
		m[k] = v
	}
	return m
}

// jsonKey maps the CSV test column to the JSON key.
func jsonKey(col string) string { return strings.ToLower(col) }

// renderJSON writes one JSON object; values that are "" are left out, so
// the JSONL feed says "absent" the way CSV does with an empty cell.
func renderJSON(t *testing.T, m map[string]string) string {
	t.Helper()
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b bytes.Buffer
	b.WriteByte('{')
	for _, k := range keys {
		if m[k] == "" {
			continue
		}
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(jsonKey(k))
		b.Write(kb)
		b.WriteByte(':')
		writeJSONString(&b, m[k])
	}
	b.WriteString("}\n")
	return b.String()
}

// writeJSONString quotes s byte for byte (json.Marshal would replace
// invalid UTF-8, which the bad_utf8 cases need to keep).
func writeJSONString(b *bytes.Buffer, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20:
			fmt.Fprintf(b, `\u%04x`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
}

type result struct {
	line int64
	err  error
	row  feed.Row
}

// readAll reads every row; it fails the test on a fatal error.
func readAll(t *testing.T, data []byte, name string, opts feed.Options) []*result {
	t.Helper()
	r, err := feed.NewReader(bytes.NewReader(data), name, opts)
	if err != nil {
		t.Fatalf("NewReader: %v", err)
	}
	var out []*result
	for {
		res := &result{}
		err := r.Next(&res.row)
		if err == io.EOF {
			break
		}
		var re *feed.RowError
		if err != nil && !errors.As(err, &re) {
			t.Fatalf("fatal error after %d rows: %v", len(out), err)
		}
		res.err = err
		res.line = res.row.Line
		if re != nil && re.Line != res.row.Line {
			t.Errorf("RowError.Line %d != Row.Line %d", re.Line, res.row.Line)
		}
		out = append(out, res)
		if len(out) > 1_000_000 {
			t.Fatal("reader does not end")
		}
	}
	return out
}

func checkResult(t *testing.T, name string, got *result, wantLine int64, w want) {
	t.Helper()
	if got.line != wantLine {
		t.Errorf("%s: line %d, want %d", name, got.line, wantLine)
	}
	if w.reason == "" {
		if got.err != nil {
			t.Errorf("%s: unexpected error %v", name, got.err)
			return
		}
		if got.row.Delete != w.del {
			t.Errorf("%s: Delete = %v, want %v", name, got.row.Delete, w.del)
		}
		if w.check != nil {
			w.check(t, &got.row)
		}
		return
	}
	var re *feed.RowError
	if !errors.As(got.err, &re) {
		t.Errorf("%s: err = %v, want %s on %s", name, got.err, w.reason, w.field)
		return
	}
	if re.Reason != w.reason || re.Field != w.field || re.Line != wantLine {
		t.Errorf("%s: got line %d field %q reason %s (%v), want line %d field %q reason %s",
			name, re.Line, re.Field, re.Reason, re.Err, wantLine, w.field, w.reason)
	}
}

// TestRowCases writes every case, each followed by a good row, into one CSV
// feed and one JSONL feed, and checks each row's result and line number
// (rows with line breaks inside quoted fields take several lines).
func TestRowCases(t *testing.T) {
	for _, format := range []string{"csv", "jsonl"} {
		t.Run(format, func(t *testing.T) {
			var feedText strings.Builder
			var lines []int64
			var wants []want
			var names []string
			line := int64(1)
			if format == "csv" {
				feedText.WriteString(renderCSV(t, columns))
				line = 2
			}
			add := func(name string, m map[string]string, w want) {
				var s string
				if format == "csv" {
					vals := make([]string, len(columns))
					for i, c := range columns {
						vals[i] = m[c]
					}
					s = renderCSV(t, vals)
				} else {
					s = renderJSON(t, m)
				}
				feedText.WriteString(s)
				lines = append(lines, line)
				wants = append(wants, w)
				names = append(names, name)
				line += int64(strings.Count(s, "\n"))
			}
			for i, c := range rowCases {
				add(c.name, rowValues(c, 1000), c.want)
				add(c.name+" (next good row)", goodRow(2000+i), ok(nil))
			}
			got := readAll(t, []byte(feedText.String()), "feed."+format, feed.Options{})
			if len(got) != len(wants) {
				t.Fatalf("read %d rows, want %d", len(got), len(wants))
			}
			for i := range got {
				checkResult(t, names[i], got[i], lines[i], wants[i])
			}
		})
	}
}

// TestJSONTypes covers JSON values of every type for known keys.
func TestJSONTypes(t *testing.T) {
	base := `"id":1,"group_id":2,"title":"T","image_url":"https://a.example/i.jpg","width":300,"height":250,"landing_url":"https://a.example/","currency":"USD"`
	cases := []struct {
		name string
		line string
		want want
	}{
		{"numbers", `{` + base + `,"price":19.99,"sale_price":10}`, ok(func(t *testing.T, r *feed.Row) {
			if r.Product.PriceMicros != 19_990_000 || r.Product.SalePriceMicros != 10_000_000 || r.Product.Width != 300 || r.Product.Height != 250 {
				t.Errorf("product = %v", &r.Product)
			}
		})},
		{"ids as strings", `{"id":"1","group_id":" 2 ","title":"T","image_url":"https://a.example/i.jpg","width":"300","height":"250","landing_url":"https://a.example/","currency":"USD","price":"1"}`, ok(nil)},
		{"unknown keys of every type", `{"x":{"a":[1,2,{"b":null}]},"y":[],"z":"\u00e9",` + base + `,"price":1,"w":true,"v":-1.5e3}`, ok(nil)},
		{"escapes", `{` + base[:strings.Index(base, `"title"`)] + `"title":"caf\u00e9 \"bar\" \ud83c\udf63",` + base[strings.Index(base, `"image_url"`):] + `,"price":1}`, ok(func(t *testing.T, r *feed.Row) {
			if r.Product.Title != "café \"bar\" 🍣" {
				t.Errorf("title = %q", r.Product.Title)
			}
		})},
		{"escaped key", `{` + base + `,"pri\u0063e":1}`, ok(nil)},
		{"null is absent", `{` + base + `,"price":1,"brand":null,"sale_price":null}`, ok(nil)},
		{"null required", `{` + base + `,"price":null}`, bad("price", feed.ReasonMissingField)},
		{"last key wins", `{` + base + `,"price":-1,"price":2}`, ok(func(t *testing.T, r *feed.Row) {
			if r.Product.PriceMicros != 2_000_000 {
				t.Errorf("price = %d", r.Product.PriceMicros)
			}
		})},
		{"in_stock bools", `{` + base + `,"price":1,"in_stock":false}`, ok(func(t *testing.T, r *feed.Row) {
			if r.Product.InStock {
				t.Error("in_stock true")
			}
		})},
		{"in_stock number", `{` + base + `,"price":1,"in_stock":0}`, ok(func(t *testing.T, r *feed.Row) {
			if r.Product.InStock {
				t.Error("in_stock true")
			}
		})},
		{"deleted bool", `{"id":5,"group_id":6,"deleted":true}`, want{del: true}},
		{"op delete", `{"id":5,"group_id":6,"op":"delete"}`, want{del: true}},
		{"updated_at number", `{` + base + `,"price":1,"updated_at":1735689600}`, ok(func(t *testing.T, r *feed.Row) {
			if r.Product.UpdatedAt != 1735689600 {
				t.Errorf("updated_at = %d", r.Product.UpdatedAt)
			}
		})},
		{"id float", `{"id":1.5,"group_id":2}`, bad("id", feed.ReasonBadNumber)},
		{"id exponent", `{"id":1e3,"group_id":2}`, bad("id", feed.ReasonBadNumber)},
		{"id bool", `{"id":true,"group_id":2}`, bad("id", feed.ReasonBadNumber)},
		{"id object", `{"id":{"v":1},"group_id":2}`, bad("id", feed.ReasonBadNumber)},
		{"width string text", `{` + strings.Replace(base, `"width":300`, `"width":"big"`, 1) + `,"price":1}`, bad("width", feed.ReasonBadNumber)},
		{"price bool", `{` + base + `,"price":true}`, bad("price", feed.ReasonBadPrice)},
		{"price exponent number", `{` + base + `,"price":1e5}`, bad("price", feed.ReasonBadPrice)},
		{"price negative number", `{` + base + `,"price":-3}`, bad("price", feed.ReasonNegativePrice)},
		{"title number", `{` + strings.Replace(base, `"title":"T"`, `"title":5`, 1) + `,"price":1}`, bad("title", feed.ReasonBadJSON)},
		{"currency array", `{` + strings.Replace(base, `"currency":"USD"`, `"currency":["USD"]`, 1) + `,"price":1}`, bad("currency", feed.ReasonBadJSON)},
		{"in_stock string bad", `{` + base + `,"price":1,"in_stock":"sometimes"}`, bad("in_stock", feed.ReasonBadBool)},
		{"in_stock number bad", `{` + base + `,"price":1,"in_stock":2}`, bad("in_stock", feed.ReasonBadBool)},
		{"updated_at fraction", `{` + base + `,"price":1,"updated_at":1.5}`, bad("updated_at", feed.ReasonBadTime)},
		{"updated_at bool", `{` + base + `,"price":1,"updated_at":true}`, bad("updated_at", feed.ReasonBadTime)},
		{"op bool", `{"id":5,"group_id":6,"op":true}`, bad("op", feed.ReasonBadOp)},
		{"not an object", `[1,2,3]`, bad("", feed.ReasonBadJSON)},
		{"trailing comma", `{"id":1,}`, bad("", feed.ReasonBadJSON)},
		{"two objects", `{"id":1}{"id":2}`, bad("", feed.ReasonBadJSON)},
		{"single quotes", `{'id':1}`, bad("", feed.ReasonBadJSON)},
		{"bad escape", `{"title":"\x"}`, bad("", feed.ReasonBadJSON)},
		{"raw tab in string", "{\"title\":\"a\tb\"}", bad("", feed.ReasonBadJSON)},
		{"leading zero", `{"id":01}`, bad("", feed.ReasonBadJSON)},
		{"unclosed but terminated", `{"id":1`, bad("", feed.ReasonBadJSON)},
		{"bad utf8 in value", "{" + base + ",\"price\":1,\"brand\":\"\xff\"}", bad("brand", feed.ReasonBadUTF8)},
		{"lone surrogate becomes U+FFFD", `{` + base + `,"price":1,"brand":"\ud800x"}`, ok(func(t *testing.T, r *feed.Row) {
			if r.Product.Brand != "\uFFFDx" {
				t.Errorf("brand = %q", r.Product.Brand)
			}
		})},
		{"escaped control char", `{` + base + `,"price":1,"brand":"a\u0000"}`, bad("brand", feed.ReasonBadUTF8)},
	}
	var text strings.Builder
	for _, c := range cases {
		text.WriteString(c.line + "\r\n\n") // CRLF, and a blank line that is skipped
	}
	got := readAll(t, []byte(text.String()), "x.ndjson", feed.Options{})
	if len(got) != len(cases) {
		t.Fatalf("read %d rows, want %d", len(got), len(cases))
	}
	for i, c := range cases {
		checkResult(t, c.name, got[i], int64(2*i+1), c.want)
	}
}

const header = "id,group_id,title,image_url,width,height,landing_url,price,currency,description\n"

func csvGood(id int) string {
	return fmt.Sprintf("%d,1,T%d,https://a.example/%d.jpg,300,300,https://a.example/p/%d,1.5,USD,d\n", id, id, id, id)
}

// TestCSVQuoting: quoted fields with commas, quotes, CRLF and line breaks
// keep later line numbers right.
func TestCSVQuoting(t *testing.T) {
	text := header +
		csvGood(1) + // line 2
		"2,1,\"Tee, navy \"\"M\"\"\",https://a.example/2.jpg,300,300,https://a.example/p/2,1.5,USD,\"line one\r\nline two\n\nline four, \"\"quoted\"\"\"\r\n" + // lines 3-6
		csvGood(3) + // line 7
		"\n\r\n" + // 8, 9 blank
		"4,1,\"\",https://a.example/4.jpg,300,300,https://a.example/p/4,1.5,USD,\"\"\n" + // line 10: empty quoted title
		"\"5\",\"1\",\"T5\",\"https://a.example/5.jpg\",\"300\",\"300\",\"https://a.example/p/5\",\"1.5\",\"USD\",\"multi\nline\"\n" + // 11-12
		csvGood(6) // 13
	got := readAll(t, []byte(text), "q.csv", feed.Options{})
	wantLines := []int64{2, 3, 7, 10, 11, 13}
	if len(got) != len(wantLines) {
		t.Fatalf("read %d rows, want %d", len(got), len(wantLines))
	}
	for i, g := range got {
		if g.line != wantLines[i] {
			t.Errorf("row %d: line %d, want %d", i, g.line, wantLines[i])
		}
	}
	if p := &got[1].row.Product; got[1].err != nil || p.Title != `Tee, navy "M"` || p.Description != "line one\nline two\n\nline four, \"quoted\"" {
		t.Errorf("row 2: err %v, title %q, description %q", got[1].err, p.Title, p.Description)
	}
	checkResult(t, "empty quoted title", got[3], 10, bad("title", feed.ReasonMissingField))
	if p := &got[4].row.Product; got[4].err != nil || p.ProductId != 5 || p.Description != "multi\nline" {
		t.Errorf("row 5: err %v, product %v", got[4].err, p)
	}
}

// TestCSVStructure: records that cannot be split, or have the wrong number
// of fields, are rejected with the record's first line, and reading goes on.
func TestCSVStructure(t *testing.T) {
	long := "9,1," + strings.Repeat("x", 300) + ",https://a.example/9.jpg,300,300,https://a.example/p/9,1.5,USD,d\n"
	text := header +
		csvGood(1) + // 2
		"2,1,T2,https://a.example/2.jpg,300,300,https://a.example/p/2,1.5,USD\n" + // 3: one short
		"3,1,T3,https://a.example/3.jpg,300,300,https://a.example/p/3,1.5,USD,d,extra\n" + // 4: one long
		"4,1,T\"4,https://a.example/4.jpg,300,300,https://a.example/p/4,1.5,USD,d\n" + // 5: bare quote
		"5,1,\"T5\"x,https://a.example/5.jpg,300,300,https://a.example/p/5,1.5,USD,d\n" + // 6: text after quote
		long + // 7: too long (limit 256)
		"6,1,\"T6\n" + strings.Repeat("y", 200) + "\n" + strings.Repeat("z", 200) + "\",https://a.example/6.jpg,300,300,https://a.example/p/6,1.5,USD,d\n" + // 8-10: quoted record too long; skipping resumes at line 10's end
		csvGood(7) + // 11
		"\n" + // 12
		"8,1,\"unterminated\n" + // 13-14 truncated at EOF
		csvGood(99)
	got := readAll(t, []byte(text), "s.csv", feed.Options{MaxLineBytes: 256, MaxRawInReject: 16})
	wants := []struct {
		line int64
		w    want
	}{
		{2, ok(nil)},
		{3, bad("", feed.ReasonWrongColumnCount)},
		{4, bad("", feed.ReasonWrongColumnCount)},
		{5, bad("", feed.ReasonBadQuote)},
		{6, bad("", feed.ReasonBadQuote)},
		{7, bad("", feed.ReasonLineTooLong)},
		{8, bad("", feed.ReasonLineTooLong)},
		{11, ok(nil)},
		{13, bad("", feed.ReasonTruncatedLine)},
	}
	if len(got) != len(wants) {
		for _, g := range got {
			t.Logf("line %d err %v", g.line, g.err)
		}
		t.Fatalf("read %d rows, want %d", len(got), len(wants))
	}
	for i, w := range wants {
		checkResult(t, fmt.Sprintf("row %d", i), got[i], w.line, w.w)
	}
	var re *feed.RowError
	if errors.As(got[1].err, &re) && re.Raw != "2,1,T2,https://a" {
		t.Errorf("Raw = %q, want the first 16 bytes", re.Raw)
	}
}

// TestLongLineBoundedMemory streams a 64 MiB line through a reader with the
// default limit: it is rejected and the next row still reads with the right
// line number. (Bounded memory is checked in TestLineBufferBounded.)
func TestLongLineBoundedMemory(t *testing.T) {
	for _, format := range []string{"csv", "jsonl"} {
		t.Run(format, func(t *testing.T) {
			var pre, post string
			if format == "csv" {
				pre, post = header, csvGood(2)
			} else {
				post = `{"id":2,"group_id":1,"op":"delete"}` + "\n"
			}
			huge := io.LimitReader(repeatReader('a'), 64<<20)
			src := io.MultiReader(strings.NewReader(pre+"1,"), huge, strings.NewReader("\n"+post))
			r, err := feed.NewReader(src, "big."+format, feed.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var row feed.Row
			var re *feed.RowError
			if err := r.Next(&row); !errors.As(err, &re) || re.Reason != feed.ReasonLineTooLong || len(re.Raw) != feed.DefaultMaxRawInReject {
				t.Fatalf("first row: %v", err)
			}
			if err := r.Next(&row); err != nil || row.Product.ProductId != 2 {
				t.Fatalf("second row: %v, %v", err, &row.Product)
			}
			if err := r.Next(&row); err != io.EOF {
				t.Fatalf("end: %v", err)
			}
		})
	}
}

type repeatReader byte

func (b repeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(b)
	}
	return len(p), nil
}

func TestJSONLStructure(t *testing.T) {
	text := "\xef\xbb\xbf" + `{"id":1,"group_id":1,"op":"delete"}` + "\n" + // 1, with BOM
		"   \n" + // 2 blank
		`{"id":2,"group_id":1,"op":"delete"}` + "\n" + // 3
		`{"id":3,"group_id":1,"op":"delete"` + "\n" + // 4: unclosed, terminated: bad_json
		`{"id":` + strings.Repeat("1", 300) + "}\n" + // 5 too long
		`{"id":4,"group_id":1,"op":"delete"}` + "\n" + // 6
		`{"id":5,"group_id":1,"title":"cut off` // 7 truncated at EOF
	got := readAll(t, []byte(text), "x.jsonl", feed.Options{MaxLineBytes: 200})
	wants := []struct {
		line int64
		w    want
	}{
		{1, want{del: true}}, {3, want{del: true}}, {4, bad("", feed.ReasonBadJSON)},
		{5, bad("", feed.ReasonLineTooLong)}, {6, want{del: true}}, {7, bad("", feed.ReasonTruncatedLine)},
	}
	if len(got) != len(wants) {
		t.Fatalf("read %d rows, want %d", len(got), len(wants))
	}
	for i, w := range wants {
		checkResult(t, fmt.Sprintf("row %d", i), got[i], w.line, w.w)
	}
}

func gzipBytes(t *testing.T, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestGzip: gzip is read the same as plain text, detected by magic bytes
// whatever the name, including stdin with an explicit format.
func TestGzip(t *testing.T) {
	var plain strings.Builder
	plain.WriteString(header)
	for i := 1; i <= 2000; i++ {
		plain.WriteString(csvGood(i))
		if i%100 == 0 {
			plain.WriteString("x,1,bad\n")
		}
	}
	want := readAll(t, []byte(plain.String()), "f.csv", feed.Options{})
	gz := gzipBytes(t, []byte(plain.String()))
	for _, tc := range []struct {
		name string
		opts feed.Options
	}{
		{"f.csv.gz", feed.Options{}},
		{"f.CSV.GZ", feed.Options{}},
		{"f.csv", feed.Options{}},
		{"-", feed.Options{Format: feed.CSV}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := readAll(t, gz, tc.name, tc.opts)
			if len(got) != len(want) || len(got) != 2020 {
				t.Fatalf("read %d rows, plain gave %d", len(got), len(want))
			}
			for i := range got {
				if got[i].line != want[i].line || fmt.Sprint(got[i].err) != fmt.Sprint(want[i].err) ||
					got[i].row.Product.ProductId != want[i].row.Product.ProductId {
					t.Fatalf("row %d differs: %d %v vs %d %v", i, got[i].line, got[i].err, want[i].line, want[i].err)
				}
			}
		})
	}
}

func TestGzipMultistream(t *testing.T) {
	a := gzipBytes(t, []byte(header+csvGood(1)))
	b := gzipBytes(t, []byte(csvGood(2)))
	got := readAll(t, append(a, b...), "m.csv.gz", feed.Options{})
	if len(got) != 2 || got[1].err != nil || got[1].line != 3 {
		t.Fatalf("got %d rows", len(got))
	}
}

// TestFatal: corrupt or truncated gzip and I/O errors stop the feed with
// ErrFatal, repeatedly; rows before them were read.
func TestFatal(t *testing.T) {
	var plain strings.Builder
	plain.WriteString(header)
	for i := 1; i <= 5000; i++ {
		plain.WriteString(csvGood(i))
	}
	gz := gzipBytes(t, []byte(plain.String()))
	corrupt := append([]byte(nil), gz...)
	for i := len(corrupt) / 2; i < len(corrupt)/2+64; i++ {
		corrupt[i] ^= 0x55
	}
	ioErr := errors.New("disk on fire")
	for _, tc := range []struct {
		name    string
		src     io.Reader
		cause   error
		maxRows int // rows (valid or not) before the error, at most
	}{
		// Flipped bits decode to garbage rows (rejected one by one) until
		// flate or the CRC notices.
		{"corrupt gzip", bytes.NewReader(corrupt), nil, 1 << 20},
		{"truncated gzip", bytes.NewReader(gz[:len(gz)*2/3]), io.ErrUnexpectedEOF, 4999},
		{"missing gzip trailer", bytes.NewReader(gz[:len(gz)-4]), io.ErrUnexpectedEOF, 5000},
		{"io error", io.MultiReader(strings.NewReader(plain.String()[:100000]), errReader{ioErr}), ioErr, 4999},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := feed.NewReader(tc.src, "f.csv.gz", feed.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var row feed.Row
			n := 0
			for {
				err = r.Next(&row)
				var re *feed.RowError
				if err != nil && !errors.As(err, &re) {
					break
				}
				n++
			}
			if !errors.Is(err, feed.ErrFatal) {
				t.Fatalf("after %d rows: err = %v, want ErrFatal", n, err)
			}
			if tc.cause != nil && !errors.Is(err, tc.cause) {
				t.Errorf("err = %v, want it to wrap %v", err, tc.cause)
			}
			if n == 0 || n > tc.maxRows {
				t.Errorf("read %d rows before the error", n)
			}
			if err2 := r.Next(&row); err2 != err {
				t.Errorf("second call: %v, want the same fatal error", err2)
			}
		})
	}
	if _, err := feed.NewReader(bytes.NewReader([]byte{0x1f, 0x8b, 0, 0}), "f.csv", feed.Options{}); !errors.Is(err, feed.ErrFatal) {
		t.Errorf("bad gzip header: %v", err)
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

func TestHeader(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		ok         bool
	}{
		{"empty", "", false},
		{"blank lines only", "\n\n", false},
		{"missing price", "id,group_id,title,image_url,width,height,landing_url,currency\n", false},
		{"duplicate", "id,ID,group_id,title,image_url,width,height,landing_url,price,currency\n", false},
		{"unterminated quote", "\"id,group_id\n", false},
		{"delta feed", "id,group_id,op\n", true},
		{"delta feed, deleted", "deleted,group_id,id\n", true},
		{"delta without group", "id,op\n", false},
		{"any order, case, spaces, unknown columns, BOM", "\xef\xbb\xbf Currency ,PRICE,landing_url,height,width,image_url,title,foo,group_id,id\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := feed.NewReader(strings.NewReader(tc.text), "h.csv", feed.Options{})
			if tc.ok && err != nil {
				t.Errorf("err = %v", err)
			}
			if !tc.ok && !errors.Is(err, feed.ErrBadHeader) {
				t.Errorf("err = %v, want ErrBadHeader", err)
			}
		})
	}
	// A delta header accepts deletes, and rejects upserts missing fields per row.
	got := readAll(t, []byte("id,group_id,op\n1,2,delete\n3,4,\n"), "d.csv", feed.Options{})
	checkResult(t, "delete", got[0], 2, want{del: true})
	checkResult(t, "upsert", got[1], 3, bad("title", feed.ReasonMissingField))
}

func TestDetectFormat(t *testing.T) {
	for name, want := range map[string]feed.Format{
		"a.csv": feed.CSV, "/x/y/A.CSV": feed.CSV, "a.csv.gz": feed.CSV,
		"a.jsonl": feed.JSONL, "a.ndjson": feed.JSONL, "a.jsonl.gz": feed.JSONL, "a.NDJSON.GZ": feed.JSONL,
	} {
		if got, err := feed.DetectFormat(name); err != nil || got != want {
			t.Errorf("DetectFormat(%q) = %v, %v; want %v", name, got, err, want)
		}
	}
	for _, name := range []string{"-", "a.json", "a.gz", "a.tsv", "csv", ""} {
		if _, err := feed.DetectFormat(name); !errors.Is(err, feed.ErrUnknownFormat) {
			t.Errorf("DetectFormat(%q): err = %v", name, err)
		}
	}
	if _, err := feed.NewReader(strings.NewReader(""), "-", feed.Options{}); !errors.Is(err, feed.ErrUnknownFormat) {
		t.Errorf("stdin without format: %v", err)
	}
	for s, want := range map[string]feed.Format{"": feed.FormatAuto, "CSV": feed.CSV, "ndjson": feed.JSONL, "jsonl": feed.JSONL} {
		if got, err := feed.ParseFormat(s); err != nil || got != want {
			t.Errorf("ParseFormat(%q) = %v, %v", s, got, err)
		}
	}
	if _, err := feed.ParseFormat("xml"); !errors.Is(err, feed.ErrUnknownFormat) {
		t.Errorf("ParseFormat(xml): %v", err)
	}
}

func TestRowErrorText(t *testing.T) {
	got := readAll(t, []byte(header+"1,1,T,https://a.example/1.jpg,300,300,https://a.example/,-1,USD,d\n"), "e.csv", feed.Options{MaxRawInReject: -1})
	var re *feed.RowError
	if !errors.As(got[0].err, &re) {
		t.Fatal(got[0].err)
	}
	if s := re.Error(); s != `feed: line 2: price: negative_price: below zero: value "-1"` {
		t.Errorf("Error() = %s", s)
	}
	if re.Raw != "" {
		t.Errorf("Raw = %q with MaxRawInReject < 0", re.Raw)
	}
	got = readAll(t, []byte(header+"1,1,"+strings.Repeat("é", 400)+"\n"), "e.csv", feed.Options{MaxRawInReject: 6})
	if errors.As(got[0].err, &re); re.Raw != "1,1,é" {
		t.Errorf("Raw = %q, want cut at a rune boundary", re.Raw)
	}
	if len(feed.Reasons()) != 18 {
		t.Errorf("Reasons() has %d entries", len(feed.Reasons()))
	}
}
