package ui

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/httpapi"
	"github.com/heddlewf/heddle/sdk/converter"
)

// maxReasonRunes bounds the reason typed into a cancel or terminate form.
const maxReasonRunes = 1000

// signal sends the form's signal: a name and one JSON value (null when
// empty), encoded as the SDK's client encodes a signal's argument.
func (h *Handler) signal(rq *request) (*page, error) {
	name, value := formValue(rq.r, "name"), formValue(rq.r, "value")
	return h.act(rq, ActionSignal, func(id engine.JobID) error {
		if name == "" {
			return &pageError{status: http.StatusBadRequest, msg: "A signal needs a name."}
		}
		raw := json.RawMessage("null")
		if value != "" {
			if !json.Valid([]byte(value)) {
				return &pageError{status: http.StatusBadRequest,
					msg: "The signal's value is not JSON (a string is written in quotes: \"text\")."}
			}
			raw = json.RawMessage(value)
		}
		payload, err := converter.Encode(raw)
		if err != nil {
			return err
		}
		_, err = rq.api.Signal(rq.ctx, engine.Signal{Target: engine.Target{Job: id}, Name: name, Payload: payload})
		return err
	}, signalForm{Name: name, Value: value})
}

// cancel asks the run to cancel itself.
func (h *Handler) cancel(rq *request) (*page, error) {
	reason := formValue(rq.r, "reason")
	return h.act(rq, ActionCancel, func(id engine.JobID) error {
		if err := checkReason(reason); err != nil {
			return err
		}
		_, err := rq.api.RequestCancel(rq.ctx, engine.RequestCancel{Target: engine.Target{Job: id}, Reason: reason})
		return err
	}, signalForm{})
}

// terminate ends the run at once.
func (h *Handler) terminate(rq *request) (*page, error) {
	reason := formValue(rq.r, "reason")
	return h.act(rq, ActionTerminate, func(id engine.JobID) error {
		if err := checkReason(reason); err != nil {
			return err
		}
		_, err := rq.api.Terminate(rq.ctx, engine.Terminate{Target: engine.Target{Job: id}, Reason: reason})
		return err
	}, signalForm{})
}

// reset starts a new run of the run's workflow id from the point the form
// names (Temporal's reset): a reset type or an event id. Done, it shows the
// new run's page; refused, the run's page with the error, which names the
// valid points.
func (h *Handler) reset(rq *request) (*page, error) {
	form := resetForm{Point: formValue(rq.r, "point"), Reason: formValue(rq.r, "reason")}
	var newRun engine.JobID
	p, err := h.act(rq, ActionReset, func(id engine.JobID) error {
		if err := checkReason(form.Reason); err != nil {
			return err
		}
		if form.Reason == "" {
			return &pageError{status: http.StatusBadRequest, msg: "A reset needs a reason: say why, for whoever reads the history."}
		}
		c := engine.ResetJob{Target: engine.Target{Job: id}, Reason: form.Reason,
			ExcludeSignals: formValue(rq.r, "exclude_signals") != "", ExcludeUpdates: formValue(rq.r, "exclude_updates") != ""}
		if n, err := strconv.ParseUint(form.Point, 10, 64); err == nil && n > 0 {
			c.Seq = n
		} else if c.Type, err = engine.ParseResetType(form.Point); err != nil || c.Type == engine.ResetToEvent {
			return &pageError{status: http.StatusBadRequest,
				msg: fmt.Sprintf("The reset point %q is neither FirstWorkflowTask, LastWorkflowTask nor an event id.", form.Point)}
		}
		res, err := rq.api.Reset(rq.ctx, c)
		if err == nil {
			newRun = res.Job
		}
		return err
	}, signalForm{})
	if p != nil {
		p.Data.(*runData).Reset = form
	}
	var done redirect
	if errors.As(err, &done) && newRun != 0 {
		return nil, redirect{to: fmt.Sprintf("%s?done=%s", runPath(newRun), ActionReset)}
	}
	return p, err
}

