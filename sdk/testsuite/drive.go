package testsuite

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/internal/listfilter"
	"github.com/heddlewf/heddle/storage"
)

// drive runs the workflow until the root run ends. Each round it looks at
// the whole environment (look): when every run is idle and nothing is due,
// it moves the clock to the earliest deadline ahead; while activity code
// runs, it moves the clock there once as much real time has passed;
// otherwise it waits for the next commit or the next change a worker
// reports. Nothing happening for the test timeout is a panic.
func (env *TestWorkflowEnvironment) drive() {
	lr := env.run
	ctx := context.Background()
	lastProgress := time.Now()
	var realTimer *time.Timer // while activity code runs: the next deadline in real time
	var realFor time.Time
	defer func() {
		if realTimer != nil {
			realTimer.Stop()
		}
	}()
	for {
		committed := lr.eng.Committed()
		select { // a poke before this look is seen by it
		case <-env.notify:
		default:
		}
		done, next, result, err := outcomeOf(ctx, lr.eng, lr.root)
		if err != nil && !done {
			panic(fmt.Sprintf("testsuite: reading the workflow's run: %v", err))
		}
		if next != 0 {
			lr.root = next // retried: follow the new run
			continue
		}
		if done {
			env.completed, env.result, env.err = true, result, err
			return
		}
		s, err := env.look(ctx)
		if err != nil {
			panic(fmt.Sprintf("testsuite: reading the engine's state: %v", err))
		}
		if s.fatal != "" {
			panic(s.fatal)
		}
		if len(s.unserved) > 0 {
			for _, q := range s.unserved {
				env.ensureWorker(q)
			}
			continue
		}
		if s.quiet && !s.next.IsZero() {
			// Only a look that nothing changed under is a sound reason to
			// move the clock; after a change, look again. (The look reads
			// the engine in one view, so a commit whose notification is
			// still on its way cannot make it see a state that never was;
			// this check is for what the workers reported before it.)
			if !changedSince(committed, env.notify) {
				env.advance(s.next)
				lastProgress = time.Now()
			}
			continue
		}
		var realC <-chan time.Time
		switch {
		case s.busy && !s.next.IsZero():
			if realTimer == nil || !realFor.Equal(s.next) {
				if realTimer != nil {
					realTimer.Stop()
				}
				realTimer, realFor = time.NewTimer(max(s.next.Sub(env.tl.Now()), 0)), s.next
			}
			realC = realTimer.C
		case realTimer != nil:
			realTimer.Stop()
			realTimer = nil
		}
		idle := time.NewTimer(max(env.testTimeout-time.Since(lastProgress), 0))
		select {
		case <-committed:
			lastProgress = time.Now()
		case <-env.notify:
			lastProgress = time.Now()
		case <-realC:
			realTimer = nil
			env.advance(realFor)
			lastProgress = time.Now()
		case <-idle.C:
			panic(env.stuck(ctx, s))
		}
		idle.Stop()
	}
}

// changedSince reports whether anything happened since a look began.
func changedSince(committed <-chan struct{}, notify <-chan struct{}) bool {
	select {
	case <-committed:
		return true
	default:
	}
	select {
	case <-notify:
		return true
	default:
		return false
	}
}

// advance moves the clock to t, runs the delayed callbacks due by then,
// and then fires the engine's and the workers' timers due by then.
func (env *TestWorkflowEnvironment) advance(t time.Time) {
	env.tl.set(t)
	if advanceBetweenSteps != nil {
		advanceBetweenSteps()
	}
	env.runDueCallbacks()
	env.tl.fire()
}

// advanceBetweenSteps, when set (by tests), runs after advance moved the
// clock and before it runs the callbacks: a scheduler that looks there
// must not fire the timers of the new instant.
var advanceBetweenSteps func()

// state is what one look found.
type state struct {
	// quiet: every run is idle (waiting, or in a turn that waits with no
	// activity code running and nothing unseen in its history), nothing is
	// ready to claim and nothing is due.
	quiet bool
	// busy: activity code is running.
	busy bool
	// next is the earliest deadline ahead of the clock: an engine timer,
	// retry delay, job deadline or step deadline, a turn's retry delay, a
	// mocked call's After, a delayed callback. Zero: none.
	next time.Time
	// why says what kept the look from being quiet, for the stuck message.
	why []string
	// unserved are queues with work and no worker yet.
	unserved []string
	// fatal is a reason to give up now (a type nobody registered).
	fatal string
}

func (s *state) earliest(t time.Time) {
	if !t.IsZero() && (s.next.IsZero() || t.Before(s.next)) {
		s.next = t
	}
}

