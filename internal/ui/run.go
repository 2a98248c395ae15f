package ui

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/replay"
)

// What a run page reads. A run holds any number of events, each with a
// payload of up to the engine's payload limit, and the page refetches
// itself every two seconds: so it reads a window of the history to show,
// and the rest only for what it needs (the steps, where the input and the
// outcome are), asking the API to leave out the payloads longer than it
// shows. One view thus reads at most maxHistory events with payloads of
// at most maxStepPayloadBytes, historyWindow events with payloads of at
// most maxEventPayloadBytes, two of at most maxPanelPayloadBytes and the
// questions of the steps up to maxQuestionBytes, whatever the run holds.
const (
	// maxHistory bounds the events read to find the run's steps.
	maxHistory = 20 * engine.MaxPage
	// historyWindow is how many events the timeline shows at a time.
	historyWindow = 100
	// maxStepPayloadBytes: the payloads read with the events the steps
	// are found from; a failed try's record says why it failed.
	maxStepPayloadBytes = 512
	// maxEventPayloadBytes: the payloads the timeline shows.
	maxEventPayloadBytes = 16 << 10
	// maxPanelPayloadBytes: the input and the outcome, shown as the
	// panels show a payload (payloadview's default text bound).
	maxPanelPayloadBytes = 64 << 10
	// maxQuestionBytes: the questions of the steps waiting for a person.
	maxQuestionBytes = 16 << 10
	// maxResetPointsOffered: the newest reset points the reset form lists
	// by event id (any other is typed in).
	maxResetPointsOffered = 10
	// maxRunsShown: the runs of the workflow id the page lists.
	maxRunsShown = 10
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
	// Runs are the newest runs of the run's workflow id (this one among
	// them), up to maxRunsShown; MoreRuns says more exist, which RunsLink
	// lists.
	Runs     []*engine.Job
	MoreRuns bool
	RunsLink string
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
	// Events is the window of the history shown, the events of seqs
	// FirstShown to LastShown.
	Events                []eventView
	FirstShown, LastShown uint64
	// Older and Newer link the windows before and after this one.
	Older, Newer string
	// Truncated: the history is longer than a page reads to find the
	// steps (maxHistory events): the steps shown are those of its start.
	Truncated  bool
	MaxHistory int
	Signal     signalForm
	// ResetPoints are the turn boundaries the reset form offers by event
	// id (those of the events read), newest first; Reset is what was typed
	// into it when it failed.
	ResetPoints []uint64
	Reset       resetForm
	// startMS is when the history begins, which the timeline's offsets
	// count from: the run's creation, or for a run a reset made, the time
	// of the first event it copied.
	startMS int64
	// names maps the run's steps to their activities' names.
	names map[string]string
	// Answer is what was typed into a step's answer form when it failed.
	Answer answerForm
	// Query is the query form's: what was asked, and the answer or why
	// there is none, once asked (the page then does not refresh itself).
	Query queryForm
	// Compact: the history is shown compact (Groups), with an activity's
	// tries as one entry and no lease or wait events; else in full
	// (Events). CompactURL and FullURL switch between them.
	Compact             bool
	Groups              []historyGroup
	GroupsCut           int
	CompactURL, FullURL string
	// OutcomeFailure is a failed run's failure as text, its stack trace
	// as lines, when the outcome is one of the SDK's failures.
	OutcomeFailure *failureView
	// Attempt is the run's try under its workflow retry policy, from 1, as
	// Temporal counts a workflow's attempt (and heddle workflow describe's
	// "Run attempt"). Job.Attempt counts leases (each time a worker took
	// the run), which is not that.
	Attempt int32
	// Queued says why a Queued run has not started (nil: it is not
	// Queued, or the API cannot say); QueueLink is its queue's page.
	Queued    *engine.QueuedReason
	QueueLink string
}

