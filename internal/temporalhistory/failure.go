package temporalhistory

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/internal/sdkhook"
	"github.com/heddlewf/heddle/sdk/temporal"
)

// failureJSON is the part of Temporal's Failure message heddle's errors
// can carry.
type failureJSON struct {
	Message                string       `json:"message"`
	StackTrace             string       `json:"stackTrace"`
	Cause                  *failureJSON `json:"cause"`
	ApplicationFailureInfo *struct {
		Type         string    `json:"type"`
		NonRetryable bool      `json:"nonRetryable"`
		Details      *payloads `json:"details"`
	} `json:"applicationFailureInfo"`
	TimeoutFailureInfo *struct {
		TimeoutType          string    `json:"timeoutType"`
		LastHeartbeatDetails *payloads `json:"lastHeartbeatDetails"`
	} `json:"timeoutFailureInfo"`
	CanceledFailureInfo *struct {
		Details *payloads `json:"details"`
	} `json:"canceledFailureInfo"`
	TerminatedFailureInfo *json.RawMessage `json:"terminatedFailureInfo"`
	ActivityFailureInfo   *struct {
		ActivityType struct {
			Name string `json:"name"`
		} `json:"activityType"`
	} `json:"activityFailureInfo"`
	ChildWorkflowExecutionFailureInfo *struct {
		WorkflowExecution struct {
			WorkflowID string `json:"workflowId"`
			RunID      string `json:"runId"`
		} `json:"workflowExecution"`
		WorkflowType struct {
			Name string `json:"name"`
		} `json:"workflowType"`
	} `json:"childWorkflowExecutionFailureInfo"`
}

// timeoutTypes maps Temporal's TimeoutType enum, in either spelling.
var timeoutTypes = map[string]engine.TimeoutType{
	"TIMEOUT_TYPE_START_TO_CLOSE":    engine.TimeoutStartToClose,
	"TIMEOUT_TYPE_SCHEDULE_TO_START": engine.TimeoutScheduleToStart,
	"TIMEOUT_TYPE_SCHEDULE_TO_CLOSE": engine.TimeoutScheduleToClose,
	"TIMEOUT_TYPE_HEARTBEAT":         engine.TimeoutHeartbeat,
	"StartToClose":                   engine.TimeoutStartToClose,
	"ScheduleToStart":                engine.TimeoutScheduleToStart,
	"ScheduleToClose":                engine.TimeoutScheduleToClose,
	"Heartbeat":                      engine.TimeoutHeartbeat,
}

// maxFailureDepth bounds the cause chain read, as heddle's own failure
// payloads are bounded.
const maxFailureDepth = 32

// detailValues turns payloads into the values a heddle error carries.
func detailValues(ps *payloads) ([]any, error) {
	arr, err := toJSONArray(ps)
	if err != nil || arr == nil {
		return nil, err
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(arr, &raw); err != nil {
		return nil, err
	}
	out := make([]any, len(raw))
	for i, r := range raw {
		out[i] = r
	}
	return out, nil
}

// toError turns a Temporal failure into the sdk/temporal error it stands
// for, so that the workflow code sees on replay what it saw when it ran.
func toError(f *failureJSON, depth int) (error, error) {
	if f == nil {
		return nil, nil
	}
	if depth >= maxFailureDepth {
		return nil, fmt.Errorf("the failure's cause chain is deeper than %d", maxFailureDepth)
	}
	cause, err := toError(f.Cause, depth+1)
	if err != nil {
		return nil, err
	}
	switch {
	case f.TimeoutFailureInfo != nil:
		tt, ok := timeoutTypes[f.TimeoutFailureInfo.TimeoutType]
		if !ok {
			return nil, fmt.Errorf("timeout type %q has no heddle equivalent", truncate(f.TimeoutFailureInfo.TimeoutType))
		}
		details, err := detailValues(f.TimeoutFailureInfo.LastHeartbeatDetails)
		if err != nil {
			return nil, err
		}
		return temporal.NewTimeoutError(tt, cause, details...), nil
	case f.CanceledFailureInfo != nil:
		details, err := detailValues(f.CanceledFailureInfo.Details)
		if err != nil {
			return nil, err
		}
		return temporal.NewCanceledErrorWithOptions(temporal.CanceledErrorOptions{Message: f.Message, Cause: cause, Details: details}), nil
	case f.TerminatedFailureInfo != nil:
		return sdkhook.NewTerminatedError(f.Message), nil
	case f.ActivityFailureInfo != nil:
		return temporal.NewActivityError(f.ActivityFailureInfo.ActivityType.Name, "", cause), nil
	case f.ChildWorkflowExecutionFailureInfo != nil:
		c := f.ChildWorkflowExecutionFailureInfo
		return temporal.NewChildWorkflowExecutionError(c.WorkflowExecution.WorkflowID, c.WorkflowExecution.RunID,
			c.WorkflowType.Name, "", cause), nil
	}
	opts := temporal.ApplicationErrorOptions{Cause: cause}
	typ := ""
	if a := f.ApplicationFailureInfo; a != nil {
		typ, opts.NonRetryable = a.Type, a.NonRetryable
		if opts.Details, err = detailValues(a.Details); err != nil {
			return nil, err
		}
	}
	return temporal.NewApplicationErrorWithOptions(f.Message, typ, opts), nil
}

// failurePayload reads the failure attribute raw and returns heddle's
// failure payload for it; fallback is used when the attribute is absent.
func failurePayload(raw json.RawMessage, fallback error) ([]byte, error) {
	var f *failureJSON
	if len(raw) > 0 && strings.TrimSpace(string(raw)) != "null" {
		f = new(failureJSON)
		if err := json.Unmarshal(raw, f); err != nil {
			return nil, fmt.Errorf("failure: %w", err)
		}
	}
	err, convErr := toError(f, 0)
	if convErr != nil {
		return nil, convErr
	}
	if err == nil {
		err = fallback
	}
	return sdkhook.EncodeFailure(err), nil
}
