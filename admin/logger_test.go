package admin

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/rtbd/rtbd/configs"
)

// buffer is a zapcore.WriteSyncer the test can read.
type buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}
func (b *buffer) Sync() error { return nil }
func (b *buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

var _ zapcore.WriteSyncer = (*buffer)(nil)

func TestNewLoggerEncodings(t *testing.T) {
	tests := []struct {
		format   string
		terminal bool
		json     bool
	}{
		{configs.LogFormatJSON, true, true},
		{configs.LogFormatJSON, false, true},
		{configs.LogFormatConsole, false, false},
		{configs.LogFormatConsole, true, false},
		{configs.LogFormatAuto, false, true},
		{configs.LogFormatAuto, true, false},
	}
	for _, tt := range tests {
		name := tt.format
		if tt.terminal {
			name += "/terminal"
		}
		t.Run(name, func(t *testing.T) {
			var out buffer
			log, err := newLogger(configs.Log{Level: "info", Format: tt.format}, tt.terminal, &out)
			if err != nil {
				t.Fatal(err)
			}
			log.Debug("dropped")
			log.Info("hello", zap.Int("n", 7))
			_ = log.Sync()
			got := out.String()
			if strings.Contains(got, "dropped") {
				t.Errorf("debug entry logged at level info: %q", got)
			}
			lines := strings.Split(strings.TrimSpace(got), "\n")
			if len(lines) != 1 {
				t.Fatalf("want one line, got %q", got)
			}
			var entry map[string]any
			isJSON := json.Unmarshal([]byte(lines[0]), &entry) == nil
			if isJSON != tt.json {
				t.Fatalf("JSON = %v, want %v: %q", isJSON, tt.json, lines[0])
			}
			if tt.json {
				if entry["level"] != "info" || entry["msg"] != "hello" || entry["n"] != float64(7) {
					t.Errorf("entry = %v", entry)
				}
				return
			}
			// Console: colored capital level, message, fields.
			for _, w := range []string{"\x1b[", "INFO", "hello", `"n": 7`} {
				if !strings.Contains(lines[0], w) {
					t.Errorf("console line %q lacks %q", lines[0], w)
				}
			}
		})
	}
}

func TestNewLoggerLevels(t *testing.T) {
	for _, level := range []string{"debug", "info", "warn", "error"} {
		var out buffer
		log, err := newLogger(configs.Log{Level: level, Format: configs.LogFormatJSON}, false, &out)
		if err != nil {
			t.Fatalf("%s: %v", level, err)
		}
		log.Debug("d")
		log.Info("i")
		log.Warn("w")
		log.Error("e")
		got := strings.Count(out.String(), "\n")
		want := map[string]int{"debug": 4, "info": 3, "warn": 2, "error": 1}[level]
		if got != want {
			t.Errorf("level %s: %d entries, want %d:\n%s", level, got, want, out.String())
		}
	}
	if _, err := NewLogger(configs.Log{Level: "loud", Format: configs.LogFormatJSON}, false); !errors.Is(err, configs.ErrInvalidValue) || !strings.Contains(err.Error(), "log.level") {
		t.Errorf("bad level: %v", err)
	}
	if _, err := NewLogger(configs.Log{Level: "info", Format: "xml"}, false); !errors.Is(err, configs.ErrInvalidValue) || !strings.Contains(err.Error(), "log.format") {
		t.Errorf("bad format: %v", err)
	}
	log, err := NewLogger(configs.Log{Level: "info", Format: configs.LogFormatAuto}, false)
	if err != nil || log == nil {
		t.Fatalf("NewLogger: %v", err)
	}
}

func TestIsTerminal(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if IsTerminal(f) {
		t.Error("a regular file is not a terminal")
	}
	if IsTerminal(nil) {
		t.Error("nil is not a terminal")
	}
}
