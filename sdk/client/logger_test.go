package client_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
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
	// As Temporal's samples do: a type assertion, which compiles only on
	// an interface, and succeeds only if the logger has a With.
	l := activity.GetLogger(ctx).(log.WithLogger).With("activity", "LoggingActivity")
	l.Info("activity ran", "n", n)
	l.Debug("activity detail", "n", n)
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
	if _, out := runLogging(t, rec, "logging", 41); out != 42 {
		t.Fatalf("Get = %d, want 42", out)
	}
	wf := rec.find("INFO workflow ran")
	if !strings.Contains(wf, "phase start") || !strings.Contains(wf, "n 41") {
		t.Fatalf("workflow entry %q (all: %q)", wf, rec.lines)
	}
	if act := rec.find("INFO activity ran"); !strings.Contains(act, "activity LoggingActivity") || !strings.Contains(act, "n 41") {
		t.Fatalf("activity entry %q (all: %q)", act, rec.lines)
	}
}

// syncBuffer is a bytes.Buffer that workflow and activity goroutines may
// write to at once.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// As Temporal's slog sample configures it: log.NewStructuredLogger over a
// slog handler. Entries of workflow and activity loggers reach the
// handler with their levels (Debug filtered by an Info handler), the
// run's attributes and those of With.
func TestStructuredLoggerReachesTheSlogHandlerWithLevelsAndFields(t *testing.T) {
	var buf syncBuffer
	handler := slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})
	runID, _ := runLogging(t, log.NewStructuredLogger(slog.New(handler)), "slogging", 1)
	out := buf.String()
	for _, want := range []string{
		`level=INFO msg="workflow ran" workflowID=slogging runID=` + runID + ` workflowType=LoggingWorkflow phase=start n=1`,
		`level=INFO msg="activity ran" activity_type=LoggingActivity workflow_id=slogging run_id=` + runID +
			` step=1 attempt=1 activity=LoggingActivity n=1`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no line with %q in:\n%s", want, out)
		}
	}
	if strings.Contains(out, "level=DEBUG") {
		t.Errorf("a Debug entry passed an Info handler:\n%s", out)
	}
}

// runLogging runs LoggingWorkflow(n) to completion on a worker of queue
// (also its workflow id), with a client logging to logger, and returns the
// run's id and result.
func runLogging(t *testing.T, logger log.Logger, queue string, n int) (runID string, result int) {
	t.Helper()
	c, err := client.Dial(client.Options{Service: openEngine(t), Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	w := worker.New(c, queue, worker.Options{})
	w.RegisterWorkflow(LoggingWorkflow)
	w.RegisterActivity(LoggingActivity)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: queue, TaskQueue: queue}, LoggingWorkflow, n)
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Get(ctx, &result); err != nil {
		t.Fatal(err)
	}
	return run.GetRunID(), result
}
