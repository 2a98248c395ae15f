package client_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/log"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// lineLogger is a log.Logger that is not slog's, as a Temporal program's
// own logger (zap or logrus behind an adapter) would be.
type lineLogger struct {
	mu    sync.Mutex
	lines []string
}

func (l *lineLogger) add(level, msg string, kv []any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprint(level, " ", msg, " ", kv))
}
func (l *lineLogger) Debug(msg string, kv ...any) { l.add("DEBUG", msg, kv) }
func (l *lineLogger) Info(msg string, kv ...any)  { l.add("INFO", msg, kv) }
func (l *lineLogger) Warn(msg string, kv ...any)  { l.add("WARN", msg, kv) }
func (l *lineLogger) Error(msg string, kv ...any) { l.add("ERROR", msg, kv) }

func (l *lineLogger) find(prefix string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.lines {
		if strings.HasPrefix(s, prefix) {
			return s
		}
	}
	return ""
}

func LoggingActivity(ctx context.Context, n int) (int, error) {
	var l log.Logger = activity.GetLogger(ctx) // Temporal's type holds it
	l.Info("activity ran", "n", n)
	return n + 1, nil
}

func LoggingWorkflow(ctx workflow.Context, n int) (int, error) {
	logger := log.With(workflow.GetLogger(ctx), "phase", "start")
	logger.Info("workflow ran", "n", n)
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	var out int
	err := workflow.ExecuteActivity(ctx, LoggingActivity, n).Get(ctx, &out)
	return out, err
}

// client.Options.Logger takes any log.Logger, as Temporal's does: the
// workers made from the client write to it, and so do the loggers of
// workflow and activity code, with their keyvals.
func TestOptionsLoggerReachesWorkflowAndActivityLoggers(t *testing.T) {
	rec := &lineLogger{}
	c, err := client.Dial(client.Options{Service: openEngine(t), Logger: rec})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	w := worker.New(c, "logging", worker.Options{})
	w.RegisterWorkflow(LoggingWorkflow)
	w.RegisterActivity(LoggingActivity)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "logging", TaskQueue: "logging"}, LoggingWorkflow, 41)
	if err != nil {
		t.Fatal(err)
	}
	var out int
	if err := run.Get(ctx, &out); err != nil || out != 42 {
		t.Fatalf("Get = %d, %v", out, err)
	}
	wf := rec.find("INFO workflow ran")
	if !strings.Contains(wf, "phase start") || !strings.Contains(wf, "n 41") {
		t.Fatalf("workflow entry %q (all: %q)", wf, rec.lines)
	}
	if act := rec.find("INFO activity ran"); !strings.Contains(act, "n 41") {
		t.Fatalf("activity entry %q (all: %q)", act, rec.lines)
	}
}
