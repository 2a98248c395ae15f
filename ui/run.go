package ui

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/heddlewf/heddle/engine"
)

// The history a run page reads: all of it up to maxHistory events (the
// pending steps are derived from it), shown historyWindow events at a time.
const (
	maxHistory    = 20 * engine.MaxPage
	historyWindow = engine.MaxPage
)

// runData is the run page's.
type runData struct {
	Job  *engine.Job
	Open bool
	// Input and Outcome are the start's payload and a closed run's result
	// or failure (OutcomeLabel says which).
	Input        *payloadView
	Outcome      *payloadView
	OutcomeLabel string
	Parent       *engine.Job
	// Task is the workflow task in progress, while the run is Running.
	Task *taskView
	// Waits says what a Waiting or Parked run waits for.
	Waits []string
	// Pending are the steps not yet resolved; Linked the steps that ran
	// or run as jobs of their own (children, activities on other queues).
	Pending []*stepView
	Linked  []*stepView
	// StepStates: the API told the engine's state of the run's steps,
	// which the pending steps show beside what the history says.
	StepStates bool
	// Events is the window of the history shown, from seq WindowFrom.
	Events []eventView
	// Older and Newer link the windows before and after this one.
	Older, Newer string
	// Truncated: the history is longer than a page reads.
	Truncated bool
	Signal    signalForm
}

// taskView is the workflow task a worker holds.
type taskView struct {
	Worker        string
	Attempt       uint64
	LeaseExpiryMS int64
	// LastSeenMS is the run's last write: its claim, a heartbeat that
	// renewed the lease, or an event.
	LastSeenMS int64
}

// signalForm keeps what was typed into the signal form when it failed.
type signalForm struct{ Name, Value string }

// The flash messages of the actions, by the done= they redirect with.
var doneMessages = map[string]string{
	"signal":    "Signal sent.",
	"cancel":    "Cancel requested: the workflow's code decides how the run ends.",
	"terminate": "Run terminated.",
}

func (h *Handler) run(rq *request) (*page, error) {
	id, err := jobParam(rq.r)
	if err != nil {
		return nil, err
	}
	j, err := rq.api.Describe(rq.ctx, engine.Target{Job: id})
	if err != nil {
		if errors.Is(err, engine.ErrUnknownJob) {
			return nil, &pageError{status: http.StatusNotFound, msg: fmt.Sprintf("There is no run with job id %d.", id)}
		}
		return nil, err
	}
	history, truncated, err := readHistory(rq, j.ID)
	if err != nil {
		return nil, err
	}
	d := &runData{Job: j, Open: !j.Status.Terminal(), Truncated: truncated}
	infos, err := readStepInfos(rq.ctx, rq.api, j.ID)
	if err != nil {
		return nil, err
	}
	d.StepStates = infos != nil
	steps := mergeStepInfos(deriveSteps(history, j), infos)
	if err := linkSteps(rq.ctx, rq.api, j, steps); err != nil {
		return nil, err
	}
	d.Pending, d.Linked = pendingSteps(steps), remoteSteps(steps)
	if j.ParentID != 0 {
		if d.Parent, err = rq.api.Describe(rq.ctx, engine.Target{Job: j.ParentID}); err != nil && !errors.Is(err, engine.ErrUnknownJob) {
			return nil, err
		}
	}
	if j.Status == engine.StatusRunning {
		d.Task = &taskView{Worker: j.LeaseOwner, Attempt: j.Attempt, LeaseExpiryMS: j.LeaseExpiryMS, LastSeenMS: j.UpdatedMS}
	}
	if j.Status == engine.StatusWaiting || j.Status == engine.StatusParked {
		d.Waits = describeWait(j.Wait, j.Timers)
	}
	d.Input, d.Outcome, d.OutcomeLabel = startAndEnd(history, j)
	for _, s := range d.Pending {
		if s.Engine != nil && len(s.Engine.Question) > 0 {
			s.Question = viewInline(s.Engine.Question, stepQuestionPath(j.ID, s.Step))
		}
	}
	if err := d.window(rq, history); err != nil {
		return nil, err
	}
	title := j.WorkflowID
	if title == "" {
		title = fmt.Sprintf("job %d", j.ID)
	}
	p := &page{Template: "run.html", Title: title, Nav: "workflows", Data: d}
	p.Flash = doneMessages[rq.r.URL.Query().Get("done")]
	return p, nil
}

