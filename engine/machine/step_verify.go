package machine

import (
	"fmt"
	"reflect"
	"slices"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/storage"
)

// holderKey names one step's claim on a resource unit.
type holderKey struct {
	resource string
	job      engine.JobID
	step     string
}

// steps checks the steps of job j: each step's events follow the step
// state machine (CheckStepHistory), each step record equals the projection
// of its events, the job's live steps are exactly its records that have
// not ended, a record's deadline and waiter entries exist, and the units
// its records hold are noted for the resource check.
func (v *verifier) steps(j *engine.Job, hist []engine.Event) bool {
	fail := func(format string, a ...any) bool {
		return v.add(fmt.Errorf("job %d: "+format, append([]any{j.ID}, a...)...))
	}
	byStep := map[string][]engine.Event{}
	for _, ev := range hist {
		if engine.IsStepEvent(ev.Type) && ev.Step != "" {
			byStep[ev.Step] = append(byStep[ev.Step], ev)
		}
	}
	for name, evs := range byStep {
		if err := engine.CheckStepHistory(name, evs); err != nil {
			if !fail("%v", err) {
				return false
			}
		}
	}
	var live []string
	ok := true
	err := v.r.Scan(storage.StepPrefix(uint64(j.ID)), nil, true, func(k, b []byte) (bool, error) {
		rec := new(engine.StepRecord)
		if _, err := storage.DecodeAt(k, b, storage.KindStep, stepVersion, rec); err != nil {
			ok = v.add(err)
			return ok, nil
		}
		if !rec.State.Terminal() {
			live = append(live, rec.Step)
		}
		if err := v.stepRecord(j, rec, byStep[rec.Step]); err != nil {
			ok = fail("step %q: %v", rec.Step, err)
		}
		return ok, nil
	})
	if err != nil {
		return v.add(err)
	}
	if !ok {
		return false
	}
	got := slices.Clone(j.LiveSteps)
	slices.Sort(got)
	slices.Sort(live)
	if !slices.Equal(got, live) {
		return fail("record lists live steps %v, its step records that have not ended are %v", j.LiveSteps, live)
	}
	for _, b := range j.Beats {
		if j.Status != engine.StatusRunning {
			return fail("%s record holds the heartbeat of step %q", j.Status, b.Step)
		}
		if has, _ := v.r.Get(storage.StepKey(uint64(j.ID), b.Step)); has != nil {
			return fail("step %q has a step record and a heartbeat on the job record", b.Step)
		}
	}
	return true
}

