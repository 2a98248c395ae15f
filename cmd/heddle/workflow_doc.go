package main

// This file defines the JSON documents "heddle workflow -o json" prints. They
// are the CLI's contract with scripts, so they are their own types with
// snake_case names that stay put, not the engine's structs (whose Go field
// names and msgpack tags are internal and may change), and times are RFC
// 3339 UTC strings, statuses their names.

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/internal/sdkhook"
)

// wfJobDoc is one run: what describe prints, list prints for each run and
// start --wait prints as the outcome.
type wfJobDoc struct {
	WorkflowID      string `json:"workflow_id"`
	JobID           uint64 `json:"job_id"`
	Type            string `json:"type"`
	Queue           string `json:"queue"`
	Status          string `json:"status"`
	ExecutionStatus string `json:"execution_status"`
	Attempt         uint64 `json:"attempt"`
	RunAttempt      int32  `json:"run_attempt,omitempty"`
	Retries         uint32 `json:"retries,omitempty"`
	CreatedAt       string `json:"created_at"`
	UpdatedAt       string `json:"updated_at"`
	ClosedAt        string `json:"closed_at,omitempty"`
	Deadline        string `json:"deadline,omitempty"`
	RetryAt         string `json:"retry_at,omitempty"`
	LeaseOwner      string `json:"lease_owner,omitempty"`
	LeaseExpiresAt  string `json:"lease_expires_at,omitempty"`
	PrevRunID       uint64 `json:"prev_run_id,omitempty"`
	NextRunID       uint64 `json:"next_run_id,omitempty"`
	NextRunReason   string `json:"next_run_reason,omitempty"`
	ParentJobID     uint64 `json:"parent_job_id,omitempty"`
	ParentStep      string `json:"parent_step,omitempty"`
	CancelRequested bool   `json:"cancel_requested,omitempty"`
	// Paused is set while the run is paused: by an operator (Pause), or
	// for an activity task, by its run's pause (held_by_parent).
	Paused        *wfPauseDoc     `json:"paused,omitempty"`
	WaitingFor    *wfWaitDoc      `json:"waiting_for,omitempty"`
	Timers        []wfTimerDoc    `json:"timers,omitempty"`
	HistoryLength uint64          `json:"history_length"`
	CloseEvent    string          `json:"close_event,omitempty"`
	CloseReason   string          `json:"close_reason,omitempty"`
	Result        json.RawMessage `json:"result,omitempty"`
	ResultBase64  []byte          `json:"result_base64,omitempty"`
	Failure       *wfFailureDoc   `json:"failure,omitempty"`
	// Steps are the steps of an open run that have not ended (describe
	// only): who runs each, its state and last heartbeat.
	Steps []stepDoc `json:"steps,omitempty"`
	// PendingActivities are the activities of an open run that have not
	// ended (describe only), as Temporal's describe lists them: the try,
	// the last try's failure, when the next try starts. PendingTruncated:
	// the run's history is longer than describe reads, so activities of
	// its later events may be missing.
	PendingActivities []wfPendingActivityDoc `json:"pending_activities,omitempty"`
	PendingTruncated  bool                   `json:"pending_activities_truncated,omitempty"`
	// ResetNewRunID is the run a reset started in this run's place;
	// ResetBaseRunID and ResetEventID the run and the point this run was
	// reset from.
	ResetNewRunID  uint64 `json:"reset_new_run_id,omitempty"`
	ResetBaseRunID uint64 `json:"reset_base_run_id,omitempty"`
	ResetEventID   uint64 `json:"reset_event_id,omitempty"`
	// ScheduleID names the schedule that started the run (Temporal's
	// TemporalScheduledById search attribute).
	ScheduleID string `json:"schedule_id,omitempty"`
	// QueuedReason says why a Queued run has not been claimed (describe
	// only).
	QueuedReason *wfQueuedReasonDoc `json:"queued_reason,omitempty"`
}

// wfQueuedReasonDoc is engine.QueuedReason: its code (no_poller,
// no_poller_for_type, no_free_slot, deferred, dispatching) and what it
// says.
type wfQueuedReasonDoc struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// wfPauseDoc is a pause: since when, by whom and why.
type wfPauseDoc struct {
	At           string `json:"at,omitempty"`
	By           string `json:"by,omitempty"`
	Reason       string `json:"reason,omitempty"`
	HeldByParent bool   `json:"held_by_parent,omitempty"`
}

// wfPauseOf is the pause of an open run j, or nil.
func wfPauseOf(j *engine.Job) *wfPauseDoc {
	if !j.Paused() || j.Status.Terminal() {
		return nil
	}
	d := &wfPauseDoc{HeldByParent: j.HeldByParent}
	if p := j.Pause; p != nil {
		d.At, d.By, d.Reason = wfRFC3339(p.AtMS), p.By, p.Reason
	}
	return d
}

// wfWaitDoc is what a waiting run waits for; the first to happen wakes it.
type wfWaitDoc struct {
	Signals   []string     `json:"signals,omitempty"`
	AnySignal bool         `json:"any_signal,omitempty"`
	Steps     []string     `json:"steps,omitempty"`
	Timers    []wfTimerDoc `json:"timers,omitempty"`
	Parked    bool         `json:"parked,omitempty"`
}

type wfTimerDoc struct {
	ID     string `json:"id"`
	FireAt string `json:"fire_at"`
}

// wfFailureDoc is a failed run's error, as the SDK records it.
type wfFailureDoc struct {
	Type         string `json:"type,omitempty"`
	Message      string `json:"message"`
	NonRetryable bool   `json:"non_retryable,omitempty"`
}