func checkReason(reason string) error {
	if n := len([]rune(reason)); n > maxReasonRunes {
		return &pageError{status: http.StatusBadRequest, msg: fmt.Sprintf("The reason has %d characters; at most %d are kept.", n, maxReasonRunes)}
	}
	return nil
}

// act runs one button's command on the run of the path. Done, it sends the
// browser back to the run's page (so that a reload does not send the form
// again); refused, it shows the run's page with the error and what was
// typed.
func (h *Handler) act(rq *request, a Action, do func(engine.JobID) error, typed signalForm) (*page, error) {
	return h.actAs(rq, a, string(a), string(a)+" runs", string(a), do, typed)
}

// actAs is act whose done message (the flash after the redirect) is
// done's, whose refusal for the role says what it may not do ("pause
// runs"), and whose failure what could not be done ("reset the activity").
func (h *Handler) actAs(rq *request, a Action, done, mayNot, what string, do func(engine.JobID) error, typed signalForm) (*page, error) {
	id, err := jobParam(rq.r)
	if err != nil {
		return nil, err
	}
	if !rq.can.Can(a) {
		who := "This token"
		if r := rq.can.Role(); r != "" {
			who = "The " + r + " role"
		}
		err = &pageError{status: http.StatusForbidden, msg: fmt.Sprintf("%s may not %s.", who, mayNot)}
	} else {
		err = do(id)
	}
	if err == nil {
		return nil, redirect{to: fmt.Sprintf("%s?done=%s", runPath(id), done)}
	}
	if errors.Is(err, httpapi.ErrUnauthorized) {
		return nil, err // to the sign-in page
	}
	p, perr := h.run(rq)
	if perr != nil {
		return nil, err // the run itself cannot be shown: the action's error says why
	}
	p.Status, p.Error = statusOf(err), fmt.Sprintf("Could not %s: %v", what, err)
	var pe *pageError
	if errors.As(err, &pe) {
		p.Error = pe.msg
	}
	p.Data.(*runData).Signal = typed
	return p, nil
}

// pause holds the run (the API's pause): a turn that runs finishes, and no
// new one starts until it is unpaused.
func (h *Handler) pause(rq *request) (*page, error) {
	reason := formValue(rq.r, "reason")
	return h.actAs(rq, ActionPause, "pause", "pause runs", "pause", func(id engine.JobID) error {
		if err := checkReason(reason); err != nil {
			return err
		}
		_, err := rq.api.Pause(rq.ctx, engine.Pause{Target: engine.Target{Job: id}, Reason: reason})
		return err
	}, signalForm{})
}

// unpause lets the run go on.
func (h *Handler) unpause(rq *request) (*page, error) {
	return h.actAs(rq, ActionPause, "unpause", "unpause runs", "unpause", func(id engine.JobID) error {
		_, err := rq.api.Unpause(rq.ctx, engine.Unpause{Target: engine.Target{Job: id}})
		return err
	}, signalForm{})
}

// activityAct pauses, unpauses or resets one activity of the run: the
// form's step and op (pause, unpause, reset).
func (h *Handler) activityAct(rq *request) (*page, error) {
	step, op := formValue(rq.r, "step"), formValue(rq.r, "op")
	return h.actAs(rq, ActionActivity, "activity."+op, "pause, unpause or reset activities", op+" the activity", func(id engine.JobID) error {
		if step == "" {
			return &pageError{status: http.StatusBadRequest, msg: "The form names no activity."}
		}
		t, sel := engine.Target{Job: id}, engine.ActivitySelector{ActivityID: step}
		var err error
		switch op {
		case "pause":
			_, err = rq.api.PauseActivity(rq.ctx, engine.PauseActivity{Target: t, ActivitySelector: sel})
		case "unpause":
			_, err = rq.api.UnpauseActivity(rq.ctx, engine.UnpauseActivity{Target: t, ActivitySelector: sel})
		case "reset":
			_, err = rq.api.ResetActivity(rq.ctx, engine.ResetActivity{Target: t, ActivitySelector: sel})
		default:
			return &pageError{status: http.StatusBadRequest, msg: fmt.Sprintf("%q is not an activity operation: want pause, unpause or reset.", op)}
		}
		return err
	}, signalForm{})
}
