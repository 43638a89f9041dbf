package money

// codes is the ISO 4217 list of active currency codes, sorted, each code
// followed by one space.
const codes = "AED AFN ALL AMD ANG AOA ARS AUD AWG AZN " +
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

// Code returns the canonical (upper-case) ISO 4217 code for s, matched
// case-insensitively against the list of active currencies, for outside
// input (feeds, bid requests). The string returned is a slice of the
// package's constant table: it makes no allocation.
func Code[S ~string | ~[]byte](s S) (string, bool) {
	if len(s) != 3 {
		return "", false
	}
	var u [3]byte
	for i := range 3 {
		c := s[i]
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		if c < 'A' || c > 'Z' {
			return "", false
		}
		u[i] = c
	}
	lo, hi := 0, len(codes)/4
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		code := codes[m*4 : m*4+3]
		switch k := string(u[:]); {
		case k == code:
			return code, true
		case k < code:
			hi = m
		default:
			lo = m + 1
		}
	}
	return "", false
}

// IsCode reports whether s is an ISO 4217 code of the list written in upper
// case, as configuration, campaigns and signed tokens must write it.
func IsCode(s string) bool {
	c, ok := Code(s)
	return ok && c == s
}

// Codes returns the ISO 4217 codes Code knows, sorted. The slice is new on
// each call.
func Codes() []string {
	out := make([]string, 0, len(codes)/4)
	for i := 0; i+3 <= len(codes); i += 4 {
		out = append(out, codes[i:i+3])
	}
	return out
}
