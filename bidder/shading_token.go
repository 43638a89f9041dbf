package bidder

import (
	"github.com/rtbd/rtbd/bidder/shading"
	"github.com/rtbd/rtbd/bidder/token"
)

// tokenSegment is the shading segment a notice token carries (0: none).
func tokenSegment(*token.Token) shading.SegmentID { return 0 }

// setTokenShading sets a bid token's shading fields.
func setTokenShading(*token.Token, int64, shading.SegmentID, int64) {}
