package bidder

import "github.com/rtbd/rtbd/internal/cputime"

// cpuTime is the process's CPU time (user + system): on a shared, noisy
// machine, CPU per request is steadier than wall time.
var cpuTime = cputime.Self
