package client

import (
	"errors"
	"testing"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// The request maps to the engine's command as Temporal's fields say: the
// run, the point, and what to leave out of the new run (the reapply type,
// Temporal's older way, and the exclude types); a request the engine could
// not take is refused naming the field.
func TestResetCommand(t *testing.T) {
	wf := &workflow.Execution{ID: "o-1", RunID: "7"}
	for _, tc := range []struct {
		name string
		req  ResetWorkflowExecutionRequest
		want engine.ResetJob
		bad  string
	}{
		{"event id", ResetWorkflowExecutionRequest{WorkflowExecution: wf, WorkflowTaskFinishEventId: 4, Reason: "r", RequestId: "q"},
			engine.ResetJob{Header: engine.Header{RequestID: "q"}, Target: engine.Target{Job: 7, WorkflowID: "o-1"}, Seq: 4, Reason: "r"}, ""},
		{"type, latest run", ResetWorkflowExecutionRequest{WorkflowExecution: &workflow.Execution{ID: "o-1"}, ResetType: ResetTypeLastWorkflowTask},
			engine.ResetJob{Target: engine.Target{WorkflowID: "o-1"}, Type: engine.ResetLastWorkflowTask}, ""},
		{"reapply signals only", ResetWorkflowExecutionRequest{WorkflowExecution: wf, ResetType: ResetTypeFirstWorkflowTask, ResetReapplyType: ResetReapplyTypeSignal},
			engine.ResetJob{Target: engine.Target{Job: 7, WorkflowID: "o-1"}, Type: engine.ResetFirstWorkflowTask, ExcludeUpdates: true}, ""},
		{"reapply none", ResetWorkflowExecutionRequest{WorkflowExecution: wf, ResetType: ResetTypeFirstWorkflowTask, ResetReapplyType: ResetReapplyTypeNone},
			engine.ResetJob{Target: engine.Target{Job: 7, WorkflowID: "o-1"}, Type: engine.ResetFirstWorkflowTask, ExcludeSignals: true, ExcludeUpdates: true}, ""},
		{"exclude signals", ResetWorkflowExecutionRequest{WorkflowExecution: wf, ResetType: ResetTypeFirstWorkflowTask,
			ResetReapplyExcludeTypes: []ResetReapplyExcludeType{ResetReapplyExcludeTypeSignal}},
			engine.ResetJob{Target: engine.Target{Job: 7, WorkflowID: "o-1"}, Type: engine.ResetFirstWorkflowTask, ExcludeSignals: true}, ""},
		{"namespace", ResetWorkflowExecutionRequest{Namespace: "prod", WorkflowExecution: wf}, engine.ResetJob{}, "Namespace"},
		{"no workflow", ResetWorkflowExecutionRequest{WorkflowTaskFinishEventId: 4}, engine.ResetJob{}, "WorkflowExecution"},
		{"bad run id", ResetWorkflowExecutionRequest{WorkflowExecution: &workflow.Execution{ID: "o-1", RunID: "abc"}}, engine.ResetJob{}, "RunID"},
		{"bad reapply type", ResetWorkflowExecutionRequest{WorkflowExecution: wf, ResetReapplyType: 9}, engine.ResetJob{}, "ResetReapplyType"},
		{"bad exclude type", ResetWorkflowExecutionRequest{WorkflowExecution: wf, ResetReapplyExcludeTypes: []ResetReapplyExcludeType{3}}, engine.ResetJob{}, "ResetReapplyExcludeTypes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := resetCommand(&tc.req)
			if tc.bad != "" {
				var fe *engine.FieldError
				if !errors.As(err, &fe) || fe.Field != tc.bad && fe.Field != "WorkflowExecution."+tc.bad || !errors.Is(err, engine.ErrInvalidCommand) {
					t.Fatalf("got %+v, %v; want a refusal of %s", got, err, tc.bad)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Target != tc.want.Target || got.Type != tc.want.Type || got.Seq != tc.want.Seq || got.Reason != tc.want.Reason ||
				got.RequestID != tc.want.RequestID || got.ExcludeSignals != tc.want.ExcludeSignals || got.ExcludeUpdates != tc.want.ExcludeUpdates {
				t.Fatalf("command %+v, want %+v", got, tc.want)
			}
		})
	}
	if _, err := resetCommand(nil); !errors.Is(err, engine.ErrInvalidCommand) {
		t.Errorf("a nil request: %v", err)
	}
}
