//go:build !race

package campaign

import (
	"testing"

	"github.com/prebid/openrtb/v20/adcom1"
	"github.com/prebid/openrtb/v20/openrtb2"
)

func TestVideoMatchAllocs(t *testing.T) {
	c := videoCampaign()
	v := &openrtb2.Video{MIMEs: []string{"application/javascript", "video/mp4"}, Protocols: []adcom1.MediaCreativeSubtype{2, 7},
		MinDuration: 5, MaxDuration: 30, Placement: 1}
	if n := testing.AllocsPerRun(100, func() {
		if !c.VideoFits(v) {
			panic("no fit")
		}
	}); n != 0 {
		t.Fatalf("VideoFits: %v allocations", n)
	}
}