// resetForm keeps what was typed into the reset form when it failed.
type resetForm struct{ Point, Reason string }

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
	"signal":           "Signal sent.",
	"cancel":           "Cancel requested: the workflow's code decides how the run ends.",
	"terminate":        "Run terminated.",
	"reset":            "Reset: this run goes on from the point of the run it replaces.",
	"pause":            "Run paused: a turn that runs finishes, and no new one starts until it is unpaused.",
	"unpause":          "Run unpaused.",
	"activity.pause":   "Activity paused: no try of it starts until it is unpaused.",
	"activity.unpause": "Activity unpaused.",
	"activity.reset":   "Activity reset: its attempts start from 1 again, its next try at once.",
	"answer":           "Answer sent: the step's activity runs again with it.",
	// The batch operations' (batches.go).
	"batch-started": "Batch started: the server acts on the matching runs at its rate; this page follows its progress.",
	"batch-stopped": "Batch stopped: it acts on no more runs; those it acted on stay so.",
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
	compact := rq.r.URL.Query().Get("view") == "compact"
	sc, err := scanHistory(rq, j, compact)
	if err != nil {
		return nil, err
	}
	d := &runData{Job: j, Open: !j.Status.Terminal(), Truncated: sc.truncated, MaxHistory: maxHistory, startMS: j.CreatedMS,
		Compact: compact, CompactURL: runPath(j.ID) + "?view=compact", FullURL: runPath(j.ID)}
	if compact {
		d.Groups, d.GroupsCut = sc.compact.result()
	}
	if sc.firstMS > 0 && sc.firstMS < d.startMS {
		d.startMS = sc.firstMS
	}
	for i := range d.Groups {
		d.Groups[i].OffsetMS = d.Groups[i].AtMS - d.startMS
	}
	d.Attempt = max(j.RunAttempt, 1)
	for i := len(sc.points) - 1; i >= 0 && len(d.ResetPoints) < maxResetPointsOffered; i-- {
		d.ResetPoints = append(d.ResetPoints, sc.points[i])
	}
	infos, err := readStepInfos(rq.ctx, rq.api, j.ID)
	if err != nil {
		return nil, err
	}
	d.StepStates = infos != nil
	steps := mergeStepInfos(sc.steps.steps(j), infos)
	if err := linkSteps(rq.ctx, rq.api, j, steps); err != nil {
		return nil, err
	}
	d.Pending, d.Linked = pendingSteps(steps), remoteSteps(steps)
	if j.ParentID != 0 {
		if d.Parent, err = rq.api.Describe(rq.ctx, engine.Target{Job: j.ParentID}); err != nil && !errors.Is(err, engine.ErrUnknownJob) {
			return nil, err
		}
	}
	runs, err := rq.api.List(rq.ctx, engine.ListQuery{WorkflowID: j.WorkflowID, Limit: maxRunsShown})
	if err != nil {
		return nil, err
	}
	d.Runs, d.MoreRuns, d.RunsLink = runs.Jobs, runs.NextPageToken != "", runsOfPath(j.WorkflowID)
	if j.Status == engine.StatusRunning {
		d.Task = &taskView{Worker: j.LeaseOwner, Attempt: j.Attempt, LeaseExpiryMS: j.LeaseExpiryMS, LastSeenMS: j.UpdatedMS}
	}
	d.names = stepNames(steps)
	if j.Status == engine.StatusWaiting || j.Status == engine.StatusParked {
		d.Waits = describeWait(j.Wait, j.Timers, d.names)
	}
	d.QueueLink = taskQueueLink(j.Queue)
	if j.Status == engine.StatusQueued {
		if d.Queued, err = queuedReason(rq.ctx, rq.api, j.ID); err != nil {
			return nil, err
		}
	}
	if d.Input, d.Outcome, d.OutcomeLabel, d.OutcomeFailure, err = startAndEnd(rq, j, sc); err != nil {
		return nil, err
	}
	for _, s := range d.Pending {
		switch {
		case s.Engine == nil:
		case s.Engine.ElidedQuestionBytes > 0:
			s.Question = elidedPayload(s.Engine.ElidedQuestionBytes, maxQuestionBytes, stepQuestionPath(j.ID, s.Step))
		case len(s.Engine.Question) > 0:
			s.Question = viewInline(s.Engine.Question, stepQuestionPath(j.ID, s.Step))
		}
	}
	if !compact {
		if err := d.window(rq); err != nil {
			return nil, err
		}
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

// historyScan is what a run page learns from reading the run's history
// (up to maxHistory events, without their large payloads) once through,
// keeping none of it.
type historyScan struct {
	steps *stepDeriver
	// created is the seq of the event that created the run, whose payload
	// is its input; status the seq of the newest status event (0: none).
	created, status uint64
	truncated       bool
	// points are the run's reset points (engine.IsResetPoint), oldest
	// first; firstMS is the time of its first event.
	points  []uint64
	firstMS int64
	// compact, when asked for, builds the compact history.
	compact *compactBuilder
}

// scanHistory reads run j's history for its steps, its input and its
// outcome, and with compact its compact history, a page of events at a
// time.
func scanHistory(rq *request, j *engine.Job, compact bool) (*historyScan, error) {
	sc := &historyScan{steps: newStepDeriver()}
	if compact {
		sc.compact = newCompactBuilder()
	}
	var after uint64
	for read := 0; ; {
		if read >= maxHistory {
			sc.truncated = true
			return sc, nil
		}
		page, err := rq.api.QueryHistory(rq.ctx, engine.HistoryQuery{Job: j.ID, AfterSeq: after, Limit: engine.MaxPage, MaxPayloadBytes: maxStepPayloadBytes})
		if err != nil {
			return nil, err
		}
		for i := range page.Events {
			ev := &page.Events[i]
			sc.steps.add(ev)
			if sc.compact != nil {
				sc.compact.add(ev)
			}
			if sc.created == 0 && (ev.Type == engine.EventJobCreated || ev.Type == engine.EventJobDrafted) {
				sc.created = ev.Seq
			}
			if engine.IsStatusEvent(ev.Type) {
				sc.status = ev.Seq
			}
			if engine.IsResetPoint(ev.Type) {
				sc.points = append(sc.points, ev.Seq)
			}
			if ev.Seq == 1 {
				sc.firstMS = ev.AtMS
			}
		}
		read += len(page.Events)
		if page.Next == 0 {
			return sc, nil
		}
		after = page.Next
	}
}

// readEvent reads event seq of run job, its payload when that is at most
// maxPayloadBytes long; nil when the run has no such event.
func readEvent(rq *request, job engine.JobID, seq uint64, maxPayloadBytes int) (*engine.Event, error) {
	if seq == 0 {
		return nil, nil
	}
	page, err := rq.api.QueryHistory(rq.ctx, engine.HistoryQuery{Job: job, AfterSeq: seq - 1, Limit: 1, MaxPayloadBytes: maxPayloadBytes})
	if err != nil || len(page.Events) == 0 || page.Events[0].Seq != seq {
		return nil, err
	}
	return &page.Events[0], nil
}

// window reads the events the page shows: historyWindow of them after the
// after= parameter, the newest by default.
func (d *runData) window(rq *request) error {
	last := d.Job.LastSeq
	var after uint64
	if s := rq.r.URL.Query().Get("after"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return &pageError{status: http.StatusBadRequest, msg: fmt.Sprintf("after=%q is not an event seq", s)}
		}
		after = n
	} else if last > historyWindow {
		after = last - historyWindow
	}
	page, err := rq.api.QueryHistory(rq.ctx, engine.HistoryQuery{Job: d.Job.ID, AfterSeq: after, Limit: historyWindow, MaxPayloadBytes: maxEventPayloadBytes})
	if err != nil {
		return err
	}
	for _, ev := range page.Events {
		d.Events = append(d.Events, viewEvent(d.Job.ID, ev, d.startMS, d.names))
	}
	if n := len(page.Events); n > 0 {
		d.FirstShown, d.LastShown = page.Events[0].Seq, page.Events[n-1].Seq
	}
	base := runPath(d.Job.ID)
	switch {
	case len(page.Events) > 0 && page.Events[0].Seq > 1:
		d.Older = fmt.Sprintf("%s?after=%d", base, (page.Events[0].Seq-1)-min(page.Events[0].Seq-1, historyWindow))
	case len(page.Events) == 0 && after > 0 && last > 0:
		d.Older = base // past the end: back to the newest events
	}
	if page.Next != 0 {
		d.Newer = fmt.Sprintf("%s?after=%d", base, page.Next)
	}
	return nil
}

