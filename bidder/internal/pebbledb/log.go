package pebbledb

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"go.uber.org/zap"
)

// NewLogger returns a pebble.Logger that writes to log: Pebble's info lines at
// debug level, its errors as errors. Fatalf logs and panics (Pebble's
// contract: Fatalf does not return).
func NewLogger(log *zap.Logger) pebble.Logger { return logger{log.Sugar()} }

type logger struct{ s *zap.SugaredLogger }

func (l logger) Infof(format string, args ...any)  { l.s.Debugf("pebble: "+format, args...) }
func (l logger) Errorf(format string, args ...any) { l.s.Errorf("pebble: "+format, args...) }
func (l logger) Fatalf(format string, args ...any) {
	l.s.Errorf("pebble: "+format, args...)
	panic(fmt.Sprintf("pebble: "+format, args...))
}
