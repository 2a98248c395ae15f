// Package slogbridge passes the logs of Badger and of hashicorp/raft (go-hclog) to a log/slog logger, level for level.
package slogbridge

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"strings"
	"sync/atomic"

	"github.com/dgraph-io/badger/v4"
	"github.com/hashicorp/go-hclog"
)

// LevelTrace is the slog level of go-hclog's Trace lines and Badger's
// Debugf: below slog.LevelDebug, shown only when asked for.
const LevelTrace = slog.LevelDebug - 4

// Badger returns a badger.Logger writing to l with component=badger.
// Badger's Infof lines are its housekeeping (tables opened, value-log
// replays, compactions) and are logged at Debug, so that a server at the
// default Info level shows Badger's warnings and errors only.
func Badger(l *slog.Logger) badger.Logger {
	return badgerLogger{l: l.With("component", "badger")}
}

type badgerLogger struct{ l *slog.Logger }

func (b badgerLogger) logf(level slog.Level, format string, a []any) {
	ctx := context.Background()
	if !b.l.Enabled(ctx, level) {
		return
	}
	b.l.Log(ctx, level, strings.TrimRight(fmt.Sprintf(format, a...), "\n"))
}

func (b badgerLogger) Errorf(f string, a ...any)   { b.logf(slog.LevelError, f, a) }
func (b badgerLogger) Warningf(f string, a ...any) { b.logf(slog.LevelWarn, f, a) }
func (b badgerLogger) Infof(f string, a ...any)    { b.logf(slog.LevelDebug, f, a) }
func (b badgerLogger) Debugf(f string, a ...any)   { b.logf(LevelTrace, f, a) }

// Hclog returns a go-hclog Logger named name writing to l: hclog's levels
// map to slog's (Trace to LevelTrace), its key-value pairs become the
// record's attributes, and its name becomes the attribute component.
func Hclog(l *slog.Logger, name string) hclog.Logger {
	h := &hcLogger{base: l, name: name}
	h.level.Store(int32(hclog.Trace))
	return h
}

type hcLogger struct {
	base    *slog.Logger
	name    string
	implied []any
	// level filters before slog does, for SetLevel; Trace lets slog decide.
	level atomic.Int32
}

func slogLevel(l hclog.Level) slog.Level {
	switch l {
	case hclog.Trace:
		return LevelTrace
	case hclog.Debug:
		return slog.LevelDebug
	case hclog.Warn:
		return slog.LevelWarn
	case hclog.Error:
		return slog.LevelError
	}
	return slog.LevelInfo
}

func (h *hcLogger) logger() *slog.Logger {
	l := h.base
	if h.name != "" {
		l = l.With("component", h.name)
	}
	return l
}

func (h *hcLogger) enabled(level hclog.Level) bool {
	if level == hclog.Off || level < hclog.Level(h.level.Load()) {
		return false
	}
	return h.base.Enabled(context.Background(), slogLevel(level))
}

func (h *hcLogger) Log(level hclog.Level, msg string, args ...any) {
	if level == hclog.NoLevel || level == hclog.DefaultLevel {
		level = hclog.Info
	}
	if !h.enabled(level) {
		return
	}
	all := append(append([]any(nil), h.implied...), args...)
	for i, a := range all {
		all[i] = hclogValue(a)
	}
	h.logger().Log(context.Background(), slogLevel(level), msg, all...)
}

// hclogValue renders go-hclog's formatting wrappers as hclog would.
func hclogValue(v any) any {
	switch v := v.(type) {
	case hclog.Format:
		if len(v) > 0 {
			if f, ok := v[0].(string); ok {
				return fmt.Sprintf(f, v[1:]...)
			}
		}
		return fmt.Sprint(v...)
	case hclog.Hex:
		return fmt.Sprintf("0x%x", int(v))
	case hclog.Octal:
		return fmt.Sprintf("0%o", int(v))
	case hclog.Binary:
		return fmt.Sprintf("0b%b", int(v))
	case hclog.Quote:
		return fmt.Sprintf("%q", string(v))
	}
	return v
}

