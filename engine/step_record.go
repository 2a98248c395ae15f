package engine

import (
	"slices"
	"sort"
)

// StepRecord is the stored state of a step that left the straight path: it
// took an explicit step lease (a resource, a critic, dependencies), or
// needs a person. A step the job's lease covers and that just runs and
// commits has none: its state is read from its events alone, so the
// straight path writes nothing more than before.
//
// State, Attempt, Resource and Avoid are the projection of the step's
// history events (DeriveStepState), and Verify checks they agree; the
// other fields are the engine's bookkeeping (who holds the lease, until
// when, what it waits for).
type StepRecord struct {
	Job  JobID  `json:"job_id" msgpack:"j"`
	Step string `json:"step" msgpack:"s"`
	// Activity is the activity type (the step events' Name).
	Activity string    `json:"activity,omitempty" msgpack:"n,omitempty"`
	State    StepState `json:"state" msgpack:"st"`
	// Attempt is the newest try, from 1.
	Attempt uint32 `json:"attempt,omitempty" msgpack:"a,omitempty"`
	// JobAttempt is the job attempt the step lease belongs to: the one
	// that leased it, or 0 for a lease the engine granted on its own (a
	// unit freed for a waiting step, dependencies that succeeded, a
	// person's answer), which the job's next LeaseStep adopts.
	JobAttempt uint64 `json:"job_attempt,omitempty" msgpack:"ja,omitempty"`
	// Owner is the worker holding the job's lease when the step was
	// leased or last heartbeat.
	Owner string `json:"owner,omitempty" msgpack:"o,omitempty"`
	// Resource is the resource the step holds a unit of ("" when none).
	Resource string `json:"resource,omitempty" msgpack:"r,omitempty"`
	// Released: the step's job ended while it held a unit of Resource, and
	// the unit went back; Resource stays what the history says.
	Released bool `json:"released,omitempty" msgpack:"rl,omitempty"`
	// Avoid lists the resources that failed the step: it is never leased
	// one of them again.
	Avoid []string `json:"avoid,omitempty" msgpack:"av,omitempty"`
	// Capabilities and Selector are what a resource must offer the step:
	// every capability, and every label with the given value.
	Capabilities []string          `json:"capabilities,omitempty" msgpack:"cp,omitempty"`
	Selector     map[string]string `json:"selector,omitempty" msgpack:"sl,omitempty"`
	// DependsOn are the steps of the same job that must succeed first.
	DependsOn []string `json:"depends_on,omitempty" msgpack:"dp,omitempty"`
	// LeaseMS is the length of the step's leases, and LeaseExpiryMS when
	// the current one ends (0: none is held, or the job's lease covers it).
	LeaseMS       int64 `json:"lease_ms,omitempty" msgpack:"lm,omitempty"`
	LeaseExpiryMS int64 `json:"lease_expiry_ms,omitempty" msgpack:"le,omitempty"`
	// TimeoutFatal: a running step whose lease runs out fails for good
	// (FAILED_FATAL) instead of being retried.
	TimeoutFatal bool `json:"timeout_fatal,omitempty" msgpack:"tf,omitempty"`
	// LastHeartbeatMS is when the step last heartbeat.
	LastHeartbeatMS int64 `json:"last_heartbeat_ms,omitempty" msgpack:"hb,omitempty"`
	// WaiterSeq is the step's place in the resource waiter queue while it
	// waits for a unit (0: it does not).
	WaiterSeq uint64 `json:"waiter_seq,omitempty" msgpack:"w,omitempty"`
	// UnitTry is, on a shard other than the resource pool's, the try the
	// step asked the pool's shard for a unit for (AskUnit): while Resource
	// is empty it still waits, and once Resource is set the unit was
	// granted to that try, which the pool lists it under. 0: the step has
	// asked nothing of another shard. UnitLabels are the labels of the
	// resource granted so, which this shard does not hold.
	UnitTry    uint32            `json:"unit_try,omitempty" msgpack:"ut,omitempty"`
	UnitLabels map[string]string `json:"unit_labels,omitempty" msgpack:"ul,omitempty"`
	// UnitRefusal is the pool's shard's refusal of the step's ask (no
	// resource can serve it, as NoResourceError), which the step's next
	// LeaseStep answers: its outcome name and text.
	UnitRefusal *UnitRefusal `json:"unit_refusal,omitempty" msgpack:"urf,omitempty"`
	// Question is what a NEEDS_USER step asks, and AnswerDueMS when its
	// answer times out (0: never).
	Question    []byte `json:"question,omitempty" msgpack:"q,omitempty"`
	AnswerDueMS int64  `json:"answer_due_ms,omitempty" msgpack:"ad,omitempty"`
	// Pause is set while an operator holds the activity (PauseActivity): no
	// step lease is granted. AttemptBase is the tries made before its last
	// reset (ResetActivity): its retry policy counts the tries after it.
	// Options are the options an operator laid over the workflow's
	// (UpdateActivityOptions). All three are the projection of the step's
	// activity_* control events.
	Pause       *PauseInfo       `json:"pause,omitempty" msgpack:"pz,omitempty"`
	AttemptBase uint32           `json:"attempt_base,omitempty" msgpack:"ab,omitempty"`
	Options     *ActivityOptions `json:"options,omitempty" msgpack:"op,omitempty"`
	// Straight: the record was made by an operator's command for a step
	// that ran under the job's lease. Until the step takes a step lease of
	// its own, the try after Attempt, which may still be running under the
	// job's lease, may end it (commit, record its failure, ask a person):
	// a try that ran when the operator acted finishes.
	Straight  bool  `json:"straight,omitempty" msgpack:"sp,omitempty"`
	UpdatedMS int64 `json:"updated_ms" msgpack:"up"`
}

