package machine_test

import (
	"errors"
	"flag"
	"fmt"
	"math/rand"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/storage"
)

// The step property test drives the step and resource commands with random
// sequences over a few running jobs and a small resource pool, and checks
// every command against a reference model written from the documented
// semantics (docs/state-machines.md §3 and the doc comments of LeaseStep and
// the commands after it): the result or the sentinel error, every step's
// state, try, resource, avoid-list and place in the waiter queue, every
// resource's holders, and — at intervals and at the end — Verify. Capacity
// is checked after every command: no resource ever holds more units than
// it has.
//
// Every failure names its seed. Replay one with
//
//	go test ./engine -run TestStepPropertyRandomCommands -steps.seed=N -v
var (
	stepSeed  = flag.Int64("steps.seed", 0, "run only this seed of the step property test")
	stepSeeds = flag.Int("steps.seeds", 12, "how many seeds the step property test runs")
)

func TestStepPropertyRandomCommands(t *testing.T) {
	seeds := []int64{}
	if *stepSeed != 0 {
		seeds = append(seeds, *stepSeed)
	} else {
		for i := range *stepSeeds {
			seeds = append(seeds, int64(7001+i*7919))
		}
	}
	cmds := 400
	if testing.Short() {
		cmds = 120
	}
	seen := &meterSeen{}
	if *stepSeed == 0 && *stepSeeds >= 4 {
		// Once every seed ran (parallel subtests end before cleanups).
		t.Cleanup(func() { seen.check(t, "jobs", "closed", "transition", "steps") })
	}
	for i, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Parallel()
			t.Logf("seed %d (replay: go test ./engine -run TestStepPropertyRandomCommands -steps.seed=%d -v)", seed, seed)
			// Every other seed applies its commands outside the log and
			// checks the metrics' diff of each against the reference.
			var meter *meterCheck
			if i%2 == 1 || *stepSeed != 0 {
				meter = newMeterCheck(t, seen)
			}
			runStepProperty(t, seed, cmds, meter)
		})
	}
}

// ---------------------------------------------------------------------------
// The reference model.

type smStep struct {
	state        engine.StepState
	attempt      uint32
	jobAttempt   uint64
	resource     string
	released     bool
	avoid        []string
	caps         []string
	selector     map[string]string
	deps         []string
	leaseMS      int64
	leaseExpiry  int64
	timeoutFatal bool
	answerDue    int64
	queued       bool
}

type smJob struct {
	id      engine.JobID
	queue   string
	attempt uint64
	open    bool
	live    []string          // steps with a record that has not ended, in the order they became so
	beats   map[string]uint32 // heartbeats of steps without a record
	effects map[string]bool   // committed steps: failed?
	steps   map[string]*smStep
}

type smRes struct {
	id       string
	caps     []string
	labels   map[string]string
	capacity int
	drained  bool
	holders  []engine.ResourceHolder
}

type smWaiter struct {
	job  engine.JobID
	step string
}

type stepModel struct {
	now   int64
	jobs  map[engine.JobID]*smJob
	res   map[string]*smRes
	queue []smWaiter
}

func (m *stepModel) clone() *stepModel {
	c := &stepModel{now: m.now, jobs: map[engine.JobID]*smJob{}, res: map[string]*smRes{}, queue: slices.Clone(m.queue)}
	for id, j := range m.jobs {
		cj := *j
		cj.live = slices.Clone(j.live)
		cj.beats = map[string]uint32{}
		for k, v := range j.beats {
			cj.beats[k] = v
		}
		cj.effects = map[string]bool{}
		for k, v := range j.effects {
			cj.effects[k] = v
		}
		cj.steps = map[string]*smStep{}
		for k, s := range j.steps {
			cs := *s
			cs.avoid, cs.caps, cs.deps = slices.Clone(s.avoid), slices.Clone(s.caps), slices.Clone(s.deps)
			cs.selector = machine.CloneLabels(s.selector)
			cj.steps[k] = &cs
		}
		c.jobs[id] = &cj
	}
	for id, r := range m.res {
		cr := *r
		cr.caps, cr.labels, cr.holders = slices.Clone(r.caps), machine.CloneLabels(r.labels), slices.Clone(r.holders)
		c.res[id] = &cr
	}
	return c
}

func (r *smRes) free() int { return r.capacity - len(r.holders) }

// serves is the documented match: not drained, not avoided, every
// capability, every selector label with its value.
func (r *smRes) serves(s *smStep) bool {
	if r.drained || slices.Contains(s.avoid, r.id) {
		return false
	}
	for _, c := range s.caps {
		if !slices.Contains(r.caps, c) {
			return false
		}
	}
	for k, v := range s.selector {
		if r.labels[k] != v {
			return false
		}
	}
	return true
}

