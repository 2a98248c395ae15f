package testsuite_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/heddlewf/heddle/sdk/testsuite"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// cronRuns records what each run of Tick saw.
var cronRuns struct {
	mu   sync.Mutex
	seen [][2]time.Time // the last run's time, this run's time
}

// NoteTick records a run of Tick.
func NoteTick(_ context.Context, last, now time.Time) error {
	cronRuns.mu.Lock()
	defer cronRuns.mu.Unlock()
	cronRuns.seen = append(cronRuns.seen, [2]time.Time{last, now})
	return nil
}

// Tick is a cron workflow that passes the time it ran on to its next run.
func Tick(ctx workflow.Context) (time.Time, error) {
	var last time.Time
	if workflow.HasLastCompletionResult(ctx) {
		if err := workflow.GetLastCompletionResult(ctx, &last); err != nil {
			return time.Time{}, err
		}
	}
	now := workflow.Now(ctx)
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	return now, workflow.ExecuteActivity(ctx, NoteTick, last, now).Get(ctx, nil)
}

// A cron child in a test environment runs as in Temporal's: its first run
// at once, then at each time of its line, every run seeing workflow time
// as the time it started and the result of the run before.
func TestCronChildRunsAtOnceThenOnItsLine(t *testing.T) {
	forEachCache(t, func(t *testing.T, env *testsuite.TestWorkflowEnvironment) {
		cronRuns.mu.Lock()
		cronRuns.seen = nil
		cronRuns.mu.Unlock()
		begin := time.Date(2026, 4, 2, 10, 10, 0, 0, time.UTC)
		env.SetStartTime(begin)
		env.RegisterWorkflow(Tick)
		env.RegisterActivity(NoteTick)
		env.ExecuteWorkflow(func(ctx workflow.Context) (bool, error) {
			cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{CronSchedule: "0 * * * *", WorkflowRunTimeout: 10 * time.Minute})
			f := workflow.ExecuteChildWorkflow(cctx, Tick)
			err := workflow.Sleep(ctx, 2*time.Hour+30*time.Minute)
			return f.IsReady(), err
		})
		if ready := result[bool](t, env); ready {
			t.Fatal("the cron chain ended")
		}
		hour := begin.Truncate(time.Hour)
		want := [][2]time.Time{
			{{}, begin},
			{begin, hour.Add(time.Hour)},
			{hour.Add(time.Hour), hour.Add(2 * time.Hour)},
		}
		cronRuns.mu.Lock()
		defer cronRuns.mu.Unlock()
		if len(cronRuns.seen) != len(want) {
			t.Fatalf("runs saw %v, want %v", cronRuns.seen, want)
		}
		for i, w := range want {
			if !cronRuns.seen[i][0].Equal(w[0]) || !cronRuns.seen[i][1].Equal(w[1]) {
				t.Fatalf("run %d saw %v, want %v (all: %v)", i+1, cronRuns.seen[i], w, cronRuns.seen)
			}
		}
	})
}
