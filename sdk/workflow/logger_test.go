package workflow

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/sdk/log"
)

// Temporal code derives loggers by type-asserting what GetLogger returns
// (logger.(log.WithLogger).With(...)); the derived loggers, and the
// *slog.Logger log.Slog gives back, keep the run's attributes, the
// handler's level and the silence of replay.
func TestLoggerDerivedByTypeAssertionKeepsFieldsLevelsAndReplaySilence(t *testing.T) {
	var buf bytes.Buffer
	handler := slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})
	wf := func(ctx Context) (string, error) {
		logger := GetLogger(ctx)
		if _, ok := logger.(log.WithSkipCallers); !ok {
			t.Errorf("GetLogger's %T is not a log.WithSkipCallers", logger)
		}
		child := logger.(log.WithLogger).With("phase", "start")
		child.Info("with child", "n", 1)
		child.Debug("below the level")
		if err := Sleep(ctx, time.Second); err != nil {
			return "", err
		}
		log.Slog(child).Warn("through slog", "n", 2)
		log.Skip(child, 0).Error("skipped", "n", 3)
		return "done", nil
	}
	entry := newEntry(wf, Info{WorkflowID: "wf-7", RunID: "r7", WorkflowType: Type{Name: "Logs"}}, slog.New(handler))
	w := newTestWorker(t)
	res, err := w.driveEntry(entry)
	if err != nil || decodeString(t, res) != "done" {
		t.Fatalf("%q, %v", res, err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	want := []string{
		`level=INFO msg="with child" workflowID=wf-7 runID=r7 workflowType=Logs phase=start n=1`,
		`level=WARN msg="through slog" workflowID=wf-7 runID=r7 workflowType=Logs phase=start n=2`,
		`level=ERROR msg=skipped workflowID=wf-7 runID=r7 workflowType=Logs phase=start n=3`,
	}
	if len(lines) != len(want) {
		t.Fatalf("live log has %d lines, want %d:\n%s", len(lines), len(want), buf.String())
	}
	for i, l := range lines {
		// Drop the time= attribute, the one part that changes from run to run.
		if _, rest, ok := strings.Cut(l, " "); !ok || rest != want[i] {
			t.Errorf("line %d = %q, want %q after the time", i, l, want[i])
		}
	}
	buf.Reset()
	w.append(engine.Event{Type: engine.EventJobCompleted, Payload: res})
	if _, err := w.replayer().driveEntry(entry); err != nil || buf.Len() != 0 {
		t.Fatalf("replay logged %q, %v", buf.String(), err)
	}
}

// The workflow logger reports the workflow code as the caller, so that a
// handler with AddSource points at the line that logged.
func TestLoggerReportsWorkflowCodeAsSource(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{AddSource: true}))
	entry := newEntry(func(ctx Context) error {
		GetLogger(ctx).Info("here")
		return nil
	}, Info{WorkflowID: "wf-8"}, logger)
	if _, err := newTestWorker(t).driveEntry(entry); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "logger_test.go") {
		t.Fatalf("source is not this file: %q", buf.String())
	}
}
