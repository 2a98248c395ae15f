package workflow

import (
	"context"
	"log/slog"
)

// Info describes the running workflow.
type Info struct {
	WorkflowID   string
	RunID        string
	WorkflowType string
	TaskQueue    string
	Attempt      int
}

// GetInfo returns the running workflow's Info. The caller must not change
// it.
func GetInfo(ctx Context) *Info { return &stateOf(ctx).info }

// Logger is the logger of workflow code. keyvals are alternating keys and
// values, as in log/slog.
type Logger interface {
	Debug(msg string, keyvals ...any)
	Info(msg string, keyvals ...any)
	Warn(msg string, keyvals ...any)
	Error(msg string, keyvals ...any)
}

// GetLogger returns a logger that writes through the worker's slog.Logger
// (slog.Default when none was given), with the workflow's id, run id and
// type attached, and that drops every line while the workflow replays, so
// each line is written once however often the code is replayed.
func GetLogger(ctx Context) Logger {
	st := stateOf(ctx)
	return replayLogger{env: st.x, l: st.logger}
}

type replayLogger struct {
	env execEnv
	l   *slog.Logger
}

func (r replayLogger) log(level slog.Level, msg string, keyvals []any) {
	if r.env.IsReplaying() {
		return
	}
	r.l.Log(context.Background(), level, msg, keyvals...)
}

func (r replayLogger) Debug(msg string, kv ...any) { r.log(slog.LevelDebug, msg, kv) }
func (r replayLogger) Info(msg string, kv ...any)  { r.log(slog.LevelInfo, msg, kv) }
func (r replayLogger) Warn(msg string, kv ...any)  { r.log(slog.LevelWarn, msg, kv) }
func (r replayLogger) Error(msg string, kv ...any) { r.log(slog.LevelError, msg, kv) }
