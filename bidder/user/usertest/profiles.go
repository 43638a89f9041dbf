package usertest

import (
	"reflect"

	"github.com/rtbd/rtbd/bidder/user"
)

// SampleProfile is a profile of a typical shape: two viewed groups, one
// recommended, three segments (one not ASCII).
func SampleProfile() *user.Profile {
	return &user.Profile{
		Viewed: []user.GroupIDs{
			{Group: 3, IDs: []int64{103, 999, 101}},
			{Group: 1122, IDs: []int64{1 << 40, 7}},
		},
		Recommended: []user.GroupIDs{
			{Group: 3, IDs: []int64{106, 105, 998, 104}},
		},
		Segments: []string{"sports", "high-value", "日本"},
	}
}

// EqualProfiles compares content, treating nil and empty slices alike.
func EqualProfiles(a, b *user.Profile) bool {
	norm := func(p *user.Profile) user.Profile {
		var q user.Profile
		for _, g := range p.Viewed {
			q.Viewed = append(q.Viewed, user.GroupIDs{Group: g.Group, IDs: append([]int64{}, g.IDs...)})
		}
		for _, g := range p.Recommended {
			q.Recommended = append(q.Recommended, user.GroupIDs{Group: g.Group, IDs: append([]int64{}, g.IDs...)})
		}
		q.Segments = append(q.Segments, p.Segments...)
		return q
	}
	return reflect.DeepEqual(norm(a), norm(b))
}
