package privacy

// COPPA is the policy of the US Children's Online Privacy Protection Act:
// regs.coppa=1 marks child-directed traffic, never personalised.
type COPPA struct {
	ChildDirected bool
}

// Decide returns COPPAChildDirected for child-directed traffic.
func (p COPPA) Decide() Decision {
	if p.ChildDirected {
		return COPPAChildDirected
	}
	return Allow
}
