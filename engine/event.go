package engine

import "github.com/heddlewf/heddle/storage"

// Event is one entry of a job's history. Seq numbers start at 1 and have no
// gaps. Fields that do not apply to an event's type are left zero.
type Event struct {
	Seq  uint64    `json:"seq" msgpack:"q"`
	Type EventType `json:"type" msgpack:"t"`
	// AtMS is the command's Now (Unix milliseconds) when the event was appended.
	AtMS int64 `json:"at_ms" msgpack:"at"`
	// Attempt is the attempt that wrote the event, for fenced writes and claims.
	Attempt uint64 `json:"attempt,omitempty" msgpack:"a,omitempty"`
	// Step names the step (activity) an event or effect belongs to.
	Step string `json:"step,omitempty" msgpack:"s,omitempty"`
	// Name is a signal name, timer id, marker name, lease owner, … by type.
	Name string `json:"name,omitempty" msgpack:"n,omitempty"`
	// Payload is opaque to the engine (inputs, results, errors, details).
	Payload []byte `json:"payload,omitempty" msgpack:"p,omitempty"`
	// Reason says why a status event happened (lease_expired, retry, …).
	Reason string `json:"reason,omitempty" msgpack:"r,omitempty"`
	// DelayMS is the retry delay of a job_requeued event.
	DelayMS int64 `json:"delay_ms,omitempty" msgpack:"d,omitempty"`
	// LeaseExpiryMS is the lease of a job_leased event.
	LeaseExpiryMS int64 `json:"lease_expiry_ms,omitempty" msgpack:"l,omitempty"`
	// Commit marks the event CommitStep appended for Step: the step's one
	// committed result.
	Commit bool `json:"commit,omitempty" msgpack:"c,omitempty"`
	// Wait describes what a job_waiting event waits for.
	Wait *WaitSpec `json:"wait,omitempty" msgpack:"w,omitempty"`
	// StepAttempt numbers the try of Step an activity or step event is
	// about, from 1; 0 on other events (and on events written before
	// steps carried it).
	StepAttempt uint32 `json:"step_attempt,omitempty" msgpack:"sa,omitempty"`
	// Resource is the resource of a step_leased (the unit taken) or a
	// step_resource_failed (the one that failed).
	Resource string `json:"resource,omitempty" msgpack:"rs,omitempty"`
	// Decision is the critic's decision on the try a step event ends
	// (accept, retry, switch_resource, replan, needs_user), recorded so
	// that replay never asks the critic again.
	Decision CriticDecision `json:"decision,omitempty" msgpack:"dc,omitempty"`
	// By names who issued the command that wrote the event (Header.By),
	// for the commands people issue; "" when unknown.
	By string `json:"by,omitempty" msgpack:"by,omitempty"`
	// TokenIssued, on a job_leased, says the claim gave the lease a
	// token (see leasetoken.go); a lease without one, claimed before
	// tokens existed, is fenced by its attempt alone.
	TokenIssued bool `json:"token_issued,omitempty" msgpack:"ti,omitempty"`
	// LastResult, on the job_created of a cron run, is the result of the
	// chain's last run that completed (Temporal's last completion result).
	LastResult []byte `json:"last_result,omitempty" msgpack:"lr,omitempty"`
	// ElidedPayloadBytes and ElidedLastResultBytes are set only on an event
	// a history read returned without its Payload or LastResult, because it
	// was longer than the read's HistoryQuery.MaxPayloadBytes: they are the
	// length left out, so a view can show a payload's size without reading
	// it. Never stored.
	ElidedPayloadBytes    int `json:"elided_payload_bytes,omitempty" msgpack:"ep,omitempty"`
	ElidedLastResultBytes int `json:"elided_last_result_bytes,omitempty" msgpack:"el,omitempty"`
}

// WaitSpec is what a waiting job waits for; the first of these to happen
// completes the wait.
type WaitSpec struct {
	// TimerID and TimerAtMS name a durable timer (TimerAtMS 0: no timer).
	TimerID   string `json:"timer_id,omitempty" msgpack:"ti,omitempty"`
	TimerAtMS int64  `json:"timer_at_ms,omitempty" msgpack:"ta,omitempty"`
	// Signals are signal names; any one of them arriving ends the wait.
	Signals []string `json:"signals,omitempty" msgpack:"sg,omitempty"`
	// Steps are step ids whose effect (a remote activity's or a child job's
	// result) ends the wait when it is recorded.
	Steps []string `json:"steps,omitempty" msgpack:"st,omitempty"`
	// Park marks a long wait: the job is Parked rather than Waiting.
	Park bool `json:"park,omitempty" msgpack:"pk,omitempty"`
	// Timers are more durable timers to set and wait on (the SDK's timers;
	// TimerID/TimerAtMS is the one-timer shorthand). Any of them firing ends
	// the wait.
	Timers []Timer `json:"timers,omitempty" msgpack:"tt,omitempty"`
	// AnySignal: any signal ends the wait (workflow code selecting over
	// channels decides itself whether the signal was the one it needs).
	AnySignal bool `json:"any_signal,omitempty" msgpack:"as,omitempty"`
}

func (w *WaitSpec) waitsForSignal(name string) bool {
	return w != nil && (w.AnySignal || contains(w.Signals, name))
}
func (w *WaitSpec) waitsForStep(step string) bool { return w != nil && contains(w.Steps, step) }
func (w *WaitSpec) waitsForTimer(id string) bool {
	if w == nil {
		return false
	}
	if w.TimerAtMS > 0 && w.TimerID == id {
		return true
	}
	for _, t := range w.Timers {
		if t.ID == id {
			return true
		}
	}
	return false
}

// allTimers lists the timers a wait sets, the shorthand one first.
func (w *WaitSpec) allTimers() []Timer {
	var ts []Timer
	if w.TimerAtMS > 0 {
		ts = append(ts, Timer{ID: w.TimerID, FireMS: w.TimerAtMS})
	}
	return append(ts, w.Timers...)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

const eventVersion = 1

// EncodeEvent returns the stored form of e.
func EncodeEvent(e *Event) []byte { return storage.MustEncode(storage.KindEvent, eventVersion, e) }

// DecodeEvent decodes a stored event; failures are *storage.CorruptError.
func DecodeEvent(b []byte) (*Event, error) {
	e := new(Event)
	if _, err := storage.Decode(b, storage.KindEvent, eventVersion, e); err != nil {
		return nil, err
	}
	return e, nil
}
