package admin

import (
	"fmt"
	"os"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"golang.org/x/term"

	"github.com/rtbd/rtbd/configs"
)

// NewLogger returns the process logger, writing to stderr: zap's production
// JSON encoding, or a human-readable console encoding (development style,
// colored levels) when c.Format is "console", or "auto" and isTerminal.
// Entries below c.Level are dropped. Like zap's production logger it samples
// (per second and message: the first 100, then every 100th), so a message
// logged per request cannot flood the output, and adds stack traces to
// error-level entries. The caller owns the logger and should Sync it before
// exit.
func NewLogger(c configs.Log, isTerminal bool) (*zap.Logger, error) {
	return newLogger(c, isTerminal, zapcore.Lock(os.Stderr))
}

func newLogger(c configs.Log, isTerminal bool, out zapcore.WriteSyncer) (*zap.Logger, error) {
	var level zapcore.Level
	if err := level.UnmarshalText([]byte(c.Level)); err != nil {
		return nil, fmt.Errorf("%w for log.level: %q (want debug, info, warn or error)", configs.ErrInvalidValue, c.Level)
	}
	var enc zapcore.Encoder
	switch {
	case c.Format == configs.LogFormatJSON || c.Format == configs.LogFormatAuto && !isTerminal:
		enc = zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig())
	case c.Format == configs.LogFormatConsole || c.Format == configs.LogFormatAuto && isTerminal:
		ec := zap.NewDevelopmentEncoderConfig()
		ec.EncodeLevel = zapcore.CapitalColorLevelEncoder
		enc = zapcore.NewConsoleEncoder(ec)
	default:
		return nil, fmt.Errorf("%w for log.format: %q (want auto, json or console)", configs.ErrInvalidValue, c.Format)
	}
	core := zapcore.NewCore(enc, out, level)
	core = zapcore.NewSamplerWithOptions(core, time.Second, 100 /* first */, 100 /* thereafter */)
	return zap.New(core, zap.AddCaller(), zap.AddStacktrace(zapcore.ErrorLevel), zap.ErrorOutput(out)), nil
}

// IsTerminal reports whether f is a terminal (for Log.Format "auto":
// IsTerminal(os.Stderr)).
func IsTerminal(f *os.File) bool {
	return f != nil && term.IsTerminal(int(f.Fd()))
}