// startAndEnd returns a run's input (its creation event's payload) and,
// when it is closed, its outcome: the payload of its last status event.
func startAndEnd(rq *request, j *engine.Job, sc *historyScan) (input, outcome *payloadView, label string, failure *failureView, err error) {
	created, err := readEvent(rq, j.ID, sc.created, maxPanelPayloadBytes)
	if err != nil {
		return nil, nil, "", nil, err
	}
	if created != nil {
		input = viewEventPayload(created, maxPanelPayloadBytes, pageLimits, eventPayloadPath(j.ID, created.Seq))
	}
	if !j.Status.Terminal() {
		return input, nil, "", nil, nil
	}
	var end *engine.Event
	if sc.truncated {
		// The status event is past what the scan read: it is most likely
		// the last.
		if end, err = readEvent(rq, j.ID, j.LastSeq, maxPanelPayloadBytes); err != nil {
			return nil, nil, "", nil, err
		}
		if end != nil && !engine.IsStatusEvent(end.Type) {
			end = nil
		}
	}
	if end == nil {
		if end, err = readEvent(rq, j.ID, sc.status, maxPanelPayloadBytes); err != nil || end == nil {
			return input, nil, "", nil, err
		}
	}
	label = "Failure"
	if j.Status == engine.StatusCompleted {
		label = "Result"
	}
	if label == "Failure" && end.ElidedPayloadBytes == 0 {
		failure = viewFailure(end.Payload)
	}
	return input, viewEventPayload(end, maxPanelPayloadBytes, pageLimits, eventPayloadPath(j.ID, end.Seq)), label, failure, nil
}

