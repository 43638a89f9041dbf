//go:build !linux

package wakeup

import (
	"context"
	"time"
)

func pingPong(context.Context, Options) ([]time.Duration, error) {
	return nil, ErrUnsupported
}
