//go:build !linux || race

package httpc

import "syscall"

// nbWrite and nbRead: see nbio_raw.go. Elsewhere, and under the race
// detector, the ordinary calls: their race annotations give the detector
// the happens-before edge between a server's write and the client's read
// of it, which tests with a server in the same process rely on.
func nbWrite(fd uintptr, b []byte) (int, error) { return syscall.Write(int(fd), b) }

func nbRead(fd uintptr, b []byte) (int, error) { return syscall.Read(int(fd), b) }
