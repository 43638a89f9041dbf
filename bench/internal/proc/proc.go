package proc

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strconv"
	"syscall"
	"time"
)

// ClockTicks is USER_HZ, the unit of the utime and stime fields of
// /proc/PID/stat. It is 100 on every Linux architecture Go supports
// (sysconf(_SC_CLK_TCK)); the kernel converts to it for user space.
const ClockTicks = 100

var (
	// ErrMalformed is wrapped by every parse error of /proc text.
	ErrMalformed = errors.New("proc: malformed input")
	// ErrNotFound is returned when a requested field is absent (for example
	// VmHWM of a kernel thread or a zombie).
	ErrNotFound = errors.New("proc: field not found")
)

// Stat holds the fields of /proc/PID/stat the harness uses.
type Stat struct {
	PID   int
	Comm  string // executable name, without the parentheses
	State byte   // R, S, D, Z, ...
	// UtimeTicks and StimeTicks are user and system CPU time in ClockTicks.
	UtimeTicks uint64
	StimeTicks uint64
	NumThreads int64
}

// CPU returns user+system CPU time.
func (s Stat) CPU() time.Duration {
	return time.Duration(s.UtimeTicks+s.StimeTicks) * (time.Second / ClockTicks)
}

// ParseStat parses the contents of /proc/PID/stat. The command name may
// contain spaces and parentheses; it is delimited by the first "(" and the
// last ")", as proc(5) advises.
func ParseStat(b []byte) (Stat, error) {
	var s Stat
	open := bytes.IndexByte(b, '(')
	closeIdx := bytes.LastIndexByte(b, ')')
	if open < 0 || closeIdx < open {
		return s, fmt.Errorf("%w: stat: no (comm)", ErrMalformed)
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(b[:open])))
	if err != nil {
		return s, fmt.Errorf("%w: stat: pid: %v", ErrMalformed, err)
	}
	s.PID = pid
	s.Comm = string(b[open+1 : closeIdx])
	// Fields after ")" start at field 3 (state).
	rest := bytes.Fields(b[closeIdx+1:])
	// Need up to field 20 (num_threads) => index 20-3 = 17.
	if len(rest) < 18 {
		return s, fmt.Errorf("%w: stat: %d fields after comm, want >= 18", ErrMalformed, len(rest))
	}
	if len(rest[0]) != 1 {
		return s, fmt.Errorf("%w: stat: state %q", ErrMalformed, rest[0])
	}
	s.State = rest[0][0]
	if s.UtimeTicks, err = strconv.ParseUint(string(rest[14-3]), 10, 64); err != nil {
		return s, fmt.Errorf("%w: stat: utime: %v", ErrMalformed, err)
	}
	if s.StimeTicks, err = strconv.ParseUint(string(rest[15-3]), 10, 64); err != nil {
		return s, fmt.Errorf("%w: stat: stime: %v", ErrMalformed, err)
	}
	if s.NumThreads, err = strconv.ParseInt(string(rest[20-3]), 10, 64); err != nil {
		return s, fmt.Errorf("%w: stat: num_threads: %v", ErrMalformed, err)
	}
	return s, nil
}

// ReadStat reads and parses /proc/PID/stat.
func ReadStat(pid int) (Stat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Stat{}, fmt.Errorf("proc: %w", err)
	}
	return ParseStat(b)
}

// CPU returns the user+system CPU time consumed so far by process pid
// (all its threads), at ClockTicks resolution (10 ms).
func CPU(pid int) (time.Duration, error) {
	s, err := ReadStat(pid)
	if err != nil {
		return 0, err
	}
	return s.CPU(), nil
}

// Status holds the fields of /proc/PID/status the harness uses. Sizes are in
// bytes; a field absent from the file is 0 and listed in Missing.
type Status struct {
	VmHWMBytes int64 // peak resident set size
	VmRSSBytes int64 // current resident set size
	Threads    int64
	Missing    []string
}

// ParseStatus parses the contents of /proc/PID/status ("Key:\tvalue kB"
// lines). Unknown keys are skipped.
func ParseStatus(r io.Reader) (Status, error) {
	var st Status
	found := map[string]bool{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		key, val, ok := bytes.Cut(sc.Bytes(), []byte{':'})
		if !ok {
			continue
		}
		var dst *int64
		kb := false
		switch string(key) {
		case "VmHWM":
			dst, kb = &st.VmHWMBytes, true
		case "VmRSS":
			dst, kb = &st.VmRSSBytes, true
		case "Threads":
			dst = &st.Threads
		default:
			continue
		}
		f := bytes.Fields(val)
		if len(f) == 0 || (kb && (len(f) != 2 || string(f[1]) != "kB")) {
			return st, fmt.Errorf("%w: status line %d: %s: %q", ErrMalformed, line, key, val)
		}
		n, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil || n < 0 || (kb && n > (1<<53)/1024) {
			return st, fmt.Errorf("%w: status line %d: %s: %q", ErrMalformed, line, key, f[0])
		}
		if kb {
			n *= 1024
		}
		*dst = n
		found[string(key)] = true
	}
	if err := sc.Err(); err != nil {
		return st, fmt.Errorf("%w: status: %v", ErrMalformed, err)
	}
	for _, k := range []string{"VmHWM", "VmRSS", "Threads"} {
		if !found[k] {
			st.Missing = append(st.Missing, k)
		}
	}
	return st, nil
}

