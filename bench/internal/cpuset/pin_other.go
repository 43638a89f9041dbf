//go:build !linux

package cpuset

import "errors"

// PinSelf is Linux only.
func PinSelf([]int) (func() error, error) {
	return nil, errors.New("cpuset: pinning is Linux only")
}

// PinThread is Linux only.
func PinThread(int) (func() error, error) {
	return nil, errors.New("cpuset: pinning is Linux only")
}

// Allowed is Linux only.
func Allowed() ([]int, error) {
	return nil, errors.New("cpuset: CPU sets are Linux only")
}
