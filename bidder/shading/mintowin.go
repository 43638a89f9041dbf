package shading

import (
	"errors"
	"math"

	"github.com/rtbd/rtbd/rtb/money"
)

// BadMinToWin says why a notice's m (the minimum bid to win,
// ${AUCTION_MIN_TO_WIN}) was not taken as an observation.
type BadMinToWin uint8

// Values of BadMinToWin; MinToWinOK is a usable m.
const (
	MinToWinOK       BadMinToWin = iota
	MinToWinAbsent               // no m, or empty
	MinToWinMacro                // the unfilled macro
	MinToWinNotPrice             // not a decimal price (NaN, Inf, garbage)
	MinToWinNegative             // below zero
	MinToWinAboveBid             // a win whose m is above the price bid (m is at most the price that won)
	MinToWinBelowBid             // a loss whose m is at or below the price bid (that price would have won)
	MinToWinAbsurd               // a loss whose m is above AbsurdFactor times the bid, or above MaxMinToWinMicros
	NumBadMinToWin
)

var badNames = [NumBadMinToWin]string{"ok", "absent", "macro", "not_price", "negative", "above_bid", "below_bid", "absurd"}

// String is a fixed, metric-safe name.
func (r BadMinToWin) String() string {
	if r < NumBadMinToWin {
		return badNames[r]
	}
	return "unknown"
}

// Bounds of a plausible m on a loss.
const (
	// AbsurdFactor: an m above this many times the bid is refused.
	AbsurdFactor = 20
	// MaxMinToWinMicros: an m above 1,000 CPM is refused.
	MaxMinToWinMicros = 1_000_000_000
)

const minToWinMacro = "${AUCTION_MIN_TO_WIN}"

// ParseMinToWin reads the m of a notice (CPM as a decimal, in the bid's
// currency) of a bid of priceMicros that won (won true) or lost, and
// checks it: on a win m is the price to tie (the next bid or the floor)
// and at most the price bid; on a loss it is above the bid, within
// AbsurdFactor of it and MaxMinToWinMicros. No allocation.
func ParseMinToWin(raw []byte, priceMicros int64, won bool) (int64, BadMinToWin) {
	if len(raw) == 0 {
		return 0, MinToWinAbsent
	}
	if string(raw) == minToWinMacro {
		return 0, MinToWinMacro
	}
	m, err := money.Parse(raw)
	switch {
	case errors.Is(err, money.ErrNegative):
		return 0, MinToWinNegative
	case err != nil:
		return 0, MinToWinNotPrice
	}
	return m, CheckMinToWin(m, priceMicros, won)
}

// CheckMinToWin checks an m already in micros (see ParseMinToWin).
func CheckMinToWin(m, priceMicros int64, won bool) BadMinToWin {
	switch {
	case m < 0:
		return MinToWinNegative
	case won && m > priceMicros:
		return MinToWinAboveBid
	case won:
		return MinToWinOK
	case m <= priceMicros:
		return MinToWinBelowBid
	case m > MaxMinToWinMicros || float64(m) > AbsurdFactor*math.Max(float64(priceMicros), 1):
		return MinToWinAbsurd
	}
	return MinToWinOK
}
