package money

import (
	"errors"
	"fmt"
)

// Unit is one currency unit in micros.
const Unit = 1_000_000

// MaxText is the largest amount Parse accepts: 999999999999.999999 units.
const MaxText = 999_999_999_999_999_999

// maxTextLen bounds the text Parse reads, in bytes.
const maxTextLen = 32

// maxUnitDigits is the most significant integer digits Parse accepts.
const maxUnitDigits = 12

// Errors of Parse and ParseSigned. Every syntax error is ErrSyntax or wraps
// it (errors.Is(err, ErrSyntax)); the wrapping ones say more for callers
// whose messages tell them apart.
var (
	// ErrSyntax: the text is not a decimal amount: it does not start with a
	// digit (after an optional "-").
	ErrSyntax = errors.New("money: not a decimal amount such as 1.25")
	// ErrEmpty: the text is empty.
	ErrEmpty = fmt.Errorf("%w: empty", ErrSyntax)
	// ErrNoFraction: a decimal point with no digit after it ("5.").
	ErrNoFraction = fmt.Errorf("%w: no digits after the decimal point", ErrSyntax)
	// ErrTrailing: the number is followed by something else: an exponent,
	// a second point, a separator, a space.
	ErrTrailing = fmt.Errorf("%w: not a plain decimal (no exponent, sign or separators)", ErrSyntax)
	// ErrRange: more than 12 integer digits (above MaxText) or more than
	// 32 bytes.
	ErrRange = errors.New("money: amount too large (at most 999999999999.999999)")
	// ErrPrecision: more than 6 decimals: finer than a micro, or trailing
	// zeros past the sixth decimal.
	ErrPrecision = errors.New("money: amount finer than a micro (at most 6 decimals)")
	// ErrNegative: a well-formed amount with a leading "-" (from Parse only).
	ErrNegative = errors.New("money: amount below zero")
)

// Parse parses a plain decimal amount of currency units ("19.99", "1980",
// "0.000001") into micros, exactly, by the package's grammar (see the
// package comment). A well-formed negative amount is ErrNegative. It makes
// no allocation.
func Parse[S ~string | ~[]byte](s S) (int64, error) {
	v, neg, err := scan(s)
	if err != nil {
		return 0, err
	}
	if neg {
		return 0, ErrNegative
	}
	return v, nil
}

// ParseSigned is Parse for amounts that may be negative ("-2.5" is
// -2500000), for callers that judge the sign themselves. "-0" is 0.
func ParseSigned[S ~string | ~[]byte](s S) (int64, error) {
	v, neg, err := scan(s)
	if err != nil {
		return 0, err
	}
	if neg {
		v = -v
	}
	return v, nil
}

// scan parses [-]digits[.digits]: the magnitude in micros and whether there
// was a '-'. Syntax and range are checked before the sign.
func scan[S ~string | ~[]byte](s S) (v int64, neg bool, err error) {
	if len(s) == 0 {
		return 0, false, ErrEmpty
	}
	if len(s) > maxTextLen {
		return 0, false, ErrRange
	}
	i := 0
	if s[0] == '-' {
		neg = true
		i++
	}
	start := i
	var units int64
	sig := 0
	for i < len(s) && isDigit(s[i]) {
		if units != 0 || s[i] != '0' {
			sig++
		}
		if sig > maxUnitDigits {
			return 0, false, ErrRange
		}
		units = units*10 + int64(s[i]-'0')
		i++
	}
	if i == start {
		return 0, false, ErrSyntax
	}
	var frac int64
	nfrac := 0
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && isDigit(s[i]) {
			if nfrac == 6 {
				return 0, false, ErrPrecision
			}
			frac = frac*10 + int64(s[i]-'0')
			nfrac++
			i++
		}
		if nfrac == 0 {
			return 0, false, ErrNoFraction
		}
	}
	if i != len(s) {
		return 0, false, ErrTrailing
	}
	for ; nfrac < 6; nfrac++ {
		frac *= 10
	}
	return units*Unit + frac, neg, nil
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