// describeWait says in words what a waiting run waits for; names gives the
// activity of a step (nil: none known), so that a retry's timer reads as
// the retry it is. "any signal" is said only when the wait names nothing
// else: every wait of the SDK's lets any signal wake the run, and names
// the signals its code reads.
func describeWait(w *engine.WaitSpec, timers []engine.Timer, names map[string]string) []string {
	if w == nil {
		return nil
	}
	var out []string
	var signals []string
	updates := false
	for _, s := range w.Signals {
		switch s {
		case engine.UpdateSignalName:
			updates = true
		case engine.AsyncCompletionSignal:
			out = append(out, "its completion by a client (an asynchronous activity)")
		default:
			signals = append(signals, s)
		}
	}
	switch len(signals) {
	case 0:
	case 1:
		out = append(out, "signal "+signals[0])
	default:
		out = append(out, "signals "+strings.Join(signals, ", "))
	}
	if updates {
		out = append(out, "an update")
	}
	for _, t := range timers {
		out = append(out, fmt.Sprintf("%s at %s", timerLabel(t.ID, names), fmtTime(t.FireMS)))
	}
	if len(w.Steps) > 0 {
		steps := make([]string, len(w.Steps))
		for i, st := range w.Steps {
			steps[i] = st
			if name := names[st]; name != "" {
				steps[i] += " (" + name + ")"
			}
		}
		out = append(out, "the result of step "+strings.Join(steps, ", "))
	}
	if len(out) == 0 && w.AnySignal {
		out = append(out, "any signal")
	}
	if w.Park {
		out = append(out, "(a long wait: parked)")
	}
	return out
}

// timerLabel names a timer for people: "the retry of activity Charge (try
// 3)" for the SDK's retry timer "retry:<step>:<failed try>", "timer of step
// 4" for a workflow timer; names maps steps to their activities.
func timerLabel(id string, names map[string]string) string {
	if rest, ok := strings.CutPrefix(id, replay.RetryTimerPrefix); ok {
		step, tried, ok := strings.Cut(rest, ":")
		if n, err := strconv.Atoi(tried); ok && err == nil {
			what := "step " + step
			if name := names[step]; name != "" {
				what = "activity " + name
			}
			return fmt.Sprintf("retry of %s, try %d,", what, n+1)
		}
	}
	if _, err := strconv.ParseUint(id, 10, 64); err == nil {
		return "timer of step " + id
	}
	return "timer " + id
}

// stepNames maps the steps of a run to their activities' (or children's)
// names.
func stepNames(steps []*stepView) map[string]string {
	names := map[string]string{}
	for _, s := range steps {
		if s.Name != "" {
			names[s.Step] = s.Name
		}
	}
	return names
}
