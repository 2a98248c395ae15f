package machine

import (
	"testing"

	"github.com/heddlewf/heddle/engine"
)

// Each deadline names its timeout type; an activity task's execution
// deadline is its schedule-to-close timeout.
func TestTimeoutFailureTypes(t *testing.T) {
	wf := &engine.Job{ID: 1, WorkflowID: "w", Type: "order"}
	act := &engine.Job{ID: 2, WorkflowID: "a", Type: engine.ActivityTypePrefix + "charge"}
	tests := []struct {
		job    *engine.Job
		reason string
		want   engine.TimeoutType
	}{
		{wf, engine.ReasonExecutionTimeout, engine.TimeoutWorkflowExecution},
		{wf, engine.ReasonRunTimeout, engine.TimeoutWorkflowRun},
		{wf, engine.ReasonScheduleToStart, engine.TimeoutScheduleToStart},
		{act, engine.ReasonExecutionTimeout, engine.TimeoutScheduleToClose},
		{act, engine.ReasonScheduleToStart, engine.TimeoutScheduleToStart},
	}
	for _, tt := range tests {
		f, err := engine.DecodeFailure(timeoutFailure(tt.job, tt.reason))
		if err != nil || f.Type != engine.FailureTimeout || f.TimeoutType != tt.want || !f.NonRetryable {
			t.Errorf("%s of %s: %+v, %v; want %s", tt.reason, tt.job.Type, f, err, tt.want)
		}
	}
}
