package money

// Append appends micros as a plain decimal of currency units with no
// trailing fraction zeros, the inverse of Parse: 1234500 -> "1.2345",
// 2000000 -> "2", 1 -> "0.000001". Negative amounts get a "-" (ParseSigned
// reads them back). Parse(Append(nil, m)) == m for 0 <= m <= MaxText. It
// makes no allocation beyond growing dst.
func Append(dst []byte, micros int64) []byte {
	u := uint64(micros)
	if micros < 0 {
		dst = append(dst, '-')
		u = -u
	}
	dst = appendUint(dst, u/Unit)
	frac := u % Unit
	if frac == 0 {
		return dst
	}
	var buf [7]byte
	buf[0] = '.'
	for i := 6; i >= 1; i-- {
		buf[i] = byte('0' + frac%10)
		frac /= 10
	}
	n := 7
	for buf[n-1] == '0' {
		n--
	}
	return append(dst, buf[:n]...)
}

// Format is Append to a new string: 1250000 -> "1.25", -500000 -> "-0.5".
func Format(micros int64) string {
	var buf [24]byte
	return string(Append(buf[:0], micros))
}

func appendUint(dst []byte, u uint64) []byte {
	var buf [20]byte
	i := len(buf)
	for {
		i--
		buf[i] = byte('0' + u%10)
		u /= 10
		if u == 0 {
			break
		}
	}
	return append(dst, buf[i:]...)
}

// AppendDisplay appends an amount for people to read: micros of code with
// the currency's symbol, its usual decimals and thousands separators,
// rounded half up to the decimals shown: ("JPY", 1980000000) -> "¥1,980";
// ("USD", 12500000) -> "$12.50"; ("CHF", 9900000) -> "9.90 CHF". A code
// without a symbol here follows the number after a space, as given
// (callers writing markup escape a code that is not IsCode); "" shows the
// number alone. Negative amounts show as 0.
func AppendDisplay(dst []byte, micros int64, code string) []byte {
	if micros < 0 {
		micros = 0
	}
	sym, suffix, decimals := "", "", 2
	switch code {
	case "USD":
		sym = "$"
	case "EUR":
		sym = "€"
	case "GBP":
		sym = "£"
	case "JPY":
		sym, decimals = "¥", 0
	case "CNY":
		sym = "CN¥"
	case "KRW":
		sym, decimals = "₩", 0
	case "":
	default:
		suffix = code
	}
	dst = append(dst, sym...)
	var whole, frac uint64
	u := uint64(micros)
	if decimals == 0 {
		whole = (u + Unit/2) / Unit
	} else {
		cents := (u + 5_000) / 10_000
		whole, frac = cents/100, cents%100
	}
	dst = appendThousands(dst, whole)
	if decimals == 2 {
		dst = append(dst, '.', byte('0'+frac/10), byte('0'+frac%10))
	}
	if suffix != "" {
		dst = append(dst, ' ')
		dst = append(dst, suffix...)
	}
	return dst
}

func appendThousands(dst []byte, v uint64) []byte {
	var tmp [24]byte
	b := appendUint(tmp[:0], v)
	for i, c := range b {
		if i > 0 && (len(b)-i)%3 == 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, c)
	}
	return dst
}