// jobParam reads the job id of the path.
func jobParam(r *http.Request) (engine.JobID, error) {
	s := r.PathValue("job")
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n == 0 {
		return 0, &pageError{status: http.StatusNotFound, msg: fmt.Sprintf("%q is not a job id: runs are named by a positive number.", s)}
	}
	return engine.JobID(n), nil
}

// readHistory reads a run's history, up to maxHistory events.
func readHistory(rq *request, id engine.JobID) ([]engine.Event, bool, error) {
	var out []engine.Event
	var after uint64
	for len(out) < maxHistory {
		page, err := rq.api.History(rq.ctx, id, after, engine.MaxPage)
		if err != nil {
			return nil, false, err
		}
		out = append(out, page.Events...)
		if page.Next == 0 {
			return out, false, nil
		}
		after = page.Next
	}
	return out, true, nil
}

// window picks the events the page shows: historyWindow of them after the
// after= parameter, the newest window by default.
func (d *runData) window(rq *request, history []engine.Event) error {
	var after uint64
	if s := rq.r.URL.Query().Get("after"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return &pageError{status: http.StatusBadRequest, msg: fmt.Sprintf("after=%q is not an event seq", s)}
		}
		after = n
	} else if len(history) > historyWindow {
		after = history[len(history)-historyWindow].Seq - 1
	}
	var first int64
	if len(history) > 0 {
		first = history[0].AtMS
	}
	start := len(history)
	for i, ev := range history {
		if ev.Seq > after {
			start = i
			break
		}
	}
	end := min(start+historyWindow, len(history))
	for _, ev := range history[start:end] {
		d.Events = append(d.Events, viewEvent(d.Job.ID, ev, first))
	}
	base := runPath(d.Job.ID)
	if start > 0 {
		d.Older = fmt.Sprintf("%s?after=%d", base, history[max(0, start-historyWindow)].Seq-1)
	}
	if end < len(history) {
		d.Newer = fmt.Sprintf("%s?after=%d", base, history[end-1].Seq)
	}
	return nil
}

// startAndEnd returns a run's input (its creation event's payload) and,
// when it is closed, its outcome: the payload of its last status event.
func startAndEnd(history []engine.Event, j *engine.Job) (input, outcome *payloadView, label string) {
	for _, ev := range history {
		if ev.Type == engine.EventJobCreated || ev.Type == engine.EventJobDrafted {
			input = viewPayload(ev.Payload, eventPayloadPath(j.ID, ev.Seq))
			break
		}
	}
	if !j.Status.Terminal() {
		return input, nil, ""
	}
	for i := len(history) - 1; i >= 0; i-- {
		if engine.IsStatusEvent(history[i].Type) {
			label = "Failure"
			if j.Status == engine.StatusCompleted {
				label = "Result"
			}
			return input, viewPayload(history[i].Payload, eventPayloadPath(j.ID, history[i].Seq)), label
		}
	}
	return input, nil, ""
}

// describeWait says in words what a waiting run waits for.
func describeWait(w *engine.WaitSpec, timers []engine.Timer) []string {
	if w == nil {
		return nil
	}
	var out []string
	if w.AnySignal {
		out = append(out, "any signal")
	}
	if len(w.Signals) > 0 {
		out = append(out, "signal "+strings.Join(w.Signals, ", "))
	}
	for _, t := range timers {
		out = append(out, fmt.Sprintf("timer %s at %s", t.ID, fmtTime(t.FireMS)))
	}
	if len(w.Steps) > 0 {
		out = append(out, "the result of step "+strings.Join(w.Steps, ", "))
	}
	if w.Park {
		out = append(out, "(a long wait: parked)")
	}
	return out
}
