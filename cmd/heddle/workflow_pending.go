package main

// This file finds the pending activities "heddle workflow describe" shows,
// as Temporal's describe shows its pendingActivities: each activity of an
// open run that has not ended, with its try, the last try's failure and
// when the next try starts. The engine's step records know the try and who
// runs it; why a try failed and when the next one starts are in the run's
// history (the SDK's activity_attempt_failed records), or, for an activity
// that runs as a job of its own on another queue, in that job.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/heddlewf/heddle/engine"
)

// Bounds of describe's read of a run's history for its activities: the
// failure messages are short, and a run whose history is longer than
// wfPendingMaxEvents shows the activities of its first events only (and
// says so).
const (
	wfPendingMaxEvents       = 20 * engine.MaxPage
	wfPendingMaxPayloadBytes = 2048
	wfFailureWidth           = 300
)

// wfBoundedService is the API client's: the engine's service, and its
// reads that leave large payloads out.
type wfBoundedService interface {
	engine.Service
	engine.BoundedReader
}

// wfPendingActivityDoc is one pending activity of describe's document.
type wfPendingActivityDoc struct {
	// ActivityID is the activity's step in the run.
	ActivityID   string `json:"activity_id"`
	ActivityType string `json:"activity_type,omitempty"`
	// State is the step's state (docs/state-machines.md §3), or, for an
	// activity that runs as a job of its own, that job's status.
	State string `json:"state"`
	// Attempt is the try that runs, or the next one while it waits to be
	// retried; 1 is the first.
	Attempt       uint32 `json:"attempt"`
	LastFailure   string `json:"last_failure,omitempty"`
	NextAttemptAt string `json:"next_attempt_at,omitempty"`
	// LastHeartbeatAt and LastWorker: the try's last heartbeat and who
	// runs it.
	LastHeartbeatAt string `json:"last_heartbeat_at,omitempty"`
	LastWorker      string `json:"last_worker,omitempty"`
	// JobID is the job of an activity that runs on another queue.
	JobID uint64 `json:"job_id,omitempty"`
}

// wfActivityTry is what a run's history tells of one activity.
type wfActivityTry struct {
	step, name        string
	remote, resolved  bool
	failed            uint32 // the newest try that failed
	message           string
	retryAtMS         int64
	elidedRecordBytes int
}

// wfPendingActivities returns the activities of open run j that have not
// ended, in step order; steps are the engine's steps of j. truncated
// reports a history longer than describe reads.
func wfPendingActivities(ctx context.Context, svc wfBoundedService, j *engine.Job, steps []engine.StepInfo) (out []wfPendingActivityDoc, truncated bool, err error) {
	tries, order, truncated, err := wfActivityTries(ctx, svc, j.ID)
	if err != nil {
		return nil, false, err
	}
	byStep := map[string]engine.StepInfo{}
	for _, s := range steps {
		byStep[s.Step] = s
		if _, ok := tries[s.Step]; !ok && s.Activity != "" && !s.State.Terminal() {
			// Running in the worker, known from its heartbeats or its step
			// lease: the history has nothing of it yet.
			tries[s.Step] = &wfActivityTry{step: s.Step, name: s.Activity}
			order = append(order, s.Step)
		}
	}
	for _, step := range order {
		t := tries[step]
		if t.resolved {
			continue
		}
		d := wfPendingActivityDoc{ActivityID: step, ActivityType: t.name, State: "SCHEDULED", Attempt: t.failed + 1,
			LastFailure: wfTruncate(t.message, wfFailureWidth), NextAttemptAt: wfRFC3339(t.retryAtMS)}
		if t.elidedRecordBytes > 0 {
			d.LastFailure = fmt.Sprintf("(the record of try %d is %d bytes: \"heddle workflow history --full\" shows it)", t.failed, t.elidedRecordBytes)
		}
		if t.failed > 0 {
			d.State = engine.StepRetrying.String()
		}
		if s, ok := byStep[step]; ok {
			d.State = s.State.String()
			d.Attempt = max(d.Attempt, s.Attempt)
			d.LastHeartbeatAt, d.LastWorker = wfRFC3339(s.LastHeartbeatMS), s.Worker
		}
		if t.remote {
			if err := wfRemoteActivity(ctx, svc, j, &d); err != nil {
				return nil, false, err
			}
		}
		out = append(out, d)
	}
	return out, truncated, nil
}

