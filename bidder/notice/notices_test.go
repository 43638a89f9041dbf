package notice

import (
	"strconv"
	"testing"

	"github.com/rtbd/rtbd/bidder/token"
	"github.com/rtbd/rtbd/rtb/money/moneytest"
)

// TestClearingPriceMoney feeds the moneytest amounts through the notice
// price (p= of /win, /bill and /imp): each gives the table's micros, and
// none is the bid price, estimated.
func TestClearingPriceMoney(t *testing.T) {
	h := &Handler{}
	for _, a := range moneytest.Amounts {
		name := strconv.Quote(a.Text)
		textOK := a.Err == nil
		bidTok := token.Token{PriceMicros: 7}
		v, estimated, ok := h.clearingPrice([]byte(a.Text), &bidTok)
		switch {
		case a.Text == "":
			if !ok || !estimated || v != 7 {
				t.Errorf("%s: notice price = %d, %v, %v; want the bid price 7, estimated", name, v, estimated, ok)
			}
		case ok != textOK || v != a.Micros || estimated:
			t.Errorf("%s: notice price = %d, %v; want %d, %v", name, v, ok, a.Micros, textOK)
		}
	}
}
