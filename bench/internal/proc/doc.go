// Package proc reads process and socket statistics from Linux /proc for the
// benchmark harness: CPU seconds of a process (/proc/PID/stat), its peak and
// current resident set size (VmHWM and VmRSS in /proc/PID/status), the CPU
// time of the calling process (getrusage RUSAGE_SELF), and the number of
// ESTABLISHED TCP sockets in /proc/net/tcp and /proc/net/tcp6 that match a
// local port range or a remote port. The /proc files are parsed by
// github.com/prometheus/procfs.
//
// The readers are safe for concurrent use: they hold no state.
//
// /proc/net/tcp lists the sockets of the caller's network namespace, so
// CountEstablished sees connections of every process on the host namespace,
// not just the caller's; filter by port to pick the ones of interest.
package proc
