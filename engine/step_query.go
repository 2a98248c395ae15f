package engine

import (
	"encoding/json"
	"sort"
	"strconv"

	"github.com/heddlewf/heddle/internal/payloadview"
)

// StepInfo is what describe, `heddle step list` and the HTTP API show of
// one step of a job: its state projected from the history, and from its
// step record (when it has one) who holds it and what it waits for.
type StepInfo struct {
	Step     string    `json:"step" msgpack:"s"`
	Activity string    `json:"activity,omitempty" msgpack:"n,omitempty"`
	State    StepState `json:"state" msgpack:"st"`
	// Attempt is the step's newest try.
	Attempt uint32 `json:"attempt,omitempty" msgpack:"a,omitempty"`
	// Resource is the resource whose unit the step holds.
	Resource string `json:"resource,omitempty" msgpack:"r,omitempty"`
	// Worker is who runs the step: the owner of its step lease, or of the
	// job's lease for a step that lease covers.
	Worker          string `json:"worker,omitempty" msgpack:"w,omitempty"`
	LastHeartbeatMS int64  `json:"last_heartbeat_ms,omitempty" msgpack:"hb,omitempty"`
	LeaseExpiryMS   int64  `json:"lease_expiry_ms,omitempty" msgpack:"le,omitempty"`
	// Avoid lists the resources that failed the step.
	Avoid        []string          `json:"avoid" msgpack:"av"`
	Capabilities []string          `json:"capabilities,omitempty" msgpack:"cp,omitempty"`
	Selector     map[string]string `json:"selector,omitempty" msgpack:"sl,omitempty"`
	DependsOn    []string          `json:"depends_on,omitempty" msgpack:"dp,omitempty"`
	// WaitingForResource: the step waits in the queue for a unit.
	WaitingForResource bool `json:"waiting_for_resource,omitempty" msgpack:"wr,omitempty"`
	// Question is what a NEEDS_USER step asks: the payload when it is JSON
	// nested at most 32 levels, else the payload as a JSON string; and
	// AnswerDueMS when the answer times out (0: never).
	Question    json.RawMessage `json:"question,omitempty" msgpack:"q,omitempty"`
	AnswerDueMS int64           `json:"answer_due_ms,omitempty" msgpack:"ad,omitempty"`
	// ElidedQuestionBytes is set only on a step a read returned without
	// its Question, because the stored question was longer than the read's
	// StepsQuery.MaxQuestionBytes: the length left out.
	ElidedQuestionBytes int `json:"elided_question_bytes,omitempty" msgpack:"eq,omitempty"`
	// Decision is the critic's last decision on the step.
	Decision CriticDecision `json:"decision,omitempty" msgpack:"dc,omitempty"`
	// Explicit: the step has a step record (a step lease of its own).
	Explicit bool `json:"explicit,omitempty" msgpack:"x,omitempty"`
	// Pause is set while an operator holds the activity (PauseActivity);
	// AttemptBase is the tries made before its last reset, and Options
	// the options an operator laid over the workflow's
	// (docs/state-machines.md §6).
	Pause       *PauseInfo       `json:"pause,omitempty" msgpack:"pz,omitempty"`
	AttemptBase uint32           `json:"attempt_base,omitempty" msgpack:"ab,omitempty"`
	Options     *ActivityOptions `json:"options,omitempty" msgpack:"op,omitempty"`
	UpdatedMS   int64            `json:"updated_ms,omitempty" msgpack:"up,omitempty"`
}

// StepInfos builds the step infos of job j from its history and its step
// records (by step).
func StepInfos(j *Job, hist []Event, recs map[string]*StepRecord) []StepInfo {
	byStep := map[string][]Event{}
	for _, ev := range hist {
		if IsStepEvent(ev.Type) && ev.Step != "" {
			byStep[ev.Step] = append(byStep[ev.Step], ev)
		}
	}
	for name := range recs {
		if _, ok := byStep[name]; !ok {
			byStep[name] = nil
		}
	}
	for _, b := range j.Beats {
		if _, ok := byStep[b.Step]; !ok {
			byStep[b.Step] = nil
		}
	}
	out := make([]StepInfo, 0, len(byStep))
	for name, evs := range byStep {
		p := DeriveStepState(evs)
		si := StepInfo{Step: name, State: p.State, Attempt: p.Attempt, Resource: p.Resource, Avoid: p.Avoid,
			Pause: p.Pause, AttemptBase: p.AttemptBase, Options: p.Options}
		if si.Avoid == nil {
			si.Avoid = []string{}
		}
		for _, ev := range evs {
			if ev.Name != "" {
				si.Activity = ev.Name
			}
			if ev.Decision != "" {
				si.Decision = ev.Decision
			}
			si.UpdatedMS = ev.AtMS
		}
		if rec := recs[name]; rec != nil {
			si.Explicit, si.Activity = true, rec.Activity
			si.Pause, si.AttemptBase, si.Options = rec.Pause, rec.AttemptBase, rec.Options
			if si.State == StepNone {
				si.State = rec.State
			}
			if rec.Released {
				si.Resource = ""
			}
			si.LastHeartbeatMS, si.LeaseExpiryMS = rec.LastHeartbeatMS, rec.LeaseExpiryMS
			si.Capabilities, si.Selector, si.DependsOn = rec.Capabilities, rec.Selector, rec.DependsOn
			si.WaitingForResource = rec.WaiterSeq != 0
			si.AnswerDueMS, si.UpdatedMS = rec.AnswerDueMS, max(si.UpdatedMS, rec.UpdatedMS)
			if len(rec.Question) > 0 {
				si.Question = jsonOrString(rec.Question)
			}
			if rec.State.HoldsLease() && !j.Status.Terminal() {
				si.Worker = rec.Owner
			}
		} else {
			if si.State == StepNone {
				si.State = StepRunning // known from its heartbeats alone
			}
			if !si.State.Terminal() && si.State != StepPending && j.Status == StatusRunning {
				si.Worker = j.LeaseOwner // the job's lease covers it
			}
		}
		for _, b := range j.Beats {
			if b.Step == name {
				si.LastHeartbeatMS, si.Attempt = b.AtMS, max(si.Attempt, b.StepAttempt)
			}
		}
		out = append(out, si)
	}
	sort.Slice(out, func(a, b int) bool { return stepOrder(out[a].Step, out[b].Step) })
	return out
}

// jsonOrString keeps a payload that is JSON as it is and quotes one that is
// not, or that nests deeper than payloadview.DefaultMaxDepth levels:
// encoding/json refuses to write a document nested more than 10,000 levels,
// so a question nested that deep would fail the whole answer, and one a
// little less deep costs a reader two bytes per level on every line it
// indents.
func jsonOrString(b []byte) json.RawMessage {
	if json.Valid(b) && payloadview.JSONDepth(b) <= payloadview.DefaultMaxDepth {
		return json.RawMessage(b)
	}
	q, _ := json.Marshal(string(b))
	return q
}

// stepOrder sorts step ids numerically when they are numbers (the SDK's
// steps), else by text after them.
func stepOrder(a, b string) bool {
	na, ea := strconv.ParseUint(a, 10, 64)
	nb, eb := strconv.ParseUint(b, 10, 64)
	switch {
	case ea == nil && eb == nil:
		return na < nb
	case ea == nil:
		return true
	case eb == nil:
		return false
	}
	return a < b
}