func (s *state) notQuiet(format string, args ...any) {
	s.quiet = false
	s.why = append(s.why, fmt.Sprintf(format, args...))
}

// look reads the environment: the workers' reports first, then the
// engine, so that a turn reported idle is checked against the newest
// history.
func (env *TestWorkflowEnvironment) look(ctx context.Context) (state, error) {
	s := state{quiet: true}
	env.mu.Lock()
	turns := make(map[uint64]turnState, len(env.turns))
	for k, v := range env.turns {
		turns[k] = v
	}
	running := maps.Clone(env.running)
	parked := map[string]int{}
	for _, p := range env.parked {
		parked[p.run]++
		s.earliest(p.at)
	}
	for _, cb := range env.callbacks {
		s.earliest(cb.due)
	}
	env.mu.Unlock()

	// The engine's side is read in one consistent view. Separate reads
	// could straddle a commit whose notification (Committed) comes after
	// its data can be read, which changedSince then misses: deadlines read
	// during a turn (no timer yet) and the jobs read after its Wait (the
	// run Waiting) make an idle-looking state that never was, with only
	// the run timeout ahead.
	var ev engineView
	if err := env.run.eng.View(ctx, func(r *storage.Reader) error {
		var err error
		ev, err = readEngine(r, env.run.root, env.tl.Now())
		return err
	}); err != nil {
		return s, err
	}
	if !ev.rootOpen {
		// The run ended (or was retried) since drive read it: nothing is
		// left to skip time for.
		s.notQuiet("run %d is not open", env.run.root)
	}
	nowMS := env.tl.Now().UnixMilli()
	// Timers, retry delays (and deferrals), job deadlines and step
	// deadlines (a step lease's expiry, the timeout of a person's answer);
	// not leases: a job holding one is Running and judged below, and the
	// lease index keeps stale entries of jobs that moved on. A stale step
	// deadline only makes the clock stop early, and the scheduler's sweep
	// drops it once due. Schedules (the last index) are not the
	// environment's: nothing in it creates one.
	for i, what := range []string{"a timer", "", "a retry delay", "a job deadline", "a step deadline"} {
		if what == "" || ev.deadlines[i] == 0 {
			continue
		}
		if ev.deadlines[i] <= nowMS {
			s.notQuiet("%s is due", what)
			continue
		}
		s.earliest(time.UnixMilli(ev.deadlines[i]))
	}
	for _, j := range ev.queued {
		if j.DeferredReason != "" {
			s.fatal = fmt.Sprintf("testsuite: job %d (%s) cannot run: %s; %s", j.ID, j.Type, j.DeferredReason, cannotRunHint(j.Type))
			return s, nil
		}
		s.notQuiet("job %d (%s) is ready to claim", j.ID, j.Type)
		if env.run.workers[j.Queue] == nil && !slices.Contains(s.unserved, j.Queue) {
			s.unserved = append(s.unserved, j.Queue)
		}
	}
	// A Running job is idle when its turn waits having seen its whole
	// history, with every inline activity it started inside its function
	// and waiting for the clock; or, for an activity on another queue,
	// when its call waits for the clock. Calls of functions that take no
	// context name no run: they make up what the turns' counts lack.
	unnamed := 0
	for _, j := range ev.running {
		id := runID(j.ID)
		t, ok := turns[uint64(j.ID)]
		switch {
		case !ok && strings.HasPrefix(j.Type, engine.ActivityTypePrefix) && running[id] > 0:
			// Its one call waits for the clock, unless the busy check
			// below finds it running.
		case !ok && strings.HasPrefix(j.Type, engine.ActivityTypePrefix):
			unnamed++ // idle only if an unnamed call waiting is its
		case !ok:
			s.notQuiet("job %d (%s) is running", j.ID, j.Type)
		case t.seenSeq != j.LastSeq:
			s.notQuiet("job %d (%s) has events its turn has not seen", j.ID, j.Type)
		case t.inflight < running[id]:
			s.notQuiet("job %d (%s) started %d inline activities, %d are inside their function", j.ID, j.Type, t.inflight, running[id])
		default:
			unnamed += t.inflight - running[id]
			s.earliest(t.wakeAt)
		}
	}
	if unnamed != running[""] {
		s.notQuiet("%d activity calls started are not inside their function", unnamed-running[""])
	}
	for id, n := range running {
		if n > parked[id] {
			s.busy = true
			s.notQuiet("%d activity calls of run %q are running", n-parked[id], id)
		}
	}
	return s, nil
}

// engineView is what a look reads of the engine, from one view of it.
type engineView struct {
	// deadlines are the scheduler's earliest deadlines
	// (embedded.ReadDeadlines).
	deadlines [6]int64
	// queued and running are the jobs in those states.
	queued, running []*engine.Job
	// rootOpen: the workflow's run is not closed.
	rootOpen bool
}

