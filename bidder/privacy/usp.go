package privacy

// USP is the CCPA policy: the IAB US Privacy string ("1YNN": version,
// notice given, opted out of sale, LSPA covered) of regs.us_privacy or
// regs.ext.us_privacy, or a us_privacy query argument.
type USP struct {
	Consent string
}

// Decide returns USPOptOut when the user opted out of sale. A string that
// is not a US Privacy string says nothing.
func (p USP) Decide() Decision {
	if uspOptOut(p.Consent) {
		return USPOptOut
	}
	return Allow
}

// uspOptOut reports whether an IAB US Privacy string ("1YNN") says the
// user opted out of sale (third character 'Y').
func uspOptOut(s string) bool {
	return len(s) == 4 && s[0] == '1' && (s[2] == 'Y' || s[2] == 'y')
}

// validUSP reports whether s is an IAB US Privacy string: version 1, then
// Y, N or - three times.
func validUSP(s string) bool {
	if len(s) != 4 || s[0] != '1' {
		return false
	}
	for _, c := range s[1:] {
		switch c {
		case 'Y', 'y', 'N', 'n', '-':
		default:
			return false
		}
	}
	return true
}
