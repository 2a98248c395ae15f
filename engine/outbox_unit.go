package engine

import "fmt"

// Resource units across shards (docs/sharding.md, "Resources across
// shards"). The resource pool lives on one shard (ResourceHomeShard). A
// step of a run on another shard asks that shard for a unit with AskUnit,
// through its shard's outbox; the pool's shard grants a free unit at once
// (in the answer), or queues the ask with its own waiters and later sends
// UnitGranted back through its outbox. The step's shard gives the unit
// back with ReleaseUnit when the step's try ends, its run ends or it stops
// waiting. Each of the three is applied only inside a Deliver, and each
// names the try (StepAttempt) it is for, so a late message about an older
// try changes nothing.

// AskUnit asks, on the resource pool's shard, for a unit for try
// StepAttempt of step Step of job Job (a run of another shard) that offers
// Capabilities and Selector and is not one of Avoid.
type AskUnit struct {
	Header
	Job          JobID             `json:"job_id" msgpack:"j"`
	Step         string            `json:"step" msgpack:"s"`
	StepAttempt  uint32            `json:"step_attempt" msgpack:"sa"`
	Activity     string            `json:"activity,omitempty" msgpack:"n,omitempty"`
	Capabilities []string          `json:"capabilities,omitempty" msgpack:"cp,omitempty"`
	Selector     map[string]string `json:"selector,omitempty" msgpack:"sl,omitempty"`
	Avoid        []string          `json:"avoid,omitempty" msgpack:"av,omitempty"`
}

// UnitGranted tells the step's shard that the pool's shard leased a unit
// of Resource to try StepAttempt of step Step of job Job, which waited for
// one. A step that no longer waits for it declines it (UnitResult.Declined),
// and the acknowledgement gives the unit back.
type UnitGranted struct {
	Header
	Job         JobID             `json:"job_id" msgpack:"j"`
	Step        string            `json:"step" msgpack:"s"`
	StepAttempt uint32            `json:"step_attempt" msgpack:"sa"`
	Resource    string            `json:"resource" msgpack:"r"`
	Labels      map[string]string `json:"labels,omitempty" msgpack:"l,omitempty"`
}

// ReleaseUnit gives back, on the pool's shard, the unit try StepAttempt of
// step Step of job Job holds, or withdraws its ask while it still waits.
type ReleaseUnit struct {
	Header
	Job         JobID  `json:"job_id" msgpack:"j"`
	Step        string `json:"step" msgpack:"s"`
	StepAttempt uint32 `json:"step_attempt" msgpack:"sa"`
}

// UnitResult answers the three unit commands. To AskUnit: the unit granted
// at once (Resource, Labels), or Queued. To UnitGranted: Declined when the
// step no longer wanted it. To ReleaseUnit: Released when a unit or an ask
// was given back (false: none of that try was left).
type UnitResult struct {
	Resource string            `json:"resource,omitempty" msgpack:"r,omitempty"`
	Labels   map[string]string `json:"labels,omitempty" msgpack:"l,omitempty"`
	Queued   bool              `json:"queued,omitempty" msgpack:"q,omitempty"`
	Declined bool              `json:"declined,omitempty" msgpack:"d,omitempty"`
	Released bool              `json:"released,omitempty" msgpack:"rl,omitempty"`
}

// RemoteUnit is kept by the resource pool's shard for each step of another
// shard that asked for a unit: while it waits (WaiterSeq, its place in the
// one waiter queue the pool's own steps share), and while it holds a unit
// (Resource). ReleaseUnit, or a declined grant, removes it.
type RemoteUnit struct {
	Job          JobID             `json:"job_id" msgpack:"j"`
	Step         string            `json:"step" msgpack:"s"`
	StepAttempt  uint32            `json:"step_attempt" msgpack:"sa"`
	Activity     string            `json:"activity,omitempty" msgpack:"n,omitempty"`
	Capabilities []string          `json:"capabilities,omitempty" msgpack:"cp,omitempty"`
	Selector     map[string]string `json:"selector,omitempty" msgpack:"sl,omitempty"`
	Avoid        []string          `json:"avoid,omitempty" msgpack:"av,omitempty"`
	WaiterSeq    uint64            `json:"waiter_seq,omitempty" msgpack:"w,omitempty"`
	Resource     string            `json:"resource,omitempty" msgpack:"r,omitempty"`
	AskedMS      int64             `json:"asked_ms" msgpack:"at"`
}

func (*AskUnit) Kind() CommandKind     { return KindAskUnit }
func (*UnitGranted) Kind() CommandKind { return KindUnitGranted }
func (*ReleaseUnit) Kind() CommandKind { return KindReleaseUnit }

func (*UnitResult) isResult() {}

// unitStep checks the job, step and try every unit command names.
func (ch *checker) unitStep(job JobID, step string, attempt uint32) {
	if job == 0 {
		ch.fail("Job", "is required")
	}
	ch.name("Step", step, true)
	if attempt == 0 && ch.err == nil {
		ch.fail("StepAttempt", "is required (tries count from 1)")
	}
}

func (c *AskUnit) Check(l *Limits) error {
	ch := newChecker(c, l)
	ch.unitStep(c.Job, c.Step, c.StepAttempt)
	ch.name("Activity", c.Activity, false)
	ch.requirements(c.Capabilities, c.Selector)
	if len(c.Capabilities) == 0 && len(c.Selector) == 0 && ch.err == nil {
		ch.fail("Capabilities", "and Selector are both empty: a step that needs no resource asks for no unit")
	}
	if len(c.Avoid) > l.MaxBatch && ch.err == nil {
		ch.err = tooLarge(ch.cmd, "Avoid", len(c.Avoid), l.MaxBatch)
	}
	ch.names("Avoid", c.Avoid)
	return ch.err
}

func (c *UnitGranted) Check(l *Limits) error {
	ch := newChecker(c, l)
	ch.unitStep(c.Job, c.Step, c.StepAttempt)
	ch.name("Resource", c.Resource, true)
	ch.requirements(nil, c.Labels)
	return ch.err
}

func (c *ReleaseUnit) Check(l *Limits) error {
	ch := newChecker(c, l)
	ch.unitStep(c.Job, c.Step, c.StepAttempt)
	return ch.err
}

// String names the step and try a unit record is for.
func (u *RemoteUnit) String() string {
	return fmt.Sprintf("try %d of step %q of job %d", u.StepAttempt, u.Step, u.Job)
}
