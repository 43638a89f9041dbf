package user

// An outside recommender's lists: the rule every store applies when it sets
// a profile's Recommended products (SetRecommended), beside RecordView.

// CheckRecommended is what every store's SetRecommended checks before it
// writes rec as uid's Recommended products: CheckUID, then rec as Validate
// checks a profile's Recommended (group and product ids > 0, no group
// twice, no product twice in a group, at most lim.MaxGroups groups and
// lim.MaxRecommended products per group). The error wraps ErrInvalidUID or
// ErrInvalidProfile and names the first problem.
func CheckRecommended(uid string, rec []GroupIDs, lim Limits) error {
	if err := CheckUID(uid); err != nil {
		return err
	}
	return validateGroups("recommended", rec, lim.MaxGroups, lim.MaxRecommended)
}

// SetRecommended replaces p's Recommended products with a copy of rec (not
// retained), reusing p's slices; Viewed and Segments are kept. An empty rec
// leaves p without Recommended products. Every user store applies an
// outside recommender's list by this rule.
func (p *Profile) SetRecommended(rec []GroupIDs) {
	if cap(p.Recommended) < len(rec) {
		grown := make([]GroupIDs, len(rec))
		copy(grown, p.Recommended[:cap(p.Recommended)]) // keep the IDs capacities
		p.Recommended = grown
	}
	p.Recommended = p.Recommended[:len(rec)]
	for i := range rec {
		g := &p.Recommended[i]
		g.Group = rec[i].Group
		g.IDs = append(g.IDs[:0], rec[i].IDs...)
	}
}

// IsEmpty reports whether p holds nothing: no viewed or recommended group
// and no segment.
func (p *Profile) IsEmpty() bool {
	return len(p.Viewed) == 0 && len(p.Recommended) == 0 && len(p.Segments) == 0
}
