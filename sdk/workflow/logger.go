package workflow

import (
	"context"
	"log/slog"

	"github.com/heddlewf/heddle/sdk/log"
)

// Logger is log.Logger, the type GetLogger returns; the name is kept for
// code written against heddle's earlier workflow.Logger.
type Logger = log.Logger

// GetLogger returns the logger of workflow code, as Temporal's: a
// log.Logger that writes through the worker's slog.Logger (slog.Default
// when none was given) with the workflow's workflowID, runID and
// workflowType attached, and that drops every entry while the workflow
// replays, so each line is written once however often the code is
// replayed. It is a *log.StructuredLogger, so it implements log.WithLogger
// and log.WithSkipCallers (children stay silent in replay too); code that
// wants log/slog's own methods gets them from log.Slog(GetLogger(ctx)),
// which keeps the silence. A worker's interceptors (sdk/interceptor) may
// give another logger.
func GetLogger(ctx Context) log.Logger {
	if o := outboundOf(ctx); o != nil {
		return o.GetLogger(ctx)
	}
	return getLogger(ctx)
}

func getLogger(ctx Context) log.Logger {
	st := stateOf(ctx)
	return log.NewStructuredLogger(slog.New(&replayHandler{env: st.x, next: st.logger.Handler()}))
}

// replayHandler is the slog.Handler of GetLogger: next's, disabled while
// env replays. It asks env at every entry, not once, because one logger
// may be kept across the point where replay ends and live execution
// starts. It runs on the workflow's goroutine, as env requires.
type replayHandler struct {
	env  execEnv
	next slog.Handler
}

func (h *replayHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return !h.env.IsReplaying() && h.next.Enabled(ctx, level)
}

func (h *replayHandler) Handle(ctx context.Context, r slog.Record) error {
	if h.env.IsReplaying() {
		return nil
	}
	return h.next.Handle(ctx, r)
}

func (h *replayHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &replayHandler{env: h.env, next: h.next.WithAttrs(attrs)}
}

func (h *replayHandler) WithGroup(name string) slog.Handler {
	return &replayHandler{env: h.env, next: h.next.WithGroup(name)}
}