// stepRecord checks one step record against its events and notes the
// entries and units it implies.
func (v *verifier) stepRecord(j *engine.Job, rec *engine.StepRecord, evs []engine.Event) error {
	if rec.Job != j.ID {
		return fmt.Errorf("record names job %d", rec.Job)
	}
	p := engine.DeriveStepState(evs)
	state := p.State
	if state == engine.StepNone && len(evs) == 0 {
		state = engine.StepPending // issued and waiting, nothing recorded yet
	}
	switch {
	case rec.State != state:
		return fmt.Errorf("record state %s, its history derives %s", rec.State, state)
	case rec.Attempt != p.Attempt && len(evs) > 0:
		return fmt.Errorf("record try %d, its history's newest is %d", rec.Attempt, p.Attempt)
	case rec.Resource != p.Resource:
		return fmt.Errorf("record resource %q, its history's %q", rec.Resource, p.Resource)
	case !slices.Equal(rec.Avoid, p.Avoid):
		return fmt.Errorf("record avoids %v, its history %v", rec.Avoid, p.Avoid)
	case rec.Released && rec.Resource == "":
		return fmt.Errorf("record released a unit of no resource")
	case rec.JobAttempt > j.Attempt:
		return fmt.Errorf("record's lease belongs to job attempt %d, the job's newest is %d", rec.JobAttempt, j.Attempt)
	case !reflect.DeepEqual(rec.Pause, p.Pause):
		return fmt.Errorf("record's pause %+v, its history's %+v", rec.Pause, p.Pause)
	case rec.AttemptBase != p.AttemptBase || !reflect.DeepEqual(rec.Options, p.Options):
		return fmt.Errorf("record's attempt base %d and options %+v, its history's %d and %+v", rec.AttemptBase, rec.Options, p.AttemptBase, p.Options)
	case rec.Pause != nil && rec.WaiterSeq != 0:
		return fmt.Errorf("paused record waits for a resource unit (seq %d)", rec.WaiterSeq)
	case rec.Straight && slices.ContainsFunc(evs, func(ev engine.Event) bool { return ev.Type == engine.EventStepLeased }):
		return fmt.Errorf("record is marked straight, yet its step took a step lease")
	}
	open := !j.Status.Terminal()
	if due := stepDueMS(rec); due > 0 {
		if !open {
			return fmt.Errorf("record of a %s job has a deadline at %d", j.Status, due)
		}
		v.want[string(storage.StepDueKey(due, uint64(j.ID), rec.Step))] = true
	}
	if rec.WaiterSeq != 0 {
		switch rec.State {
		case engine.StepPending, engine.StepWaitingDeps, engine.StepRetrying, engine.StepSwitchingResource:
		default:
			return fmt.Errorf("record waits for a unit in state %s", rec.State)
		}
		if !open || rec.Resource != "" {
			return fmt.Errorf("record of a %s job waits for a unit holding %q", j.Status, rec.Resource)
		}
		v.want[string(storage.WaiterKey(rec.WaiterSeq, uint64(j.ID), rec.Step))] = true
		if v.waiting == nil {
			v.waiting = map[uint64]*engine.StepRecord{}
		}
		v.waiting[rec.WaiterSeq] = rec
	}
	if rec.Resource != "" && !rec.Released {
		if !open {
			return fmt.Errorf("record of a %s job still holds a unit of %q", j.Status, rec.Resource)
		}
		if !rec.State.HoldsLease() && rec.State != engine.StepNeedsUser {
			return fmt.Errorf("record holds a unit of %q in state %s", rec.Resource, rec.State)
		}
		if rec.UnitTry == 0 {
			// A unit of the pool on another shard is checked across
			// shards (VerifyAcrossShards).
			v.claims[holderKey{rec.Resource, j.ID, rec.Step}] = rec.Attempt
		}
	}
	return unitAskOK(rec, open)
}

// unitAskOK checks what a step record says of a unit it asked the pool's
// shard for.
func unitAskOK(rec *engine.StepRecord, open bool) error {
	switch {
	case rec.UnitTry != 0 && rec.UnitRefusal != nil:
		return fmt.Errorf("record asks for a unit for try %d, yet holds the refusal of an ask", rec.UnitTry)
	case rec.UnitTry != 0 && rec.Released:
		return fmt.Errorf("record asked a unit for try %d of the pool's shard, yet marks it released", rec.UnitTry)
	case rec.UnitTry == 0 && len(rec.UnitLabels) > 0:
		return fmt.Errorf("record keeps the labels of a unit it does not hold")
	case !asking(rec):
		if rec.UnitTry > rec.Attempt {
			return fmt.Errorf("record holds a unit granted to try %d, after its newest try %d", rec.UnitTry, rec.Attempt)
		}
		return nil
	case !open:
		return fmt.Errorf("record of a closed job asks for a unit for try %d", rec.UnitTry)
	case rec.WaiterSeq != 0 || rec.Pause != nil:
		return fmt.Errorf("record asks the pool's shard for a unit while it waits here (seq %d) or is paused", rec.WaiterSeq)
	case rec.UnitTry != rec.Attempt+1:
		return fmt.Errorf("record asks for a unit for try %d, but its next try is %d", rec.UnitTry, rec.Attempt+1)
	}
	switch rec.State {
	case engine.StepPending, engine.StepRetrying, engine.StepSwitchingResource:
		return nil
	}
	return fmt.Errorf("record asks for a unit in state %s", rec.State)
}

