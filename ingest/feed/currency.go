package feed

// currencyCodes is the ISO 4217 list of active currency codes the feed
// accepts, sorted, each code followed by one space.
const currencyCodes = "AED AFN ALL AMD ANG AOA ARS AUD AWG AZN " +
	"BAM BBD BDT BGN BHD BIF BMD BND BOB BRL BSD BTN BWP BYN BZD " +
	"CAD CDF CHF CLP CNY COP CRC CUP CVE CZK " +
	"DJF DKK DOP DZD EGP ERN ETB EUR FJD FKP " +
	"GBP GEL GHS GIP GMD GNF GTQ GYD HKD HNL HTG HUF " +
	"IDR ILS INR IQD IRR ISK JMD JOD JPY " +
	"KES KGS KHR KMF KPW KRW KWD KYD KZT LAK LBP LKR LRD LSL LYD " +
	"MAD MDL MGA MKD MMK MNT MOP MRU MUR MVR MWK MXN MYR MZN " +
	"NAD NGN NIO NOK NPR NZD OMR PAB PEN PGK PHP PKR PLN PYG QAR " +
	"RON RSD RUB RWF SAR SBD SCR SDG SEK SGD SHP SLE SOS SRD SSP STN SVC SYP SZL " +
	"THB TJS TMT TND TOP TRY TTD TWD TZS UAH UGX USD UYU UZS " +
	"VES VND VUV WST XAF XCD XCG XOF XPF YER ZAR ZMW ZWG "

// lookupCurrency returns the canonical (upper-case) code for b, matched
// case-insensitively, without allocating: the string returned is a slice of
// the package's constant table.
func lookupCurrency(b []byte) (string, bool) {
	if len(b) != 3 {
		return "", false
	}
	var u [3]byte
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		if c < 'A' || c > 'Z' {
			return "", false
		}
		u[i] = c
	}
	lo, hi := 0, len(currencyCodes)/4
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		code := currencyCodes[m*4 : m*4+3]
		switch s := string(u[:]); {
		case s == code:
			return code, true
		case s < code:
			hi = m
		default:
			lo = m + 1
		}
	}
	return "", false
}

// KnownCurrency reports whether code is in the feed's ISO 4217 list. Case
// is ignored, as the reader ignores it.
func KnownCurrency(code string) bool {
	_, ok := lookupCurrency([]byte(code))
	return ok
}

// Currencies returns the accepted ISO 4217 codes, sorted. The slice is new on
// each call.
func Currencies() []string {
	out := make([]string, 0, len(currencyCodes)/4)
	for i := 0; i+3 <= len(currencyCodes); i += 4 {
		out = append(out, currencyCodes[i:i+3])
	}
	return out
}
