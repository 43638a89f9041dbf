// Package proc reads the statistics of the processes the harness starts
// from Linux /proc (parsed by github.com/prometheus/procfs): CPU seconds
// of a process (/proc/PID/stat), its peak and current resident set size
// (VmHWM and VmRSS in /proc/PID/status), and the CPU time of the calling
// process (getrusage RUSAGE_SELF). The readers hold no state and are safe
// for concurrent use.
package proc
