// Package log is Temporal's logging interface: the Logger that client.Options
// takes, and adapters between it and log/slog.
package log

// Logger is what the SDK logs through, as Temporal's log.Logger: a message
// and alternating keys and values. workflow.GetLogger and
// activity.GetLogger return one (a StructuredLogger), and a *slog.Logger
// is one too. An implementation may be called from many goroutines at
// once.
type Logger interface {
	Debug(msg string, keyvals ...any)
	Info(msg string, keyvals ...any)
	Warn(msg string, keyvals ...any)
	Error(msg string, keyvals ...any)
}

// WithLogger is implemented by a Logger that can make a child logger
// prefixing every entry with keyvals. With must not change the receiver.
type WithLogger interface {
	With(keyvals ...any) Logger
}

// WithSkipCallers is implemented by a Logger that reports its caller's
// source location and can make a child that skips depth more stack frames
// (for wrappers). WithCallerSkip must not change the receiver.
type WithSkipCallers interface {
	WithCallerSkip(depth int) Logger
}

// With returns a logger that adds keyvals before the keyvals of every
// entry: logger's own With when it implements WithLogger, else a wrapper.
func With(logger Logger, keyvals ...any) Logger {
	if wl, ok := logger.(WithLogger); ok {
		return wl.With(keyvals...)
	}
	return &withLogger{next: Skip(logger, 1), keyvals: keyvals}
}

// Skip returns logger skipping depth more caller frames when it implements
// WithSkipCallers, else logger itself.
func Skip(logger Logger, depth int) Logger {
	if s, ok := logger.(WithSkipCallers); ok {
		return s.WithCallerSkip(depth)
	}
	return logger
}

// withLogger is With's wrapper for a Logger that has no With of its own.
type withLogger struct {
	next    Logger
	keyvals []any
}

// join copies, so that two entries logged at once through the same
// wrapper cannot share (and overwrite) one backing array.
func (l *withLogger) join(keyvals []any) []any {
	out := make([]any, 0, len(l.keyvals)+len(keyvals))
	return append(append(out, l.keyvals...), keyvals...)
}

func (l *withLogger) Debug(msg string, keyvals ...any) { l.next.Debug(msg, l.join(keyvals)...) }
func (l *withLogger) Info(msg string, keyvals ...any)  { l.next.Info(msg, l.join(keyvals)...) }
func (l *withLogger) Warn(msg string, keyvals ...any)  { l.next.Warn(msg, l.join(keyvals)...) }
func (l *withLogger) Error(msg string, keyvals ...any) { l.next.Error(msg, l.join(keyvals)...) }

func (l *withLogger) With(keyvals ...any) Logger {
	return &withLogger{next: l.next, keyvals: l.join(keyvals)}
}

func (l *withLogger) WithCallerSkip(depth int) Logger {
	return &withLogger{next: Skip(l.next, depth), keyvals: l.keyvals}
}

// NewNopLogger returns a Logger that discards everything.
func NewNopLogger() Logger { return nopLogger{} }

type nopLogger struct{}

func (nopLogger) Debug(string, ...any) {}
func (nopLogger) Info(string, ...any)  {}
func (nopLogger) Warn(string, ...any)  {}
func (nopLogger) Error(string, ...any) {}
