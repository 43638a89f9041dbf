package moneytest

import (
	"errors"
	"testing"

	"github.com/rtbd/rtbd/rtb/money"
)

// TestAmounts: the table is what rtb/money itself gives.
func TestAmounts(t *testing.T) {
	for _, a := range Amounts {
		v, err := money.Parse(a.Text)
		if a.Err == nil && (err != nil || v != a.Micros) || a.Err != nil && (!errors.Is(err, a.Err) || v != 0) {
			t.Errorf("money.Parse(%q) = %d, %v; want %d, %v", a.Text, v, err, a.Micros, a.Err)
		}
		if got := money.FromFloat(a.Float); got != a.FloatMicros {
			t.Errorf("money.FromFloat(%v) = %d, want %d", a.Float, got, a.FloatMicros)
		}
	}
}
