package temporalhistory

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// Temporal records an update the workflow accepted (a rejected one leaves
// no event) and its outcome. heddle records the request as a signal and
// the decision and outcome as keyed markers, which is what these map to.
type (
	updateMeta struct {
		UpdateID string `json:"updateId"`
	}
	updateAcceptedAttrs struct {
		AcceptedRequest struct {
			Meta  updateMeta `json:"meta"`
			Input struct {
				Name string    `json:"name"`
				Args *payloads `json:"args"`
			} `json:"input"`
		} `json:"acceptedRequest"`
	}
	updateCompletedAttrs struct {
		Meta    updateMeta `json:"meta"`
		Outcome struct {
			Success *payloads       `json:"success"`
			Failure json.RawMessage `json:"failure"`
		} `json:"outcome"`
	}
)

func (d *decoder) updateAccepted(ev *rawEvent, a *updateAcceptedAttrs) error {
	req := a.AcceptedRequest
	if req.Meta.UpdateID == "" || req.Input.Name == "" {
		return errors.New("acceptedRequest needs meta.updateId and input.name")
	}
	args, err := toJSONArray(req.Input.Args)
	if err != nil {
		return fmt.Errorf("update arguments: %w", err)
	}
	sig, err := json.Marshal(workflow.UpdateRequest{ID: req.Meta.UpdateID, Name: req.Input.Name, Args: args})
	if err != nil {
		return err
	}
	d.emit(ev, engine.Event{Type: engine.EventSignalReceived, Name: workflow.UpdateSignalName, Payload: sig})
	accepted, err := json.Marshal(workflow.UpdateOutcome{})
	if err != nil {
		return err
	}
	d.emit(ev, engine.Event{Type: engine.EventMarkerRecorded, Step: "k:" + workflow.UpdateMarkerKey(req.Meta.UpdateID, "decision"),
		Name: "update_decision", Payload: accepted})
	return nil
}

func (d *decoder) updateCompleted(ev *rawEvent, a *updateCompletedAttrs) error {
	if a.Meta.UpdateID == "" {
		return errors.New("meta.updateId is missing")
	}
	var o workflow.UpdateOutcome
	if len(a.Outcome.Failure) > 0 && string(a.Outcome.Failure) != "null" {
		p, err := failurePayload(a.Outcome.Failure, errors.New("update failed"))
		if err != nil {
			return err
		}
		o.Failure = p
	} else {
		res, err := toJSONArray(a.Outcome.Success)
		if err != nil {
			return fmt.Errorf("update result: %w", err)
		}
		o.Result = res
	}
	payload, err := json.Marshal(o)
	if err != nil {
		return err
	}
	d.emit(ev, engine.Event{Type: engine.EventMarkerRecorded, Step: "k:" + workflow.UpdateMarkerKey(a.Meta.UpdateID, "completed"),
		Name: "update_completed", Payload: payload})
	return nil
}
