package machine

import (
	"errors"
	"fmt"
	"slices"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/storage"
)

// Resource units across shards (engine/outbox_unit.go, docs/sharding.md).
// The pool lives on engine.ResourceHomeShard. A step of another shard
// that needs a unit asks for it through the outbox (AskUnit) and waits
// with the record's UnitTry set; the pool's shard keeps a RemoteUnit
// record for it, with a place in the one waiter queue its own steps use,
// so every step waits first come, first served. A grant comes back in the
// ask's answer or later as UnitGranted; the step gives the unit back with
// ReleaseUnit. Every message names the try it is for, so one about an
// older try changes nothing, and a grant that finds the step no longer
// waiting is declined and, at its acknowledgement, given back.

// remoteUnitVersion is the version of the stored RemoteUnit record.
const remoteUnitVersion = 1

// EncodeRemoteUnit returns the stored form of a remote unit record.
func EncodeRemoteUnit(u *engine.RemoteUnit) []byte {
	return storage.MustEncode(storage.KindRemoteUnit, remoteUnitVersion, u)
}

// DecodeRemoteUnit decodes a stored remote unit record.
func DecodeRemoteUnit(b []byte) (_ *engine.RemoteUnit, err error) {
	defer markStorage(&err)
	u := new(engine.RemoteUnit)
	if _, err := storage.Decode(b, storage.KindRemoteUnit, remoteUnitVersion, u); err != nil {
		return nil, err
	}
	return u, nil
}

// readRemoteUnit returns the remote unit record of step of job, or nil.
func readRemoteUnit(get func([]byte) ([]byte, error), job engine.JobID, step string) (*engine.RemoteUnit, error) {
	key := storage.RemoteUnitKey(uint64(job), step)
	b, err := get(key)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	u := new(engine.RemoteUnit)
	if _, err := storage.DecodeAt(key, b, storage.KindRemoteUnit, remoteUnitVersion, u); err != nil {
		return nil, MarkStorageError(err)
	}
	return u, nil
}

// ReadRemoteUnits returns the remote unit records of the store (those of
// the pool's shard), in job and step order.
func ReadRemoteUnits(r *storage.Reader) (_ []*engine.RemoteUnit, err error) {
	defer markStorage(&err)
	var out []*engine.RemoteUnit
	err = r.Scan(storage.RemoteUnitPrefix, nil, true, func(k, b []byte) (bool, error) {
		u := new(engine.RemoteUnit)
		if _, err := storage.DecodeAt(k, b, storage.KindRemoteUnit, remoteUnitVersion, u); err != nil {
			return false, err
		}
		out = append(out, u)
		return true, nil
	})
	return out, err
}

func (a *applier) saveRemoteUnit(u *engine.RemoteUnit) {
	a.tx.Set(storage.RemoteUnitKey(uint64(u.Job), u.Step), EncodeRemoteUnit(u))
}

// poolHere reports whether this store holds the resource pool: every store
// that is not a shard of a sharded cluster, and the home shard of one.
func (a *applier) poolHere() bool {
	return !a.shard.Sharded() || a.shard.Index == engine.ResourceHomeShard
}

// unitWants is what a remote unit record asks of a resource, in the form
// serves reads.
func unitWants(u *engine.RemoteUnit) *engine.StepRecord {
	return &engine.StepRecord{Job: u.Job, Step: u.Step, Activity: u.Activity, Attempt: u.StepAttempt - 1,
		Capabilities: u.Capabilities, Selector: u.Selector, Avoid: u.Avoid}
}

