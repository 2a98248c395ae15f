package testsuite_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/log"
	"github.com/heddlewf/heddle/sdk/testsuite"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// lines is a log.Logger that is not slog's, as the logger a Temporal test
// gives SetLogger often is.
type lines struct {
	mu  sync.Mutex
	all []string
}

func (l *lines) add(level, msg string, kv []any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all = append(l.all, fmt.Sprint(level, " ", msg, " ", kv))
}
func (l *lines) Debug(msg string, kv ...any) { l.add("DEBUG", msg, kv) }
func (l *lines) Info(msg string, kv ...any)  { l.add("INFO", msg, kv) }
func (l *lines) Warn(msg string, kv ...any)  { l.add("WARN", msg, kv) }
func (l *lines) Error(msg string, kv ...any) { l.add("ERROR", msg, kv) }

func (l *lines) with(prefix string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.all {
		if strings.HasPrefix(s, prefix) {
			return s
		}
	}
	return ""
}

func loggedActivity(ctx context.Context) error {
	activity.GetLogger(ctx).(log.WithLogger).With("part", "act").Warn("from the activity")
	return nil
}

func loggedWorkflow(ctx workflow.Context) error {
	workflow.GetLogger(ctx).(log.WithLogger).With("part", "wf").Info("from the workflow")
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	return workflow.ExecuteActivity(ctx, loggedActivity).Get(ctx, nil)
}

// SetLogger takes Temporal's log.Logger; what workflow and activity code
// log reaches it with the run's attributes and those of With.
func TestSetLoggerTakesALogLogger(t *testing.T) {
	var ts testsuite.WorkflowTestSuite
	rec := &lines{}
	ts.SetLogger(rec)
	if ts.GetLogger() != log.Logger(rec) {
		t.Fatalf("GetLogger = %v, want the logger SetLogger set", ts.GetLogger())
	}
	env := ts.NewTestWorkflowEnvironment()
	env.RegisterActivity(loggedActivity)
	env.ExecuteWorkflow(loggedWorkflow)
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if s := rec.with("INFO from the workflow"); !strings.Contains(s, "workflowType loggedWorkflow") || !strings.Contains(s, "part wf") {
		t.Errorf("workflow entry %q (all: %q)", s, rec.all)
	}
	if s := rec.with("WARN from the activity"); !strings.Contains(s, "activity_type loggedActivity") || !strings.Contains(s, "part act") {
		t.Errorf("activity entry %q (all: %q)", s, rec.all)
	}
}
