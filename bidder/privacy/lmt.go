package privacy

// LMT is the device's limit-ad-tracking policy: device.dnt=1 (Do Not
// Track) or device.lmt=1 (limit ad tracking).
type LMT struct {
	Limited bool
}

// Decide returns LMTLimited when the user limits ad tracking.
func (p LMT) Decide() Decision {
	if p.Limited {
		return LMTLimited
	}
	return Allow
}