func (h *hcLogger) Trace(msg string, args ...any) { h.Log(hclog.Trace, msg, args...) }
func (h *hcLogger) Debug(msg string, args ...any) { h.Log(hclog.Debug, msg, args...) }
func (h *hcLogger) Info(msg string, args ...any)  { h.Log(hclog.Info, msg, args...) }
func (h *hcLogger) Warn(msg string, args ...any)  { h.Log(hclog.Warn, msg, args...) }
func (h *hcLogger) Error(msg string, args ...any) { h.Log(hclog.Error, msg, args...) }

func (h *hcLogger) IsTrace() bool { return h.enabled(hclog.Trace) }
func (h *hcLogger) IsDebug() bool { return h.enabled(hclog.Debug) }
func (h *hcLogger) IsInfo() bool  { return h.enabled(hclog.Info) }
func (h *hcLogger) IsWarn() bool  { return h.enabled(hclog.Warn) }
func (h *hcLogger) IsError() bool { return h.enabled(hclog.Error) }

func (h *hcLogger) ImpliedArgs() []any { return append([]any(nil), h.implied...) }

func (h *hcLogger) clone() *hcLogger {
	c := &hcLogger{base: h.base, name: h.name, implied: append([]any(nil), h.implied...)}
	c.level.Store(h.level.Load())
	return c
}

func (h *hcLogger) With(args ...any) hclog.Logger {
	c := h.clone()
	c.implied = append(c.implied, args...)
	return c
}

func (h *hcLogger) Name() string { return h.name }

func (h *hcLogger) Named(name string) hclog.Logger {
	c := h.clone()
	if c.name != "" {
		c.name += "." + name
	} else {
		c.name = name
	}
	return c
}

func (h *hcLogger) ResetNamed(name string) hclog.Logger {
	c := h.clone()
	c.name = name
	return c
}

func (h *hcLogger) SetLevel(level hclog.Level) {
	if level == hclog.NoLevel || level == hclog.DefaultLevel {
		level = hclog.Trace
	}
	h.level.Store(int32(level))
}

func (h *hcLogger) GetLevel() hclog.Level { return hclog.Level(h.level.Load()) }

func (h *hcLogger) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return log.New(h.StandardWriter(opts), "", 0)
}

func (h *hcLogger) StandardWriter(opts *hclog.StandardLoggerOptions) io.Writer {
	if opts == nil {
		opts = &hclog.StandardLoggerOptions{}
	}
	return &lineWriter{h: h, opts: *opts}
}

// lineWriter logs each line a standard *log.Logger writes, at the level its
// "[WARN]"-style prefix names when asked to infer it.
type lineWriter struct {
	h    *hcLogger
	opts hclog.StandardLoggerOptions
}

var levelPrefixes = []struct {
	prefix string
	level  hclog.Level
}{
	{"[TRACE]", hclog.Trace}, {"[DEBUG]", hclog.Debug}, {"[INFO]", hclog.Info},
	{"[WARN]", hclog.Warn}, {"[ERR]", hclog.Error}, {"[ERROR]", hclog.Error},
}

func (w *lineWriter) Write(p []byte) (int, error) {
	for _, line := range bytes.Split(bytes.TrimRight(p, "\n"), []byte("\n")) {
		msg := strings.TrimSpace(string(line))
		level := hclog.Info
		if w.opts.ForceLevel != hclog.NoLevel {
			level = w.opts.ForceLevel
		}
		if w.opts.InferLevels {
			for _, lp := range levelPrefixes {
				if rest, ok := strings.CutPrefix(msg, lp.prefix); ok {
					msg, level = strings.TrimSpace(rest), lp.level
					break
				}
			}
		}
		w.h.Log(level, msg)
	}
	return len(p), nil
}