// wfEventDoc is one history event. A payload that is JSON is embedded as
// JSON; any other payload is in payload_base64.
type wfEventDoc struct {
	Seq            uint64          `json:"seq"`
	Type           string          `json:"type"`
	At             string          `json:"at"`
	Attempt        uint64          `json:"attempt,omitempty"`
	Step           string          `json:"step,omitempty"`
	Name           string          `json:"name,omitempty"`
	Payload        json.RawMessage `json:"payload,omitempty"`
	PayloadBase64  []byte          `json:"payload_base64,omitempty"`
	Reason         string          `json:"reason,omitempty"`
	DelayMS        int64           `json:"delay_ms,omitempty"`
	LeaseExpiresAt string          `json:"lease_expires_at,omitempty"`
	Commit         bool            `json:"commit,omitempty"`
	Wait           *wfWaitDoc      `json:"wait,omitempty"`
	// BaseRunID and ResetEventID (a workflow_reset) name the run and the
	// point the run was reset from; NewRunID (the job_terminated of a run
	// a reset replaced) the run that replaced it.
	BaseRunID    uint64 `json:"base_run_id,omitempty"`
	NewRunID     uint64 `json:"new_run_id,omitempty"`
	ResetEventID uint64 `json:"reset_event_id,omitempty"`
}

// wfJobOf builds the document of j; closing, when j is terminal, is its last
// event, which carries the result or the failure.
func wfJobOf(j *engine.Job, closing *engine.Event) wfJobDoc {
	d := wfJobDoc{
		WorkflowID: j.WorkflowID, JobID: uint64(j.ID), Type: j.Type, Queue: j.Queue, Status: j.Status.String(),
		ExecutionStatus: j.ExecutionStatus(), PrevRunID: uint64(j.PrevRunID), NextRunID: uint64(j.NextRunID), NextRunReason: j.NextRunReason,
		Attempt: j.Attempt, RunAttempt: j.RunAttempt, Retries: j.Retries,
		CreatedAt: wfRFC3339(j.CreatedMS), UpdatedAt: wfRFC3339(j.UpdatedMS), ClosedAt: wfRFC3339(j.ClosedMS),
		Deadline: wfRFC3339(j.DeadlineMS), RetryAt: wfRFC3339(j.ReleaseAtMS),
		ParentJobID: uint64(j.ParentID), ParentStep: j.ParentStep, CancelRequested: j.CancelRequested,
		WaitingFor: wfWaitOf(j.Wait), Timers: wfTimersOf(j.Timers), HistoryLength: j.LastSeq, Paused: wfPauseOf(j),
		ResetNewRunID: uint64(j.ResetNewRunID), ResetBaseRunID: uint64(j.ResetBaseRunID), ResetEventID: j.ResetEventID,
		ScheduleID: j.ScheduleID,
	}
	if j.Status == engine.StatusRunning {
		d.LeaseOwner, d.LeaseExpiresAt = j.LeaseOwner, wfRFC3339(j.LeaseExpiryMS)
	}
	if closing != nil && j.Status.Terminal() {
		d.CloseEvent, d.CloseReason = string(closing.Type), closing.Reason
		switch j.Status {
		case engine.StatusCompleted:
			d.Result = wfResultJSON(closing.Payload)
			if d.Result == nil && len(closing.Payload) > 0 {
				d.ResultBase64 = closing.Payload
			}
		case engine.StatusFailed:
			d.Failure = wfFailureOf(closing.Payload)
		}
	}
	return d
}

// wfFailureOf decodes a failure payload the way the SDK does, so a payload
// that is not the SDK's JSON object still shows, as its text.
func wfFailureOf(p []byte) *wfFailureDoc {
	if len(p) == 0 {
		return &wfFailureDoc{Message: "(no failure recorded)"}
	}
	// The payload's first node is what the workflow returned; its message
	// is the whole text of the error and its causes.
	f, err := engine.DecodeFailure(p)
	if err != nil {
		return &wfFailureDoc{Message: string(p)}
	}
	msg := f.Message
	if cause := errors.Unwrap(sdkhook.DecodeFailure(p)); cause != nil && !strings.Contains(msg, cause.Error()) {
		msg += ": " + cause.Error()
	}
	return &wfFailureDoc{Type: f.Type, Message: msg, NonRetryable: f.NonRetryable}
}

func wfWaitOf(w *engine.WaitSpec) *wfWaitDoc {
	if w == nil {
		return nil
	}
	d := &wfWaitDoc{Signals: w.Signals, AnySignal: w.AnySignal, Steps: w.Steps, Parked: w.Park}
	if w.TimerAtMS > 0 {
		d.Timers = append(d.Timers, wfTimerDoc{ID: w.TimerID, FireAt: wfRFC3339(w.TimerAtMS)})
	}
	d.Timers = append(d.Timers, wfTimersOf(w.Timers)...)
	return d
}

func wfTimersOf(ts []engine.Timer) []wfTimerDoc {
	var out []wfTimerDoc
	for _, t := range ts {
		out = append(out, wfTimerDoc{ID: t.ID, FireAt: wfRFC3339(t.FireMS)})
	}
	return out
}

func wfEventOf(ev engine.Event) wfEventDoc {
	d := wfEventDoc{Seq: ev.Seq, Type: string(ev.Type), At: wfRFC3339(ev.AtMS), Attempt: ev.Attempt, Step: ev.Step,
		Name: ev.Name, Reason: ev.Reason, DelayMS: ev.DelayMS, LeaseExpiresAt: wfRFC3339(ev.LeaseExpiryMS),
		Commit: ev.Commit, Wait: wfWaitOf(ev.Wait), BaseRunID: uint64(ev.BaseRunID), NewRunID: uint64(ev.NewRunID), ResetEventID: ev.ResetEventID}
	d.Payload, d.PayloadBase64 = wfPayloadFields(ev.Payload)
	return d
}
