package feed_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/rtbd/rtbd/ingest/feed"
	"github.com/rtbd/rtbd/rtb/money"
	"github.com/rtbd/rtbd/rtb/money/moneytest"
)

// TestMoneyPaths feeds the moneytest amounts through a product's price and
// sale_price, in CSV, in JSONL as a string and, where the text is a JSON
// number, as a number, and checks the table's micros (the bidder's test
// feeds the same table through campaigns, notices and floors). The feed
// trims every cell before any field rule, so amounts with spaces around
// them are left out here; an empty cell is a missing field.
func TestMoneyPaths(t *testing.T) {
	for _, a := range moneytest.Amounts {
		if strings.TrimSpace(a.Text) != a.Text {
			continue
		}
		wantReason := feed.ReasonBadPrice
		switch {
		case a.Err == nil:
			wantReason = ""
		case a.Text == "":
			wantReason = feed.ReasonMissingField
		case errors.Is(a.Err, money.ErrNegative):
			wantReason = feed.ReasonNegativePrice
		}
		for _, field := range []string{"price", "sale_price"} {
			m := goodRow(1)
			if field == "sale_price" {
				m["price"] = "999999999999.999999"
			}
			m[field] = a.Text
			vals := make([]string, len(columns))
			for i, c := range columns {
				vals[i] = m[c]
			}
			feeds := map[string]string{
				"f.csv":   renderCSV(t, columns) + renderCSV(t, vals),
				"f.jsonl": renderJSON(t, m),
			}
			if json.Valid([]byte(a.Text)) && a.Text != "" && (a.Text[0] == '-' || a.Text[0] >= '0' && a.Text[0] <= '9') {
				s := renderJSON(t, m)
				q, _ := json.Marshal(a.Text)
				feeds["number.jsonl"] = strings.Replace(s, `"`+field+`":`+string(q), `"`+field+`":`+a.Text, 1)
				if feeds["number.jsonl"] == s {
					t.Fatalf("%q: no %s in %s", a.Text, field, s)
				}
			}
			for name, text := range feeds {
				if a.Text == "" && field == "sale_price" {
					continue // an absent sale_price is no sale
				}
				got := readAll(t, []byte(text), name, feed.Options{})
				if len(got) != 1 {
					t.Fatalf("%s %s %q: %d rows", name, field, a.Text, len(got))
				}
				var re *feed.RowError
				errors.As(got[0].err, &re)
				p := &got[0].row.Product
				micros := p.PriceMicros
				if field == "sale_price" {
					micros = p.SalePriceMicros
				}
				switch {
				case wantReason == "" && (got[0].err != nil || micros != a.Micros):
					t.Errorf("%s %s %q: %d, %v; want %d", name, field, a.Text, micros, got[0].err, a.Micros)
				case wantReason != "" && (re == nil || re.Field != field || re.Reason != wantReason):
					t.Errorf("%s %s %q: %v; want %s", name, field, a.Text, got[0].err, wantReason)
				}
			}
		}
	}
}
