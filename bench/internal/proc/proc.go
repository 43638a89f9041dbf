package proc

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"syscall"
	"time"

	"github.com/prometheus/procfs"
)

// ErrNotFound is returned when a requested field is absent (for example
// VmHWM of a kernel thread or a zombie).
var ErrNotFound = errors.New("proc: field not found")

// CPU returns the user+system CPU time consumed so far by process pid
// (all its threads), from /proc/PID/stat at USER_HZ resolution (10 ms).
func CPU(pid int) (time.Duration, error) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return 0, fmt.Errorf("proc: %w", err)
	}
	st, err := p.Stat()
	if err != nil {
		return 0, fmt.Errorf("proc: stat of pid %d: %w", pid, err)
	}
	return time.Duration(st.CPUTime()*float64(time.Second) + 0.5), nil
}

// Status holds the fields of /proc/PID/status the harness uses, in bytes.
type Status struct {
	VmHWMBytes int64 // peak resident set size
	VmRSSBytes int64 // current resident set size
}

// ReadStatus reads /proc/PID/status. A process without memory figures (a
// kernel thread, a zombie) is ErrNotFound.
func ReadStatus(pid int) (Status, error) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return Status{}, fmt.Errorf("proc: %w", err)
	}
	st, err := p.NewStatus()
	if err != nil {
		return Status{}, fmt.Errorf("proc: status of pid %d: %w", pid, err)
	}
	if st.VmHWM == 0 {
		return Status{}, fmt.Errorf("%w: VmHWM of pid %d", ErrNotFound, pid)
	}
	return Status{VmHWMBytes: int64(st.VmHWM), VmRSSBytes: int64(st.VmRSS)}, nil
}

// SelfCPU returns the user+system CPU time of the calling process from
// getrusage(RUSAGE_SELF), at microsecond resolution. It includes every
// goroutine of the process (for a benchmark, the generator and anything else
// running in-process, such as an in-process test server).
func SelfCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("proc: getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// stateEstablished is TCP_ESTABLISHED, the "st" column of /proc/net/tcp.
const stateEstablished = 0x01

// TCPEntry is one socket of /proc/net/tcp or /proc/net/tcp6.
type TCPEntry struct {
	Local  netip.AddrPort
	Remote netip.AddrPort
}

// TCPFilter selects sockets for CountEstablished. Every non-zero condition
// must hold. The zero TCPFilter matches every socket.
type TCPFilter struct {
	// LocalPortMin and LocalPortMax select a local port range (inclusive).
	// Use the server's port for both to count a server's accepted
	// connections. LocalPortMax 0 means LocalPortMin only.
	LocalPortMin, LocalPortMax uint16
	// RemotePort selects sockets connected to this remote port (a client's
	// connections to a server).
	RemotePort uint16
	// Loopback restricts the match to sockets whose remote address is a
	// loopback address.
	Loopback bool
}

// Match reports whether e satisfies f.
func (f TCPFilter) Match(e TCPEntry) bool {
	if f.LocalPortMin != 0 {
		hi := f.LocalPortMax
		if hi == 0 {
			hi = f.LocalPortMin
		}
		if p := e.Local.Port(); p < f.LocalPortMin || p > hi {
			return false
		}
	}
	if f.RemotePort != 0 && e.Remote.Port() != f.RemotePort {
		return false
	}
	if f.Loopback && !e.Remote.Addr().Unmap().IsLoopback() {
		return false
	}
	return true
}

// String renders the filter for reports, e.g. "local:8080" or "remote:9000".
func (f TCPFilter) String() string {
	var b []byte
	if f.LocalPortMin != 0 {
		b = fmt.Appendf(b, "local:%d", f.LocalPortMin)
		if f.LocalPortMax > f.LocalPortMin {
			b = fmt.Appendf(b, "-%d", f.LocalPortMax)
		}
	}
	if f.RemotePort != 0 {
		if len(b) > 0 {
			b = append(b, ' ')
		}
		b = fmt.Appendf(b, "remote:%d", f.RemotePort)
	}
	if f.Loopback {
		if len(b) > 0 {
			b = append(b, ' ')
		}
		b = append(b, "loopback"...)
	}
	if len(b) == 0 {
		return "all"
	}
	return string(b)
}

// CountEstablished counts ESTABLISHED TCP sockets (IPv4 and IPv6) matching f
// in the caller's network namespace. A missing tcp6 file (IPv6 disabled) is
// not an error.
func CountEstablished(f TCPFilter) (int, error) {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return 0, fmt.Errorf("proc: %w", err)
	}
	tcp, err := fs.NetTCP()
	if err != nil {
		return 0, fmt.Errorf("proc: /proc/net/tcp: %w", err)
	}
	tcp6, err := fs.NetTCP6()
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return 0, fmt.Errorf("proc: /proc/net/tcp6: %w", err)
	}
	n := 0
	for _, s := range append(tcp, tcp6...) {
		if s.St == stateEstablished && f.Match(TCPEntry{addrPort(s.LocalAddr, s.LocalPort), addrPort(s.RemAddr, s.RemPort)}) {
			n++
		}
	}
	return n, nil
}

func addrPort(ip net.IP, port uint64) netip.AddrPort {
	a, _ := netip.AddrFromSlice(ip)
	return netip.AddrPortFrom(a, uint16(port))
}