// askUnit sends the pool's shard an ask for a unit for step s's next try,
// which waits for it meanwhile (a queued step, as one in the waiter queue
// here would be).
func (a *applier) askUnit(l *loaded, s *step) error {
	r := s.rec
	try := r.Attempt + 1
	cmd := &engine.AskUnit{Job: r.Job, Step: r.Step, StepAttempt: try, Activity: r.Activity,
		Capabilities: slices.Clone(r.Capabilities), Selector: cloneLabels(r.Selector), Avoid: slices.Clone(r.Avoid)}
	if _, err := a.send(engine.ResourceHomeShard, cmd, 0, ""); err != nil {
		return err
	}
	r.UnitTry, r.UnitRefusal = try, nil
	if r.State == engine.StepNone {
		r.State = engine.StepPending // issued, nothing recorded yet
	}
	a.saveStep(l, s)
	return nil
}

// asking reports whether step record r waits for a unit the pool's shard
// has not granted yet.
func asking(r *engine.StepRecord) bool { return r.UnitTry != 0 && r.Resource == "" }

// giveUnitBack sends the pool's shard the release of the unit step record
// r holds, or the withdrawal of its ask, and forgets both here.
func (a *applier) giveUnitBack(r *engine.StepRecord) error {
	if r.UnitTry == 0 {
		return nil
	}
	if _, err := a.send(engine.ResourceHomeShard, &engine.ReleaseUnit{Job: r.Job, Step: r.Step, StepAttempt: r.UnitTry}, 0, ""); err != nil {
		return err
	}
	r.UnitTry, r.UnitLabels = 0, nil
	return nil
}

// askUnitHere applies, on the pool's shard, a step's ask from another
// shard: a free unit of the serving resource with the most is leased to
// it at once; with none free it joins the waiter queue; with no resource
// that could ever serve it the ask is refused (NoResourceError), as a
// LeaseStep here would be.
func (a *applier) askUnitHere(c *engine.AskUnit) (engine.Result, error) {
	if err := a.unitCommandHere("AskUnit", c.Job, true); err != nil {
		return nil, err
	}
	old, err := readRemoteUnit(a.tx.Get, c.Job, c.Step)
	if err != nil {
		return nil, err
	}
	if old != nil {
		switch {
		case old.StepAttempt == c.StepAttempt:
			return &engine.UnitResult{Resource: old.Resource, Queued: old.WaiterSeq != 0}, nil
		case old.StepAttempt > c.StepAttempt:
			return nil, engine.InvalidField("AskUnit", "StepAttempt", fmt.Sprintf("is %d, older than the ask of %s", c.StepAttempt, old))
		}
		// The step's shard asks for a try only once the older one let go,
		// and its release travels before this ask: an older record left
		// is given back now.
		if err := a.dropRemoteUnit(old); err != nil {
			return nil, err
		}
	}
	u := &engine.RemoteUnit{Job: c.Job, Step: c.Step, StepAttempt: c.StepAttempt, Activity: c.Activity,
		Capabilities: slices.Clone(c.Capabilities), Selector: cloneLabels(c.Selector), Avoid: slices.Clone(c.Avoid), AskedMS: a.now}
	slices.Sort(u.Capabilities)
	best, err := a.bestResource(unitWants(u))
	if err != nil {
		return nil, err
	}
	if best.Free() == 0 {
		n, err := a.nextWaiter(c.Job, c.Step)
		if err != nil {
			return nil, err
		}
		u.WaiterSeq = n
		a.saveRemoteUnit(u)
		return &engine.UnitResult{Queued: true}, nil
	}
	a.leaseRemote(u, best)
	return &engine.UnitResult{Resource: best.ID, Labels: cloneLabels(best.Labels)}, nil
}

// leaseRemote leases a unit of rs to the remote unit record u.
func (a *applier) leaseRemote(u *engine.RemoteUnit, rs *engine.Resource) {
	rs.Holders = append(rs.Holders, engine.ResourceHolder{Job: u.Job, Step: u.Step, StepAttempt: u.StepAttempt, SinceMS: a.now})
	a.saveResource(rs)
	u.Resource, u.WaiterSeq = rs.ID, 0
	a.saveRemoteUnit(u)
}

