package bidder

import (
	"github.com/rtbd/rtbd/bidder/shading"
	"github.com/rtbd/rtbd/bidder/token"
)

// tokenSegment is the shading segment a notice token carries (0: none, as
// in a token of a bid that was not first price, or of an older version).
func tokenSegment(t *token.Token) shading.SegmentID { return shading.SegmentID(t.Segment) }

// setTokenShading sets a bid token's shading fields: its value before
// shading, and for a first-price bid its segment and price bucket.
func setTokenShading(t *token.Token, value int64, seg shading.SegmentID, price int64) {
	t.ValueMicros = value
	if seg != 0 {
		t.Segment, t.Bucket = uint32(seg), shading.Bucket(price)
	}
}