// remoteUnits checks the records of the units steps of other shards asked
// this shard's pool for: each waits in the queue or holds a unit (which
// the resource must list, as resources checks), never both.
func (v *verifier) remoteUnits() {
	units, err := ReadRemoteUnits(v.r)
	if err != nil {
		v.add(err)
		return
	}
	for _, u := range units {
		var bad error
		switch {
		case u.Job == 0 || u.Step == "" || u.StepAttempt == 0:
			bad = fmt.Errorf("names no job, step or try")
		case (u.WaiterSeq == 0) == (u.Resource == ""):
			bad = fmt.Errorf("waits (seq %d) and holds a unit of %q: exactly one is right", u.WaiterSeq, u.Resource)
		case len(u.Capabilities) == 0 && len(u.Selector) == 0:
			bad = fmt.Errorf("asks for nothing a resource offers")
		}
		if bad != nil {
			if !v.add(fmt.Errorf("remote unit of %s: %w", u, bad)) {
				return
			}
			continue
		}
		if u.WaiterSeq != 0 {
			v.want[string(storage.WaiterKey(u.WaiterSeq, uint64(u.Job), u.Step))] = true
			if v.waiting == nil {
				v.waiting = map[uint64]*engine.StepRecord{}
			}
			v.waiting[u.WaiterSeq] = unitWants(u)
			continue
		}
		v.claims[holderKey{u.Resource, u.Job, u.Step}] = u.StepAttempt
	}
}

// resources checks the resource pool: no resource has more units leased
// than its capacity, every leased unit is held by a step record that says
// it holds it (a live step lease, at most one per step), and every such
// record is among its resource's holders.
func (v *verifier) resources() {
	all, err := ReadResources(v.r)
	if err != nil {
		v.add(err)
		return
	}
	v.pool = all
	seen := map[holderKey]bool{}
	for _, rs := range all {
		if len(rs.Holders) > rs.Capacity {
			if !v.add(fmt.Errorf("resource %q: %d units leased, capacity %d", rs.ID, len(rs.Holders), rs.Capacity)) {
				return
			}
		}
		for _, h := range rs.Holders {
			k := holderKey{rs.ID, h.Job, h.Step}
			stepKey := holderKey{"", h.Job, h.Step}
			switch attempt, ok := v.claims[k]; {
			case seen[stepKey]:
				v.add(fmt.Errorf("resource %q: step %q of job %d holds more than one unit", rs.ID, h.Step, h.Job))
			case !ok:
				v.add(fmt.Errorf("resource %q: a unit is leased to step %q of job %d, which holds none", rs.ID, h.Step, h.Job))
			case attempt != h.StepAttempt:
				v.add(fmt.Errorf("resource %q: a unit is leased to try %d of step %q of job %d, whose record is at try %d",
					rs.ID, h.StepAttempt, h.Step, h.Job, attempt))
			}
			seen[stepKey] = true
			delete(v.claims, k)
		}
	}
	for k := range v.claims {
		if !v.add(fmt.Errorf("step %q of job %d says it holds a unit of %q, which does not list it", k.step, k.job, k.resource)) {
			return
		}
	}
}

// waiters checks the resource waiter queue: every live waiter's entry
// exists (the jobs pass noted them), no entry sorts below the queue's
// low-water mark, and no waiter could use a free unit — the invariant that
// makes the queue first come, first served.
func (v *verifier) waiters() {
	low, err := storage.ReadU64(v.r, storage.KeyLowWaiter)
	if err != nil {
		v.add(err)
		return
	}
	err = v.r.Scan(storage.WaiterPrefix, nil, false, func(k, _ []byte) (bool, error) {
		e, err := storage.ParseWaiterKey(k)
		if err != nil {
			return v.add(err), nil
		}
		if e.Seq < low {
			return v.add(fmt.Errorf("waiter entry %q sorts below the queue's low-water mark %d", k, low)), nil
		}
		delete(v.want, string(k)) // a stale entry is dropped when the queue reaches it
		return true, nil
	})
	if err != nil {
		v.add(err)
	}
	for seq, rec := range v.waiting {
		for _, rs := range v.pool {
			if rs.Free() > 0 && serves(rs, rec) {
				if !v.add(fmt.Errorf("step %q of job %d waits (seq %d) while resource %q has a free unit for it", rec.Step, rec.Job, seq, rs.ID)) {
					return
				}
			}
		}
	}
	for k := range v.want {
		if len(k) > 0 && k[0] == storage.PrefixWaiter {
			v.add(fmt.Errorf("waiter entry %q is missing", k))
			delete(v.want, k)
		}
	}
}