// serveRemoteWaiter is serveWaiter for the queue entry e of a step of
// another shard: a unit of rs it can use is leased to it and the grant
// sent to its shard.
func (a *applier) serveRemoteWaiter(e storage.WaiterEntry, rs *engine.Resource) (gone, took bool, err error) {
	u, err := readRemoteUnit(a.tx.Get, engine.JobID(e.Job), e.Step)
	if err != nil || u == nil || u.WaiterSeq != e.Seq {
		return true, false, err
	}
	if !serves(rs, unitWants(u)) {
		return false, false, nil
	}
	a.leaseRemote(u, rs)
	cmd := &engine.UnitGranted{Job: u.Job, Step: u.Step, StepAttempt: u.StepAttempt, Resource: rs.ID, Labels: cloneLabels(rs.Labels)}
	if _, err := a.send(engine.ShardOfJob(u.Job), cmd, 0, ""); err != nil {
		return false, false, err
	}
	return false, true, nil
}

// releaseUnitHere applies, on the pool's shard, a step's release of its
// unit (or withdrawal of its ask) for the try named.
func (a *applier) releaseUnitHere(c *engine.ReleaseUnit) (engine.Result, error) {
	if err := a.unitCommandHere("ReleaseUnit", c.Job, true); err != nil {
		return nil, err
	}
	u, err := readRemoteUnit(a.tx.Get, c.Job, c.Step)
	if err != nil {
		return nil, err
	}
	if u == nil || u.StepAttempt != c.StepAttempt {
		return &engine.UnitResult{}, nil
	}
	return &engine.UnitResult{Resource: u.Resource, Released: true}, a.dropRemoteUnit(u)
}

// dropRemoteUnit removes the remote unit record u with its place in the
// queue or its unit, which goes to the next waiter it can serve.
func (a *applier) dropRemoteUnit(u *engine.RemoteUnit) error {
	a.tx.Delete(storage.RemoteUnitKey(uint64(u.Job), u.Step))
	if u.WaiterSeq != 0 {
		a.tx.Delete(storage.WaiterKey(u.WaiterSeq, uint64(u.Job), u.Step))
	}
	if u.Resource == "" {
		return nil
	}
	rs, err := readResource(a.tx.Get, u.Resource)
	if err != nil || rs == nil {
		return err
	}
	i := slices.IndexFunc(rs.Holders, func(h engine.ResourceHolder) bool {
		return h.Job == u.Job && h.Step == u.Step && h.StepAttempt == u.StepAttempt
	})
	if i < 0 {
		return nil
	}
	rs.Holders = slices.Delete(rs.Holders, i, i+1)
	a.saveResource(rs)
	_, err = a.serveWaiters(rs)
	return err
}

// unitCommandHere refuses a unit command applied outside a delivery, on a
// shard that does not hold what it is for: the pool (pool true) or the
// run job.
func (a *applier) unitCommandHere(cmd string, job engine.JobID, pool bool) error {
	if err := a.delivered(cmd); err != nil {
		return err
	}
	switch {
	case pool && !a.poolHere():
		return a.crossShard(cmd, "the resource pool", engine.ResourceHomeShard)
	case pool && !a.remoteJob(job):
		return engine.InvalidField(cmd, "Job", fmt.Sprintf("is job %d of this shard, whose steps lease here directly", job))
	case !pool:
		return a.jobOnShard(cmd, "job", job)
	}
	return nil
}

// unitGrantedHere applies, on the step's shard, a unit the pool's shard
// granted to a step that waited: the step takes its lease, as a unit freed
// here would give it, or declines it when it no longer waits for it.
func (a *applier) unitGrantedHere(c *engine.UnitGranted) (engine.Result, error) {
	if err := a.unitCommandHere("UnitGranted", c.Job, false); err != nil {
		return nil, err
	}
	took, err := a.takeUnit(c.Job, c.Step, c.StepAttempt, c.Resource, c.Labels)
	if err != nil {
		return nil, err
	}
	return &engine.UnitResult{Resource: c.Resource, Declined: !took}, nil
}

