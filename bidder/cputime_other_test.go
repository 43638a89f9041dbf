//go:build !unix

package bidder

import "time"

// cpuTime is unavailable here: CPU metrics report 0.
func cpuTime() time.Duration { return 0 }
