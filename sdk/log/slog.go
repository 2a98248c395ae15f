package log

import (
	"context"
	"log/slog"
	"runtime"
	"time"
)

// StructuredLogger is a Logger writing to a *slog.Logger, reporting the
// source location of its caller (NewStructuredLogger).
type StructuredLogger struct {
	logger *slog.Logger
	skip   int // frames between runtime.Callers and the caller of Info &c.
}

// NewStructuredLogger returns a Logger writing to logger, as Temporal's:
// the level of the method called, the keyvals as slog attributes, and the
// caller's source location (for a handler with AddSource).
func NewStructuredLogger(logger *slog.Logger) *StructuredLogger {
	return &StructuredLogger{logger: logger, skip: 3}
}

func (s *StructuredLogger) Debug(msg string, keyvals ...any) { s.log(slog.LevelDebug, msg, keyvals) }
func (s *StructuredLogger) Info(msg string, keyvals ...any)  { s.log(slog.LevelInfo, msg, keyvals) }
func (s *StructuredLogger) Warn(msg string, keyvals ...any)  { s.log(slog.LevelWarn, msg, keyvals) }
func (s *StructuredLogger) Error(msg string, keyvals ...any) { s.log(slog.LevelError, msg, keyvals) }

func (s *StructuredLogger) log(level slog.Level, msg string, keyvals []any) {
	ctx := context.Background()
	if !s.logger.Enabled(ctx, level) {
		return
	}
	var pcs [1]uintptr
	runtime.Callers(s.skip, pcs[:])
	r := slog.NewRecord(time.Now(), level, msg, pcs[0])
	r.Add(keyvals...)
	_ = s.logger.Handler().Handle(ctx, r)
}

// With returns a child whose entries carry keyvals first.
func (s *StructuredLogger) With(keyvals ...any) Logger {
	return &StructuredLogger{logger: s.logger.With(keyvals...), skip: s.skip}
}

// WithCallerSkip returns a child reporting the caller depth frames further
// up the stack.
func (s *StructuredLogger) WithCallerSkip(depth int) Logger {
	return &StructuredLogger{logger: s.logger, skip: s.skip + depth}
}

// Slog returns the *slog.Logger this one writes to.
func (s *StructuredLogger) Slog() *slog.Logger { return s.logger }

// Slog returns a *slog.Logger writing to l, for the code of heddle that
// logs through log/slog (the worker) and for code that wants slog's own
// methods on what workflow.GetLogger and activity.GetLogger return (both
// are StructuredLoggers): l itself when it is a *slog.Logger, the logger a
// StructuredLogger wraps, else a logger whose handler calls l's
// method of the record's level with the record's attributes as keyvals
// (groups joined to the key with dots). Nil gives nil.
func Slog(l Logger) *slog.Logger {
	switch v := l.(type) {
	case nil:
		return nil
	case *slog.Logger:
		return v
	case *StructuredLogger:
		return v.logger
	}
	return slog.New(&handler{l: l})
}

// handler is the slog.Handler of Slog over a Logger that is not slog's.
type handler struct {
	l      Logger
	prefix string // the open groups, each followed by a dot
	attrs  []any  // keyvals of WithAttrs, keys already prefixed
}

// Enabled is true: the Logger filters levels itself, if it does.
func (h *handler) Enabled(context.Context, slog.Level) bool { return true }

func (h *handler) Handle(_ context.Context, r slog.Record) error {
	kv := make([]any, 0, len(h.attrs)+2*r.NumAttrs())
	kv = append(kv, h.attrs...)
	r.Attrs(func(a slog.Attr) bool {
		kv = appendAttr(kv, h.prefix, a)
		return true
	})
	l := h.l
	if sk, ok := l.(WithSkipCallers); ok && r.PC != 0 {
		// A Logger that reports its caller would report this method: point
		// it at the frame that logged, the one the record's PC is in.
		if depth := framesUpTo(r.PC); depth > 0 {
			l = sk.WithCallerSkip(depth)
		}
	}
	switch {
	case r.Level >= slog.LevelError:
		l.Error(r.Message, kv...)
	case r.Level >= slog.LevelWarn:
		l.Warn(r.Message, kv...)
	case r.Level >= slog.LevelInfo:
		l.Info(r.Message, kv...)
	default:
		l.Debug(r.Message, kv...)
	}
	return nil
}

// maxLogDepth bounds the frames framesUpTo looks through: a record's
// frame lies a few calls above the handler (slog's or StructuredLogger's
// methods, a handler wrapping this one), never dozens.
const maxLogDepth = 32

// framesUpTo returns how many frames above its caller the frame holding
// pc is (its caller's caller is 1), or 0 when it is not among the
// nearest maxLogDepth. pc comes from runtime.Callers, as a slog.Record's
// does, so it is equal to the frame's entry in this walk.
func framesUpTo(pc uintptr) int {
	var pcs [maxLogDepth]uintptr
	n := runtime.Callers(2, pcs[:]) // pcs[0] is in the caller
	for i, p := range pcs[:n] {
		if p == pc {
			return i
		}
	}
	return 0
}

// appendAttr flattens a (a group becomes one key per member) onto kv.
func appendAttr(kv []any, prefix string, a slog.Attr) []any {
	v := a.Value.Resolve()
	if v.Kind() == slog.KindGroup {
		p := prefix
		if a.Key != "" {
			p += a.Key + "."
		}
		for _, m := range v.Group() {
			kv = appendAttr(kv, p, m)
		}
		return kv
	}
	if a.Key == "" {
		return kv
	}
	return append(kv, prefix+a.Key, v.Any())
}

func (h *handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	n := &handler{l: h.l, prefix: h.prefix, attrs: append([]any(nil), h.attrs...)}
	for _, a := range attrs {
		n.attrs = appendAttr(n.attrs, h.prefix, a)
	}
	return n
}

func (h *handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return &handler{l: h.l, prefix: h.prefix + name + ".", attrs: h.attrs}
}