// readEngine reads an engineView through r; root is the workflow's run
// and now the clock's time (for the list filters).
func readEngine(r *storage.Reader, root engine.JobID, now time.Time) (engineView, error) {
	var v engineView
	var err error
	if v.deadlines, err = embedded.ReadDeadlines(r); err != nil {
		return v, err
	}
	if lookBetweenReads != nil {
		lookBetweenReads()
	}
	if v.queued, err = listIn(r, engine.StatusQueued, now); err != nil {
		return v, err
	}
	if v.running, err = listIn(r, engine.StatusRunning, now); err != nil {
		return v, err
	}
	j, err := machine.ReadJob(r, root)
	if err != nil {
		return v, err
	}
	v.rootOpen = !j.Status.Terminal()
	return v, nil
}

// lookBetweenReads, when set (by tests), runs between a look's reads of
// the engine: a commit there must not be seen by the reads after it.
var lookBetweenReads func()

// listIn lists every job in status st through r.
func listIn(r *storage.Reader, st engine.Status, now time.Time) ([]*engine.Job, error) {
	q := engine.ListQuery{Status: st, Limit: engine.MaxPage, Order: engine.ListStartAsc}
	f, err := listfilter.Compile(q, now)
	if err != nil {
		return nil, err
	}
	return allPages(q, func(q engine.ListQuery) (*engine.ListPage, error) { return machine.ListJobs(r, q, f) })
}

// listAll lists every job in status st.
func listAll(ctx context.Context, svc engine.Service, st engine.Status) ([]*engine.Job, error) {
	q := engine.ListQuery{Status: st, Limit: engine.MaxPage, Order: engine.ListStartAsc}
	return allPages(q, func(q engine.ListQuery) (*engine.ListPage, error) { return svc.List(ctx, q) })
}

// allPages gathers the jobs of every page of q, each read by list.
func allPages(q engine.ListQuery, list func(engine.ListQuery) (*engine.ListPage, error)) ([]*engine.Job, error) {
	var out []*engine.Job
	for {
		page, err := list(q)
		if err != nil {
			return nil, err
		}
		out = append(out, page.Jobs...)
		if page.Next == 0 {
			return out, nil
		}
		q.After = page.Next
	}
}

// turnWaiting is the workers' sdkhook.TurnProbe: a run's turn waits.
func (env *TestWorkflowEnvironment) turnWaiting(job, seenSeq uint64, inflight int, wakeAt time.Time) func() {
	token := new(int)
	env.mu.Lock()
	env.turns[job] = turnState{seenSeq: seenSeq, inflight: inflight, wakeAt: wakeAt, token: token}
	env.mu.Unlock()
	env.poke()
	return func() {
		env.mu.Lock()
		if env.turns[job].token == token {
			delete(env.turns, job)
		}
		env.mu.Unlock()
		env.poke()
	}
}

// stuck describes why ExecuteWorkflow gave up.
func (env *TestWorkflowEnvironment) stuck(ctx context.Context, s state) string {
	var b strings.Builder
	fmt.Fprintf(&b, "testsuite: test timeout: nothing happened for %v (SetTestTimeout) and the workflow has not ended; the clock reads %s\n",
		env.testTimeout, env.tl.Now().Format(time.RFC3339Nano))
	if s.quiet {
		b.WriteString("every run is idle and nothing is scheduled: the workflow waits for something only the test can send (a signal?)\n")
	}
	for _, w := range s.why {
		fmt.Fprintf(&b, "  - %s\n", w)
	}
	for _, st := range []engine.Status{engine.StatusRunning, engine.StatusQueued, engine.StatusWaiting, engine.StatusParked, engine.StatusRetrying} {
		jobs, err := listAll(ctx, env.run.eng, st)
		if err != nil {
			continue
		}
		for _, j := range jobs {
			fmt.Fprintf(&b, "  job %d %s workflow %q type %q queue %q last seq %d", j.ID, j.Status, j.WorkflowID, j.Type, j.Queue, j.LastSeq)
			if j.Wait != nil {
				fmt.Fprintf(&b, " waiting for %+v", *j.Wait)
			}
			b.WriteString("\n")
		}
	}
	env.mu.Lock()
	defer env.mu.Unlock()
	fmt.Fprintf(&b, "  activity calls running by run %v, waiting on the clock %v; idle turns %v; next deadline %v\n",
		env.running, env.parked, env.turns, s.next)
	for _, err := range env.errs {
		fmt.Fprintf(&b, "  worker error: %v\n", err)
	}
	return b.String()
}