// Clone returns a copy of s that Apply may change without changing s.
func (s *StepRecord) Clone() *StepRecord {
	c := *s
	c.Avoid = slices.Clone(s.Avoid)
	c.Capabilities = slices.Clone(s.Capabilities)
	c.DependsOn = slices.Clone(s.DependsOn)
	c.Question = slices.Clone(s.Question)
	c.Pause = clonePause(s.Pause)
	c.Options = s.Options.Clone()
	if s.UnitRefusal != nil {
		r := *s.UnitRefusal
		c.UnitRefusal = &r
	}
	if s.UnitLabels != nil {
		c.UnitLabels = make(map[string]string, len(s.UnitLabels))
		for k, v := range s.UnitLabels {
			c.UnitLabels[k] = v
		}
	}
	if s.Selector != nil {
		c.Selector = make(map[string]string, len(s.Selector))
		for k, v := range s.Selector {
			c.Selector[k] = v
		}
	}
	return &c
}

// UnitRefusal is the resource pool's shard's refusal of a step's ask for a
// unit: the outcome name of its error and its text.
type UnitRefusal struct {
	Outcome string `json:"outcome" msgpack:"o"`
	Error   string `json:"error" msgpack:"e"`
}

// Resource is a named member of a resource pool: a browser, a phone, a GPU,
// an account. It offers Capacity units; a step that needs what it offers
// leases one unit at a time.
type Resource struct {
	ID           string            `json:"id" msgpack:"id"`
	Capabilities []string          `json:"capabilities,omitempty" msgpack:"cp,omitempty"`
	Labels       map[string]string `json:"labels,omitempty" msgpack:"lb,omitempty"`
	Capacity     int               `json:"capacity" msgpack:"c"`
	// Drained: the resource takes no new leases; those it holds finish.
	Drained bool `json:"drained,omitempty" msgpack:"dr,omitempty"`
	// Holders are the step leases holding its units, in the order taken.
	Holders   []ResourceHolder `json:"holders,omitempty" msgpack:"h,omitempty"`
	CreatedMS int64            `json:"created_ms" msgpack:"cr"`
	UpdatedMS int64            `json:"updated_ms" msgpack:"up"`
}

// ResourceHolder is one leased unit of a resource.
type ResourceHolder struct {
	Job         JobID  `json:"job_id" msgpack:"j"`
	Step        string `json:"step" msgpack:"s"`
	StepAttempt uint32 `json:"step_attempt" msgpack:"a"`
	SinceMS     int64  `json:"since_ms" msgpack:"at"`
}

// Free returns the units not leased.
func (r *Resource) Free() int { return max(r.Capacity-len(r.Holders), 0) }

// Offers reports whether r offers every capability in caps and every label
// of selector with its value.
func (r *Resource) Offers(caps []string, selector map[string]string) bool {
	for _, c := range caps {
		if !slices.Contains(r.Capabilities, c) {
			return false
		}
	}
	for k, v := range selector {
		if got, ok := r.Labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// sortedKeys returns m's keys in order, so that messages naming a selector
// are the same every time.
func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