func (r *smRes) drop(job engine.JobID, step string) bool {
	for i, h := range r.holders {
		if h.Job == job && h.Step == step {
			r.holders = slices.Delete(r.holders, i, i+1)
			return true
		}
	}
	return false
}

func (m *stepModel) resIDs() []string {
	ids := make([]string, 0, len(m.res))
	for id := range m.res {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

func smHolds(s engine.StepState) bool { return s == engine.StepLeased || s == engine.StepRunning }

// setLive keeps j.live: a step enters it when its record first has a state
// that is not an end, and leaves it when the step ends.
func (j *smJob) setLive(name string, s *smStep) {
	i := slices.Index(j.live, name)
	switch {
	case !s.state.Terminal() && i < 0:
		j.live = append(j.live, name)
	case s.state.Terminal() && i >= 0:
		j.live = slices.Delete(j.live, i, i+1)
	}
}

// grant gives s its next try's lease, on rs when not nil.
func (m *stepModel) grant(j *smJob, name string, s *smStep, rs *smRes, jobAttempt uint64) {
	s.attempt++
	if s.state == engine.StepRetrying {
		s.state = engine.StepRunning // a retry's start
	} else {
		s.state = engine.StepLeased
	}
	s.resource, s.released, s.queued = "", false, false
	if rs != nil {
		s.resource = rs.id
		rs.holders = append(rs.holders, engine.ResourceHolder{Job: j.id, Step: name, StepAttempt: s.attempt, SinceMS: m.now})
	}
	s.jobAttempt, s.leaseExpiry = jobAttempt, m.now+s.leaseMS
	j.setLive(name, s)
}

// acquire leases s at once, on the serving resource with the most free
// units (the first by id among equals), or queues it.
func (m *stepModel) acquire(j *smJob, name string, s *smStep, jobAttempt uint64) error {
	if len(s.caps) == 0 && len(s.selector) == 0 {
		m.grant(j, name, s, nil, jobAttempt)
		return nil
	}
	var best *smRes
	for _, id := range m.resIDs() {
		if r := m.res[id]; r.serves(s) && (best == nil || r.free() > best.free()) {
			best = r
		}
	}
	switch {
	case best == nil:
		return engine.ErrNoResource
	case best.free() == 0:
		if s.state == engine.StepNone {
			s.state = engine.StepPending
		}
		s.queued = true
		m.queue = append(m.queue, smWaiter{j.id, name})
		j.setLive(name, s)
		return nil
	}
	m.grant(j, name, s, best, jobAttempt)
	return nil
}

// serve gives rs's free units to the waiters it serves, first come first
// served; waiters whose job ended or that no longer wait leave the queue.
func (m *stepModel) serve(rs *smRes) {
	if rs.drained {
		return
	}
	var keep []smWaiter
	for i, w := range m.queue {
		if rs.free() == 0 {
			keep = append(keep, m.queue[i:]...)
			break
		}
		j := m.jobs[w.job]
		s := j.steps[w.step]
		if !j.open || s == nil || !s.queued {
			continue
		}
		if !rs.serves(s) {
			keep = append(keep, w)
			continue
		}
		m.grant(j, w.step, s, rs, 0)
	}
	m.queue = keep
}

// unqueue removes a step's place in the queue.
func (m *stepModel) unqueue(job engine.JobID, name string) {
	m.queue = slices.DeleteFunc(m.queue, func(w smWaiter) bool { return w.job == job && w.step == name })
}

// release gives back s's unit and serves its resource's waiters.
func (m *stepModel) release(j *smJob, name string, s *smStep) {
	id := s.resource
	s.resource, s.released = "", false
	if id == "" {
		return
	}
	if rs := m.res[id]; rs != nil && rs.drop(j.id, name) {
		m.serve(rs)
	}
}

// timeout ends s's lease: LEASED goes back to PENDING, RUNNING fails its
// try (FAILED_FATAL when the lease ran out and the step says so).
func (m *stepModel) timeout(j *smJob, name string, s *smStep, expired bool) {
	switch {
	case s.state == engine.StepLeased:
		s.state = engine.StepPending
	case expired && s.timeoutFatal:
		s.state = engine.StepFailedFatal
	default:
		s.state = engine.StepRetrying
	}
	s.leaseExpiry, s.jobAttempt = 0, 0
	m.release(j, name, s)
}

func (m *stepModel) fenced(ref engine.LeaseRef) (*smJob, error) {
	j := m.jobs[ref.Job]
	if j == nil || !j.open || j.attempt != ref.Attempt {
		return nil, engine.ErrStaleAttempt
	}
	return j, nil
}

// apply predicts cmd. It works on a copy and keeps it only on success,
// since a refused command writes nothing.
func (m *stepModel) apply(cmd engine.Command) (*stepModel, engine.Result, error) {
	c := m.clone()
	c.now = max(c.now, cmd.Head().NowMS)
	res, err := c.dispatch(cmd)
	if err != nil {
		return m, nil, err
	}
	return c, res, nil
}

func (m *stepModel) dispatch(cmd engine.Command) (engine.Result, error) {
	switch c := cmd.(type) {
	case *engine.LeaseStep:
		return m.leaseStep(c)
	case *engine.StepHeartbeat:
		return m.heartbeat(c)
	case *engine.EndStepAttempt:
		return m.end(c)
	case *engine.AnswerStep:
		return m.answer(c)
	case *engine.CommitStep:
		return m.commit(c)
	case *engine.ExpireSteps:
		return m.expire()
	case *engine.AddResource:
		if m.res[c.ID] != nil {
			return nil, engine.ErrResourceExists
		}
		caps := slices.Compact(slices.Sorted(slices.Values(c.Capabilities)))
		rs := &smRes{id: c.ID, caps: caps, labels: machine.CloneLabels(c.Labels), capacity: c.Capacity}
		m.res[c.ID] = rs
		m.serve(rs)
		return &engine.ResourceResult{}, nil
	case *engine.DrainResource:
		rs := m.res[c.ID]
		if rs == nil {
			return nil, engine.ErrUnknownResource
		}
		rs.drained = !c.Undrain
		m.serve(rs)
		return &engine.ResourceResult{}, nil
	case *engine.RemoveResource:
		rs := m.res[c.ID]
		switch {
		case rs == nil:
			return nil, engine.ErrUnknownResource
		case len(rs.holders) > 0:
			return nil, engine.ErrResourceBusy
		}
		delete(m.res, c.ID)
		return &engine.ResourceResult{}, nil
	case *engine.Complete:
		j, err := m.fenced(c.LeaseRef)
		if err != nil {
			return nil, err
		}
		m.endJob(j)
		return &engine.StatusResult{}, nil
	case *engine.Cancel, *engine.Terminate:
		// An operator's end: no attempt to fence.
		j := m.jobs[smTarget(cmd)]
		if j == nil || !j.open {
			return nil, engine.ErrIllegalTransition
		}
		m.endJob(j)
		return &engine.StatusResult{}, nil
	case *engine.Requeue:
		j, err := m.fenced(c.LeaseRef)
		if err != nil {
			return nil, err
		}
		j.beats = map[string]uint32{}
		return &engine.StatusResult{}, nil
	}
	return nil, fmt.Errorf("the model does not know %T", cmd)
}

// endJob releases what a job's live steps hold, then serves the freed
// resources in the order they were freed.
func (m *stepModel) endJob(j *smJob) {
	j.open = false
	var freed []string
	for _, name := range j.live {
		s := j.steps[name]
		if s.queued {
			s.queued = false
			m.unqueue(j.id, name)
		}
		if s.resource != "" && !s.released {
			if rs := m.res[s.resource]; rs != nil && rs.drop(j.id, name) {
				freed = append(freed, rs.id)
			}
			s.released = true
		}
		s.leaseExpiry, s.answerDue, s.jobAttempt = 0, 0, 0
	}
	j.beats = map[string]uint32{}
	for _, id := range freed {
		m.serve(m.res[id])
	}
}

func (m *stepModel) leaseStep(c *engine.LeaseStep) (engine.Result, error) {
	j, err := m.fenced(c.LeaseRef)
	if err != nil {
		return nil, err
	}
	if _, done := j.effects[c.Step]; done {
		return nil, engine.ErrStepCommitted
	}
	s := j.steps[c.Step]
	if s == nil {
		s = &smStep{}
		j.steps[c.Step] = s
		delete(j.beats, c.Step) // the try under the job's lease is over
	}
	if smHolds(s.state) && s.jobAttempt != 0 && s.jobAttempt != c.Attempt {
		m.timeout(j, c.Step, s, false)
	}
	res := &engine.StepResult{}
	switch {
	case smHolds(s.state):
		if s.jobAttempt == 0 {
			s.jobAttempt, s.leaseExpiry = c.Attempt, max(s.leaseExpiry, m.now+s.leaseMS)
		}
		res.Granted = true
	case s.state == engine.StepNeedsUser || s.state == engine.StepFailedFatal:
	case s.state.Terminal():
		return nil, engine.ErrStepState
	case s.queued:
	default:
		s.caps, s.selector, s.deps = slices.Clone(c.Capabilities), machine.CloneLabels(c.Selector), slices.Clone(c.DependsOn)
		s.leaseMS, s.timeoutFatal = c.LeaseMS, c.TimeoutFatal
		done := true
		for _, d := range s.deps {
			failed, ok := j.effects[d]
			if ok && failed {
				return nil, engine.ErrDependencyFailed
			}
			done = done && ok
		}
		if !done {
			if s.state != engine.StepNone && s.state != engine.StepPending && s.state != engine.StepWaitingDeps {
				return nil, engine.ErrStepState
			}
			s.state = engine.StepWaitingDeps
			j.setLive(c.Step, s)
			break
		}
		if err := m.acquire(j, c.Step, s, c.Attempt); err != nil {
			return nil, err
		}
		res.Granted = smHolds(s.state)
	}
	if c.Start && res.Granted && s.state == engine.StepLeased {
		s.state, s.jobAttempt = engine.StepRunning, c.Attempt
	}
	m.stepResult(res, s)
	return res, nil
}

func (m *stepModel) stepResult(res *engine.StepResult, s *smStep) {
	res.State, res.StepAttempt, res.Resource = s.state, s.attempt, s.resource
	res.Queued, res.WaitingDeps = s.queued, s.state == engine.StepWaitingDeps
}

func (m *stepModel) heartbeat(c *engine.StepHeartbeat) (engine.Result, error) {
	j, err := m.fenced(c.LeaseRef)
	if err != nil {
		return nil, err
	}
	s := j.steps[c.Step]
	res := &engine.StepResult{}
	if s == nil {
		if _, done := j.effects[c.Step]; done || j.beats[c.Step] > c.StepAttempt {
			return nil, engine.ErrStaleAttempt
		}
		j.beats[c.Step] = c.StepAttempt
		res.State, res.StepAttempt = engine.StepRunning, c.StepAttempt
		return res, nil
	}
	if s.attempt != c.StepAttempt || !smHolds(s.state) || s.jobAttempt != 0 && s.jobAttempt != c.Attempt {
		return nil, engine.ErrStaleAttempt
	}
	s.state, s.jobAttempt = engine.StepRunning, c.Attempt
	if s.leaseMS > 0 {
		s.leaseExpiry = max(s.leaseExpiry, m.now+s.leaseMS)
	}
	m.stepResult(res, s)
	return res, nil
}

func (m *stepModel) end(c *engine.EndStepAttempt) (engine.Result, error) {
	j, err := m.fenced(c.LeaseRef)
	if err != nil {
		return nil, err
	}
	if _, done := j.effects[c.Step]; done {
		return nil, engine.ErrStepCommitted
	}
	s := j.steps[c.Step]
	if s == nil {
		s = &smStep{state: engine.StepRunning, attempt: c.StepAttempt}
		j.steps[c.Step] = s
	} else if s.attempt != c.StepAttempt || !smHolds(s.state) || s.jobAttempt != 0 && s.jobAttempt != c.Attempt {
		return nil, engine.ErrStaleAttempt
	}
	if b, ok := j.beats[c.Step]; ok {
		if b > c.StepAttempt {
			return nil, engine.ErrStaleAttempt
		}
		delete(j.beats, c.Step)
	}
	s.leaseExpiry, s.jobAttempt = 0, 0
	switch c.Outcome {
	case engine.OutcomeNeedsUser:
		s.state = engine.StepNeedsUser
		s.answerDue = 0
		if c.AnswerTimeoutMS > 0 {
			s.answerDue = m.now + c.AnswerTimeoutMS
		}
		if c.LeaseMS > 0 {
			s.leaseMS = c.LeaseMS
		} else if s.leaseMS == 0 {
			s.leaseMS = machine.DefaultAnswerLeaseMS
		}
	case engine.OutcomeSwitchResource:
		s.state = engine.StepSwitchingResource
		if s.resource != "" && !slices.Contains(s.avoid, s.resource) {
			s.avoid = append(s.avoid, s.resource)
		}
		m.release(j, c.Step, s)
	default:
		s.state = engine.StepRetrying
		m.release(j, c.Step, s)
	}
	j.setLive(c.Step, s)
	res := &engine.StepResult{}
	m.stepResult(res, s)
	return res, nil
}

func (m *stepModel) answer(c *engine.AnswerStep) (engine.Result, error) {
	j := m.jobs[c.Job]
	switch {
	case j == nil:
		return nil, engine.ErrUnknownJob
	case !j.open:
		return nil, engine.ErrJobClosed
	}
	s := j.steps[c.Step]
	if s == nil || s.state != engine.StepNeedsUser {
		return nil, engine.ErrStepState
	}
	m.answerStep(j, c.Step, s)
	res := &engine.StepResult{}
	m.stepResult(res, s)
	return res, nil
}

func (m *stepModel) answerStep(j *smJob, name string, s *smStep) {
	s.state, s.attempt = engine.StepRunning, s.attempt+1
	s.answerDue, s.jobAttempt, s.leaseExpiry = 0, 0, m.now+s.leaseMS
	if s.resource != "" && !s.released {
		for i, h := range m.res[s.resource].holders {
			if h.Job == j.id && h.Step == name {
				m.res[s.resource].holders[i].StepAttempt = s.attempt
			}
		}
	}
}

func (m *stepModel) commit(c *engine.CommitStep) (engine.Result, error) {
	j, err := m.fenced(c.LeaseRef)
	if err != nil {
		return nil, err
	}
	if _, done := j.effects[c.Step]; done {
		return nil, engine.ErrStepCommitted
	}
	s := j.steps[c.Step]
	if s == nil {
		if b, ok := j.beats[c.Step]; ok {
			if c.StepAttempt != 0 && b > c.StepAttempt {
				return nil, engine.ErrStaleAttempt
			}
			delete(j.beats, c.Step)
		}
		j.effects[c.Step] = c.Failed
		m.promote(j, c.Step, c.Failed)
		return &engine.AppendResult{}, nil
	}
	if c.Reason != engine.ReasonNotStarted {
		switch {
		case c.StepAttempt != s.attempt:
			return nil, engine.ErrStaleAttempt
		case smHolds(s.state), s.state == engine.StepFailedFatal && c.Failed:
		default:
			return nil, engine.ErrStaleAttempt // the try no longer holds the step
		}
	} else {
		// A step fails where it waits only while it waits, and only from
		// its newest try (0: the engine numbers it so).
		switch s.state {
		case engine.StepPending, engine.StepWaitingDeps, engine.StepLeased, engine.StepRetrying, engine.StepSwitchingResource, engine.StepNeedsUser:
		default:
			return nil, engine.ErrStaleAttempt
		}
		if c.StepAttempt != 0 && c.StepAttempt != s.attempt {
			return nil, engine.ErrStaleAttempt
		}
	}
	if c.Failed {
		s.state = engine.StepFailed
	} else {
		s.state = engine.StepSucceeded
	}
	if s.queued {
		s.queued = false
		m.unqueue(j.id, c.Step)
	}
	s.leaseExpiry, s.answerDue, s.jobAttempt = 0, 0, 0
	m.release(j, c.Step, s)
	j.setLive(c.Step, s)
	j.effects[c.Step] = c.Failed
	m.promote(j, c.Step, c.Failed)
	return &engine.AppendResult{}, nil
}

// promote leases the steps waiting for done once all their dependencies
// succeeded, in the order they became live.
func (m *stepModel) promote(j *smJob, done string, failed bool) {
	if failed {
		return
	}
	for _, name := range slices.Clone(j.live) {
		s := j.steps[name]
		if s.state != engine.StepWaitingDeps || !slices.Contains(s.deps, done) {
			continue
		}
		ok := true
		for _, d := range s.deps {
			f, has := j.effects[d]
			ok = ok && has && !f
		}
		if ok {
			_ = m.acquire(j, name, s, 0) // no resource: it stays waiting
		}
	}
}

// expire handles every live step deadline due by now, in the index's
// order: time, job, step.
func (m *stepModel) expire() (engine.Result, error) {
	type due struct {
		at   int64
		job  engine.JobID
		step string
	}
	var dues []due
	for id, j := range m.jobs {
		if !j.open {
			continue
		}
		for name, s := range j.steps {
			at := s.leaseExpiry
			if s.state == engine.StepNeedsUser {
				at = s.answerDue
			}
			if at > 0 && at <= m.now && (smHolds(s.state) || s.state == engine.StepNeedsUser) {
				dues = append(dues, due{at, id, name})
			}
		}
	}
	sort.Slice(dues, func(a, b int) bool {
		if dues[a].at != dues[b].at {
			return dues[a].at < dues[b].at
		}
		if dues[a].job != dues[b].job {
			return dues[a].job < dues[b].job
		}
		return dues[a].step < dues[b].step
	})
	for _, d := range dues {
		j := m.jobs[d.job]
		s := j.steps[d.step]
		switch {
		case s.state == engine.StepNeedsUser && s.answerDue == d.at:
			m.answerStep(j, d.step, s)
		case smHolds(s.state) && s.leaseExpiry == d.at:
			m.timeout(j, d.step, s, true)
		}
	}
	return &engine.SweepResult{}, nil
}

// ---------------------------------------------------------------------------
// The driver.

type stepDriver struct {
	t     *testing.T
	r     *rand.Rand
	h     *harness
	m     *stepModel
	trace []string
	jobs  []engine.JobID // the open jobs commands aim at
	next  int            // names queues of new jobs
	// seen counts outcomes, so a run shows it reached the interesting cases.
	seen map[string]int
}

func runStepProperty(t *testing.T, seed int64, n int, meter *meterCheck) {
	d := &stepDriver{t: t, r: rand.New(rand.NewSource(seed)), h: newHarness(t),
		m: &stepModel{jobs: map[engine.JobID]*smJob{}, res: map[string]*smRes{}}, seen: map[string]int{}}
	d.h.now = 1_000_000
	d.h.meter = meter
	for range 3 {
		d.newJob()
	}
	for i := 0; i < n && !t.Failed(); i++ {
		d.step()
		if i%40 == 39 {
			d.verify()
		}
	}
	d.verify()
	keys := make([]string, 0, len(d.seen))
	for k := range d.seen {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%d", k, d.seen[k])
	}
	t.Logf("outcomes:%s", b.String())
}

func (d *stepDriver) fail(format string, a ...any) {
	d.t.Helper()
	tail := d.trace
	if len(tail) > 12 {
		tail = tail[len(tail)-12:]
	}
	d.t.Fatalf("%s\nlast commands:\n  %s", fmt.Sprintf(format, a...), strings.Join(tail, "\n  "))
}

// newJob creates a job on a queue of its own and claims it.
func (d *stepDriver) newJob() {
	d.next++
	q := fmt.Sprintf("q%d", d.next)
	id := d.h.must(&engine.CreateJob{Type: "t", Queue: q}).(*engine.CreateResult).Job
	c := d.h.must(&engine.Claim{Queue: q, Owner: "w", Max: 1, LeaseMS: 3_600_000}).(*engine.ClaimResult)
	d.m.jobs[id] = &smJob{id: id, queue: q, attempt: c.Jobs[0].Attempt, open: true,
		beats: map[string]uint32{}, effects: map[string]bool{}, steps: map[string]*smStep{}}
	d.jobs = append(d.jobs, id)
}

func (d *stepDriver) pick(list []string) string { return list[d.r.Intn(len(list))] }

func (d *stepDriver) ref() engine.LeaseRef {
	j := d.m.jobs[d.jobs[d.r.Intn(len(d.jobs))]]
	att := j.attempt
	if d.r.Intn(12) == 0 {
		att = max(att-1, 1) // a stale attempt, now and then
	}
	return engine.LeaseRef{Job: j.id, Attempt: att}
}

var smSteps = []string{"1", "2", "3", "4", "5", "6", "7", "8"}

// try picks a try number near a step's newest, so most writes are live.
func (d *stepDriver) try(ref engine.LeaseRef, name string) uint32 {
	var cur uint32 = 1
	if j := d.m.jobs[ref.Job]; j != nil {
		if s := j.steps[name]; s != nil {
			cur = s.attempt
		} else if b := j.beats[name]; b > 0 {
			cur = b
		}
	}
	switch d.r.Intn(8) {
	case 0:
		return cur + 1
	case 1:
		return max(cur-1, 1)
	}
	return max(cur, 1)
}

func (d *stepDriver) gen() engine.Command {
	ref := d.ref()
	name := d.pick(smSteps)
	caps := [][]string{nil, {"a"}, {"a"}, {"b"}, {"a", "b"}}[d.r.Intn(5)]
	switch k := d.r.Intn(100); {
	case k < 26:
		c := &engine.LeaseStep{LeaseRef: ref, Step: name, Name: "act", LeaseMS: int64(1000 * (1 + d.r.Intn(5))), Capabilities: caps,
			TimeoutFatal: d.r.Intn(4) == 0, Start: d.r.Intn(2) == 0}
		if d.r.Intn(5) == 0 {
			c.Selector = map[string]string{"zone": d.pick([]string{"x", "y"})}
		}
		if d.r.Intn(6) == 0 {
			c.DependsOn = []string{d.pick(slices.DeleteFunc(slices.Clone(smSteps), func(s string) bool { return s == name }))}
		}
		return c
	case k < 36:
		return &engine.StepHeartbeat{LeaseRef: ref, Step: name, StepAttempt: d.try(ref, name), LeaseMS: 3_600_000}
	case k < 50:
		c := &engine.EndStepAttempt{LeaseRef: ref, Step: name, Name: "act", StepAttempt: d.try(ref, name),
			Outcome: []engine.StepOutcome{engine.OutcomeRetry, engine.OutcomeSwitchResource, engine.OutcomeNeedsUser}[d.r.Intn(3)]}
		if c.Outcome == engine.OutcomeNeedsUser && d.r.Intn(2) == 0 {
			c.AnswerTimeoutMS = int64(500 * (1 + d.r.Intn(6)))
		}
		return c
	case k < 56:
		// Mostly to a step that asks.
		for _, id := range d.jobs {
			for n, s := range d.m.jobs[id].steps {
				if s.state == engine.StepNeedsUser && d.r.Intn(3) > 0 {
					return &engine.AnswerStep{Target: engine.Target{Job: id}, Step: n, Answer: []byte(`"ok"`)}
				}
			}
		}
		return &engine.AnswerStep{Target: engine.Target{Job: ref.Job}, Step: name, Answer: []byte(`"ok"`)}
	case k < 68:
		c := &engine.CommitStep{LeaseRef: ref, Step: name, Type: engine.EventActivityCompleted, StepAttempt: d.try(ref, name)}
		switch d.r.Intn(4) {
		case 0:
			c.Type, c.Failed = engine.EventActivityFailed, true
		case 1:
			c.Type, c.Failed, c.Reason, c.StepAttempt = engine.EventActivityFailed, true, engine.ReasonNotStarted, 0
			if d.r.Intn(2) == 0 {
				// From a try: the newest, an older one, or one never leased.
				c.StepAttempt = max(1, d.try(ref, name)+uint32(d.r.Intn(3))-1)
			}
		}
		return c
	case k < 80:
		d.h.now += int64(200 * (1 + d.r.Intn(15)))
		return &engine.ExpireSteps{Max: 1000}
	case k < 86:
		c := &engine.AddResource{ID: fmt.Sprintf("r%d", d.r.Intn(5)), Capacity: 1 + d.r.Intn(2), Capabilities: caps}
		if d.r.Intn(2) == 0 {
			c.Labels = map[string]string{"zone": d.pick([]string{"x", "y"})}
		}
		return c
	case k < 91:
		return &engine.DrainResource{ID: fmt.Sprintf("r%d", d.r.Intn(5)), Undrain: d.r.Intn(2) == 0}
	case k < 93:
		return &engine.RemoveResource{ID: fmt.Sprintf("r%d", d.r.Intn(5))}
	case k < 95:
		return &engine.Complete{LeaseRef: ref}
	case k < 96:
		return &engine.Cancel{Target: engine.Target{Job: ref.Job}}
	case k < 97:
		return &engine.Terminate{Target: engine.Target{Job: ref.Job}}
	}
	return &engine.Requeue{LeaseRef: ref, Reason: "test"}
}

func (d *stepDriver) step() {
	cmd := d.gen()
	cmd.Head().NowMS = d.h.now
	next, want, wantErr := d.m.apply(cmd)
	got, err := d.h.apply(cmd)
	d.trace = append(d.trace, fmt.Sprintf("%s -> %s, %v", propFmtCmd(cmd), propFmtRes(got), err))
	if (err == nil) != (wantErr == nil) || err != nil && !errors.Is(err, wantErr) {
		d.fail("%s: got %v, the model says %v", cmd.Kind(), err, wantErr)
	}
	outcome := "ok"
	if err != nil {
		outcome = machine.Outcome(err)
	} else if sr, ok := got.(*engine.StepResult); ok {
		outcome = sr.State.String()
		if sr.Queued {
			outcome = "queued"
		}
	}
	d.seen[cmd.Kind().String()+":"+outcome]++
	if err == nil {
		d.m = next
		if sr, ok := got.(*engine.StepResult); ok {
			w := want.(*engine.StepResult)
			if sr.State != w.State || sr.StepAttempt != w.StepAttempt || sr.Granted != w.Granted || sr.Queued != w.Queued ||
				sr.WaitingDeps != w.WaitingDeps || sr.Resource != w.Resource {
				d.fail("%s: got %s, the model says %s", cmd.Kind(), propFmtRes(sr), propFmtRes(w))
			}
		}
	}
	// A finished job is replaced, a requeued one claimed again.
	switch c := cmd.(type) {
	case *engine.Complete, *engine.Cancel, *engine.Terminate:
		if err == nil {
			id := smTarget(c)
			d.jobs = slices.DeleteFunc(d.jobs, func(x engine.JobID) bool { return x == id })
			d.newJob()
		}
	case *engine.Requeue:
		if err == nil {
			j := d.m.jobs[c.Job]
			cl := d.h.must(&engine.Claim{Header: engine.Header{NowMS: d.h.now}, Queue: j.queue, Owner: "w2", Max: 1, LeaseMS: 3_600_000}).(*engine.ClaimResult)
			j.attempt = cl.Jobs[0].Attempt
		}
	}
	d.compare()
}

// compare checks every step record, resource and the queue against the
// model, and that no resource is over its capacity.
func (d *stepDriver) compare() {
	viewOK(d.t, d.h.db, func(r *storage.Reader) error {
		for id, mj := range d.m.jobs {
			names := map[string]bool{}
			err := r.Scan(storage.StepPrefix(uint64(id)), nil, true, func(k, v []byte) (bool, error) {
				rec, err := machine.DecodeStepRecord(v)
				if err != nil {
					return false, err
				}
				names[rec.Step] = true
				ms := mj.steps[rec.Step]
				if ms == nil {
					d.fail("job %d step %s has a record the model does not: %+v", id, rec.Step, rec)
				}
				got := fmt.Sprintf("%s try %d job-try %d res %q released %v avoid %v queued %v lease %d answer %d",
					rec.State, rec.Attempt, rec.JobAttempt, rec.Resource, rec.Released, rec.Avoid, rec.WaiterSeq != 0, rec.LeaseExpiryMS, rec.AnswerDueMS)
				want := fmt.Sprintf("%s try %d job-try %d res %q released %v avoid %v queued %v lease %d answer %d",
					ms.state, ms.attempt, ms.jobAttempt, ms.resource, ms.released, ms.avoid, ms.queued, ms.leaseExpiry, ms.answerDue)
				if got != want {
					d.fail("job %d step %s: %s; the model says %s", id, rec.Step, got, want)
				}
				return true, nil
			})
			if err != nil {
				return err
			}
			for name := range mj.steps {
				if !names[name] {
					d.fail("job %d step %s: the model has a record the store does not", id, name)
				}
			}
			j, err := machine.ReadJob(r, id)
			if err != nil {
				return err
			}
			if !slices.Equal(j.LiveSteps, mj.live) && (len(j.LiveSteps) != 0 || len(mj.live) != 0) {
				d.fail("job %d lives %v, the model %v", id, j.LiveSteps, mj.live)
			}
		}
		all, err := machine.ReadResources(r)
		if err != nil {
			return err
		}
		if len(all) != len(d.m.res) {
			d.fail("%d resources, the model has %d", len(all), len(d.m.res))
		}
		for _, rs := range all {
			mr := d.m.res[rs.ID]
			if mr == nil {
				d.fail("resource %s is not in the model", rs.ID)
			}
			if len(rs.Holders) > rs.Capacity {
				d.fail("resource %s holds %d units of %d", rs.ID, len(rs.Holders), rs.Capacity)
			}
			if !reflect.DeepEqual(propNormalize(rs.Holders), propNormalize(mr.holders)) || rs.Drained != mr.drained {
				d.fail("resource %s: holders %+v drained %v; the model %+v drained %v", rs.ID, rs.Holders, rs.Drained, mr.holders, mr.drained)
			}
		}
		// The queue, live entries only, in order.
		var queue []smWaiter
		err = r.Scan(storage.WaiterPrefix, nil, false, func(k, _ []byte) (bool, error) {
			e, err := storage.ParseWaiterKey(k)
			if err != nil {
				return false, err
			}
			rec, err := machine.ReadStep(r.Get, engine.JobID(e.Job), e.Step)
			if err != nil {
				return false, err
			}
			j, err := machine.ReadJob(r, engine.JobID(e.Job))
			if err != nil {
				return false, err
			}
			if rec != nil && rec.WaiterSeq == e.Seq && !j.Status.Terminal() {
				queue = append(queue, smWaiter{engine.JobID(e.Job), e.Step})
			}
			return true, nil
		})
		if err != nil {
			return err
		}
		var want []smWaiter
		for _, w := range d.m.queue {
			if d.m.jobs[w.job].open && d.m.jobs[w.job].steps[w.step].queued {
				want = append(want, w)
			}
		}
		if !slices.Equal(queue, want) {
			d.fail("waiter queue %v, the model %v", queue, want)
		}
		return nil
	})
}

func (d *stepDriver) verify() {
	d.t.Helper()
	var errs []error
	viewOK(d.t, d.h.db, func(r *storage.Reader) error {
		errs = machine.Verify(r, 5)
		return nil
	})
	if len(errs) > 0 {
		d.fail("Verify: %v", errs)
	}
}

// smTarget is the job a command that ends one names.
func smTarget(cmd engine.Command) engine.JobID {
	switch c := cmd.(type) {
	case *engine.Complete:
		return c.Job
	case *engine.Cancel:
		return c.Job
	case *engine.Terminate:
		return c.Job
	}
	return 0
}