// wfActivityTries reads run id's history for its activities, in the order
// they first appear.
func wfActivityTries(ctx context.Context, svc wfBoundedService, id engine.JobID) (map[string]*wfActivityTry, []string, bool, error) {
	tries := map[string]*wfActivityTry{}
	var order []string
	var after uint64
	for read := 0; ; {
		if read >= wfPendingMaxEvents {
			return tries, order, true, nil
		}
		page, err := svc.QueryHistory(ctx, engine.HistoryQuery{Job: id, AfterSeq: after, Limit: engine.MaxPage, MaxPayloadBytes: wfPendingMaxPayloadBytes})
		if err != nil {
			return nil, nil, false, err
		}
		for i := range page.Events {
			ev := &page.Events[i]
			switch ev.Type {
			case engine.EventActivityScheduled, engine.EventActivityAttemptFailed, engine.EventActivityCompleted, engine.EventActivityFailed:
			default:
				continue
			}
			t := tries[ev.Step]
			if t == nil {
				t = &wfActivityTry{step: ev.Step}
				tries[ev.Step] = t
				order = append(order, ev.Step)
			}
			if ev.Name != "" {
				t.name = ev.Name
			}
			switch ev.Type {
			case engine.EventActivityScheduled:
				t.remote = true
			case engine.EventActivityAttemptFailed:
				wfReadAttempt(ev, t)
			default:
				t.resolved = true
			}
		}
		read += len(page.Events)
		if page.Next == 0 {
			return tries, order, false, nil
		}
		after = page.Next
	}
}

// wfReadAttempt reads the SDK's record of a failed try (its JSON: attempt,
// message, retryAtMS) into t.
func wfReadAttempt(ev *engine.Event, t *wfActivityTry) {
	t.failed++
	t.message, t.retryAtMS, t.elidedRecordBytes = "", 0, ev.ElidedPayloadBytes
	var rec struct {
		Attempt   uint32 `json:"attempt"`
		Message   string `json:"message"`
		RetryAtMS int64  `json:"retryAtMS"`
	}
	if ev.ElidedPayloadBytes == 0 && json.Unmarshal(ev.Payload, &rec) == nil {
		t.failed = max(t.failed, rec.Attempt)
		t.message, t.retryAtMS = rec.Message, rec.RetryAtMS
	}
}

// wfRemoteActivity completes d, an activity of run j that runs as a job of
// its own on another queue: its job, status, try and next try, and the
// last failure its own history records. The SDK names that job
// "<workflow id>/<job id>/<step>".
func wfRemoteActivity(ctx context.Context, svc wfBoundedService, j *engine.Job, d *wfPendingActivityDoc) error {
	a, err := svc.Describe(ctx, engine.Target{WorkflowID: j.WorkflowID + "/" + strconv.FormatUint(uint64(j.ID), 10) + "/" + d.ActivityID})
	switch {
	case errors.Is(err, engine.ErrUnknownJob):
		return nil // started under another id, or not yet
	case err != nil:
		return err
	case a.ParentID != j.ID:
		return nil
	}
	d.JobID, d.State = uint64(a.ID), a.Status.String()
	d.Attempt = max(d.Attempt, uint32(min(a.Attempt, 1<<31)))
	if a.Status == engine.StatusRunning {
		d.LastWorker = a.LeaseOwner
	}
	if a.Status == engine.StatusRetrying {
		d.NextAttemptAt = wfRFC3339(a.ReleaseAtMS)
	}
	tries, _, _, err := wfActivityTries(ctx, svc, a.ID)
	if err != nil {
		return err
	}
	for _, t := range tries {
		if t.failed > 0 && t.message != "" {
			d.LastFailure = wfTruncate(t.message, wfFailureWidth)
		}
	}
	return nil
}

// wfPendingLine is one pending activity for people.
func wfPendingLine(d wfPendingActivityDoc) string {
	s := fmt.Sprintf("%s %s, attempt %d", wfCell(d.ActivityType), d.State, d.Attempt)
	if d.JobID != 0 {
		s += fmt.Sprintf(" (job %d)", d.JobID)
	}
	if d.LastWorker != "" {
		s += ", by " + wfCell(d.LastWorker)
	}
	if d.LastHeartbeatAt != "" {
		s += ", heartbeat " + wfRelRFC(d.LastHeartbeatAt)
	}
	if d.NextAttemptAt != "" {
		s += ", next try " + wfRelRFC(d.NextAttemptAt)
	}
	if d.LastFailure != "" {
		s += "; last failure: " + wfCell(d.LastFailure)
	}
	return s
}
