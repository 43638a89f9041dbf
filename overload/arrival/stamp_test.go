//go:build linux && !race

package arrival

import (
	"encoding/binary"
	"syscall"
	"testing"
	"unsafe"
)

// FuzzStamp: any control buffer is parsed without reading out of bounds;
// a well-formed SCM_TIMESTAMPNS message is found.
func FuzzStamp(f *testing.F) {
	hdr := syscall.CmsgLen(0)
	good := make([]byte, syscall.CmsgSpace(int(unsafe.Sizeof(syscall.Timespec{}))))
	h := (*syscall.Cmsghdr)(unsafe.Pointer(&good[0]))
	h.Level, h.Type = syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS
	h.SetLen(syscall.CmsgLen(int(unsafe.Sizeof(syscall.Timespec{}))))
	binary.NativeEndian.PutUint64(good[hdr:], 1_700_000_000)
	binary.NativeEndian.PutUint64(good[hdr+8:], 123)
	if ts, ok := stamp(good); !ok || ts != 1_700_000_000*1e9+123 {
		f.Fatalf("stamp(good) = %d, %v", ts, ok)
	}
	f.Add(good)
	f.Add(good[:hdr])
	f.Add([]byte{})
	f.Add(make([]byte, 64))
	f.Fuzz(func(t *testing.T, b []byte) {
		// Copy into an aligned buffer, as the real control buffer is.
		buf := make([]uint64, (len(b)+7)/8)
		if len(buf) > 0 {
			copy(unsafe.Slice((*byte)(unsafe.Pointer(&buf[0])), 8*len(buf)), b)
			stamp(unsafe.Slice((*byte)(unsafe.Pointer(&buf[0])), len(b)))
		}
	})
}