// ReadStatus reads and parses /proc/PID/status.
func ReadStatus(pid int) (Status, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return Status{}, fmt.Errorf("proc: %w", err)
	}
	defer f.Close()
	return ParseStatus(f)
}

// PeakRSS returns VmHWM of process pid in bytes: the peak resident set size
// over the process lifetime (not just a benchmark run).
func PeakRSS(pid int) (int64, error) {
	st, err := ReadStatus(pid)
	if err != nil {
		return 0, err
	}
	for _, m := range st.Missing {
		if m == "VmHWM" {
			return 0, fmt.Errorf("%w: VmHWM of pid %d", ErrNotFound, pid)
		}
	}
	return st.VmHWMBytes, nil
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

// TCP socket states as printed in /proc/net/tcp ("st" column).
const (
	StateEstablished = 0x01
	StateListen      = 0x0A
)

// TCPEntry is one socket line of /proc/net/tcp or /proc/net/tcp6.
type TCPEntry struct {
	Local  netip.AddrPort
	Remote netip.AddrPort
	State  uint8
	Inode  uint64
}

// ParseNetTCP parses the contents of /proc/net/tcp or /proc/net/tcp6 and
// calls fn for each socket line. The header line is skipped. Addresses are
// decoded as the kernel prints them: each 32-bit word of the address in host
// byte order (this package assumes a little-endian host for IPv4/IPv6 words;
// ports are printed in big-endian order and do not depend on the host).
func ParseNetTCP(r io.Reader, fn func(TCPEntry)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		f := bytes.Fields(sc.Bytes())
		if len(f) == 0 {
			continue
		}
		if line == 1 && string(f[0]) == "sl" {
			continue
		}
		if len(f) < 10 {
			return fmt.Errorf("%w: net/tcp line %d: %d fields", ErrMalformed, line, len(f))
		}
		var e TCPEntry
		var err error
		if e.Local, err = parseHexAddrPort(f[1]); err != nil {
			return fmt.Errorf("%w: net/tcp line %d: local: %v", ErrMalformed, line, err)
		}
		if e.Remote, err = parseHexAddrPort(f[2]); err != nil {
			return fmt.Errorf("%w: net/tcp line %d: remote: %v", ErrMalformed, line, err)
		}
		st, err := strconv.ParseUint(string(f[3]), 16, 8)
		if err != nil {
			return fmt.Errorf("%w: net/tcp line %d: state: %v", ErrMalformed, line, err)
		}
		e.State = uint8(st)
		if e.Inode, err = strconv.ParseUint(string(f[9]), 10, 64); err != nil {
			return fmt.Errorf("%w: net/tcp line %d: inode: %v", ErrMalformed, line, err)
		}
		fn(e)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%w: net/tcp: %v", ErrMalformed, err)
	}
	return nil
}

// parseHexAddrPort decodes "0100007F:1F90" (IPv4) or a 32-hex-digit IPv6
// address with a port.
func parseHexAddrPort(b []byte) (netip.AddrPort, error) {
	a, p, ok := bytes.Cut(b, []byte{':'})
	if !ok || len(p) != 4 {
		return netip.AddrPort{}, fmt.Errorf("bad address %q", b)
	}
	port, err := strconv.ParseUint(string(p), 16, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("bad port %q", p)
	}
	var raw [16]byte
	switch len(a) {
	case 8, 32:
	default:
		return netip.AddrPort{}, fmt.Errorf("bad address length %d", len(a))
	}
	n, err := hex.Decode(raw[:], a)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("bad address %q", a)
	}
	// Each 32-bit word was printed as a host-order integer: swap back.
	var out [16]byte
	for w := 0; w < n/4; w++ {
		v := binary.BigEndian.Uint32(raw[w*4:])
		binary.LittleEndian.PutUint32(out[w*4:], v)
	}
	var addr netip.Addr
	if n == 4 {
		addr = netip.AddrFrom4([4]byte(out[:4]))
	} else {
		addr = netip.AddrFrom16(out)
	}
	return netip.AddrPortFrom(addr, uint16(port)), nil
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

// Match reports whether e satisfies f (state is not checked).
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

// NetTCPFiles are the files CountEstablished reads.
var netTCPFiles = [...]string{"/proc/net/tcp", "/proc/net/tcp6"}

// CountEstablished counts ESTABLISHED TCP sockets (IPv4 and IPv6) matching f
// in the caller's network namespace. A missing tcp6 file (IPv6 disabled) is
// not an error.
func CountEstablished(f TCPFilter) (int, error) {
	n := 0
	for i, path := range netTCPFiles {
		file, err := os.Open(path)
		if err != nil {
			if i == 1 && errors.Is(err, os.ErrNotExist) {
				continue
			}
			return 0, fmt.Errorf("proc: %w", err)
		}
		err = ParseNetTCP(file, func(e TCPEntry) {
			if e.State == StateEstablished && f.Match(e) {
				n++
			}
		})
		file.Close()
		if err != nil {
			return 0, fmt.Errorf("%s: %w", path, err)
		}
	}
	return n, nil
}