// takeUnit gives the unit of resource granted by the pool's shard to try
// of step of job, when that try still waits for it; took is false when it
// does not (its run ended, its step stopped waiting or moved on).
func (a *applier) takeUnit(job engine.JobID, name string, try uint32, resource string, labels map[string]string) (took bool, err error) {
	l, err := a.load(job)
	if errors.Is(err, engine.ErrUnknownJob) {
		return false, nil
	}
	if err != nil || l.job.Status.Terminal() {
		return false, err
	}
	s, err := a.loadStep(job, name)
	if err != nil || s == nil {
		return false, err
	}
	r := s.rec
	if !asking(r) || r.UnitTry != try || r.Attempt+1 != try || r.Pause != nil {
		return false, nil
	}
	if err := a.lease(l, s, resource, 0); err != nil {
		return false, err
	}
	r.UnitLabels = cloneLabels(labels)
	a.saveStep(l, s)
	a.save(l)
	return true, nil
}

// unitAnswered applies, on the shard that sent entry e (a unit command),
// its target's answer: an ask's grant or refusal on the step's shard; a
// declined (or refused) grant on the pool's shard, which takes its unit
// back.
func (a *applier) unitAnswered(e *engine.OutboxEntry, ans engine.DeliverResult) error {
	cmd, err := DecodeCommand(e.Command)
	if err != nil {
		return fmt.Errorf("outbox entry %s: %w", e.DeliveryRef, err)
	}
	var res engine.UnitResult
	if ans.Error == "" {
		_, r, err := DecodeResult(ans.Result)
		if err != nil {
			return fmt.Errorf("AckDelivery.Answer.Result: %w", err)
		}
		ur, ok := r.(*engine.UnitResult)
		if !ok {
			return engine.InvalidField("AckDelivery", "Answer.Result", "is not a unit command's answer")
		}
		res = *ur
	}
	switch c := cmd.(type) {
	case *engine.AskUnit:
		switch {
		case ans.Error != "":
			return a.unitRefused(c, ans)
		case res.Resource == "":
			return nil // queued: a UnitGranted follows
		}
		took, err := a.takeUnit(c.Job, c.Step, c.StepAttempt, res.Resource, res.Labels)
		if err != nil || took {
			return err
		}
		_, err = a.send(engine.ResourceHomeShard, &engine.ReleaseUnit{Job: c.Job, Step: c.Step, StepAttempt: c.StepAttempt}, 0, "")
		return err
	case *engine.UnitGranted:
		if ans.Error == "" && !res.Declined {
			return nil
		}
		u, err := readRemoteUnit(a.tx.Get, c.Job, c.Step)
		if err != nil || u == nil || u.StepAttempt != c.StepAttempt || u.Resource != c.Resource {
			return err
		}
		return a.dropRemoteUnit(u)
	}
	return nil // a release's answer changes nothing here
}

// unitRefused records the pool's shard's refusal of step's ask, which the
// step's next LeaseStep answers, and wakes its run if it waits for it.
func (a *applier) unitRefused(c *engine.AskUnit, ans engine.DeliverResult) error {
	l, err := a.load(c.Job)
	if errors.Is(err, engine.ErrUnknownJob) {
		return nil
	}
	if err != nil || l.job.Status.Terminal() {
		return err
	}
	s, err := a.loadStep(c.Job, c.Step)
	if err != nil || s == nil || !asking(s.rec) || s.rec.UnitTry != c.StepAttempt {
		return err
	}
	s.rec.UnitTry = 0
	s.rec.UnitRefusal = &engine.UnitRefusal{Outcome: ans.Outcome, Error: ans.Error}
	a.saveStep(l, s)
	if err := a.wakeForStep(l, c.Step); err != nil {
		return err
	}
	a.save(l)
	return nil
}

// unitKind reports whether k is one of the unit commands.
func unitKind(k engine.CommandKind) bool {
	return k == engine.KindAskUnit || k == engine.KindUnitGranted || k == engine.KindReleaseUnit
}
