package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/clock"
)

const (
	// demoLeaseMS is short so that the crashed worker's lease runs out within
	// the demo; real workers would use tens of seconds.
	demoLeaseMS = 500
	// stepDelay is how long each simulated activity takes.
	stepDelay = 30 * time.Millisecond
	// approvalDelay is how long the "person" takes to approve order-2.
	approvalDelay = 100 * time.Millisecond
	// demoTimeout bounds the whole demo: it normally takes under a second,
	// so hitting this means something is stuck.
	demoTimeout = 15 * time.Second
)

// demoConfig is what runDemo needs. Only cmd/ reads the wall clock, so the
// clock is passed in by the caller (the binary and the test pass clock.Wall()).
type demoConfig struct {
	// Dir is the database directory; empty means a fresh temporary one,
	// removed at the end. A given directory must be new or empty and is kept.
	Dir string
	// Out receives the progress lines and the timeline.
	Out io.Writer
	// Clock stamps commands and paces the demo.
	Clock clock.Clock
	// Timeline is the workflow id whose history is printed at the end.
	Timeline string
}

// runDemoCommand is "heddle demo".
func runDemoCommand(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", "", "database directory, new or empty, kept afterwards (default: a temporary directory, removed at the end)")
	timeline := fs.String("timeline", "order-1", "workflow id whose full history is printed at the end")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: heddle demo [--dir D] [--timeline ID]\n\n"+
			"Runs three orders through the engine with a hand-written worker: a crash and\n"+
			"recovery with fencing, a retried step, a signal and a durable timer.\n\n")
		fs.PrintDefaults()
	}
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	cfg := demoConfig{Dir: *dir, Out: stdout, Clock: clock.Wall(), Timeline: *timeline}
	if err := runDemo(ctx, cfg); err != nil {
		fmt.Fprintf(stderr, "heddle demo: FAILED: %v\n", err)
		return 1
	}
	return 0
}

// demo holds the state shared by the demo's phases.
type demo struct {
	cfg    demoConfig
	e      *engine.Engine
	rep    *reporter
	acts   *activities
	orders map[string]order
	jobs   map[string]engine.JobID
	// zombie is the write the crashed worker never made; refused is the
	// engine's answer when that worker "wakes up" and tries it anyway.
	zombie  *crashError
	refused error
	// schedErrs collects what the engine's scheduler reports.
	schedMu   sync.Mutex
	schedErrs []error
}

// runDemo runs the whole demo and returns nil only if every order completed
// and every check held.
func runDemo(ctx context.Context, cfg demoConfig) (err error) {
	ctx, cancel := context.WithTimeout(ctx, demoTimeout)
	defer cancel()
	d := &demo{cfg: cfg, rep: newReporter(cfg.Out, cfg.Clock), orders: map[string]order{}, jobs: map[string]engine.JobID{}}
	for _, o := range demoOrders() {
		d.orders[o.id] = o
	}
	if _, ok := d.orders[cfg.Timeline]; !ok {
		return fmt.Errorf("--timeline %q is not one of the demo's orders (order-1, order-2, order-3)", cfg.Timeline)
	}
	dir, cleanup, err := demoDir(cfg.Dir)
	if err != nil {
		return err
	}
	defer cleanup()
	if err := d.open(dir); err != nil {
		return err
	}
	defer func() {
		if cerr := d.e.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("close engine: %w", cerr)
		}
	}()
	return d.phases(ctx)
}

// phases runs the demo's chapters in order, stopping at the first failure.
func (d *demo) phases(ctx context.Context) error {
	for _, phase := range []func(context.Context) error{
		d.createOrders, d.crashFirstWorker, d.runSecondWorker, d.checkOutcome, d.printTimeline, d.verifyStore,
	} {
		if err := phase(ctx); err != nil {
			return err
		}
	}
	return nil
}

// demoDir returns the database directory and how to clean it up. A given
// directory must be new or empty, so that the claims of the demo's workers
// can only meet the demo's own jobs.
func demoDir(dir string) (string, func(), error) {
	if dir == "" {
		tmp, err := os.MkdirTemp("", "heddle-demo-")
		if err != nil {
			return "", nil, err
		}
		return tmp, func() { os.RemoveAll(tmp) }, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", nil, err
	}
	if len(entries) > 0 {
		return "", nil, fmt.Errorf("--dir %s is not empty: give a new or empty directory", dir)
	}
	return dir, func() {}, nil
}

// open starts the engine with its scheduler, which fires the timer and
// reclaims the crashed worker's job: the demo never proposes those itself.
func (d *demo) open(dir string) error {
	where := "kept"
	if d.cfg.Dir == "" {
		where = "temporary, removed at the end"
	}
	d.rep.plain("heddle demo: the core engine driven by a hand-written worker loop (the SDK comes later)")
	d.rep.plain("database: %s (%s)\n", dir, where)
	e, err := engine.Open(engine.Config{Dir: dir, Clock: d.cfg.Clock, OnSchedulerError: d.schedulerError})
	if err != nil {
		return fmt.Errorf("open engine: %w", err)
	}
	d.e = e
	d.acts = &activities{clock: d.cfg.Clock, delay: stepDelay, faults: map[string]int{"order-3/charge-card": 1}}
	return nil
}

// schedulerError runs on the scheduler's goroutine.
func (d *demo) schedulerError(err error) {
	d.schedMu.Lock()
	defer d.schedMu.Unlock()
	d.schedErrs = append(d.schedErrs, err)
}

// createOrders starts the three orders.
func (d *demo) createOrders(ctx context.Context) error {
	for _, o := range demoOrders() {
		res, err := d.e.Create(ctx, engine.CreateJob{WorkflowID: o.id, Type: orderType, Queue: orderQueue, Input: []byte(o.input)})
		if err != nil {
			return fmt.Errorf("create %s: %w", o.id, err)
		}
		d.jobs[o.id] = res.Job
		d.rep.order(o.id, "created as job %d in queue %q: %s", res.Job, orderQueue, o.story)
	}
	return nil
}

// newWorker returns a worker of the demo's orders.
func (d *demo) newWorker(name string) *worker {
	return &worker{name: name, e: d.e, clock: d.cfg.Clock, leaseMS: demoLeaseMS,
		acts: d.acts, orders: d.orders, rep: d.rep}
}

// crashFirstWorker lets worker-a claim order-1 and crash before committing
// charge-card. It keeps the write worker-a never made, for the fencing check.
func (d *demo) crashFirstWorker(ctx context.Context) error {
	a := d.newWorker("worker-a")
	a.crash = func(wf, step string, attempt uint64) bool {
		return wf == "order-1" && step == "charge-card" && attempt == 1
	}
	cj, ok, err := a.claim(ctx)
	if err != nil || !ok || cj.WorkflowID != "order-1" {
		return fmt.Errorf("worker-a should have claimed order-1 (got %q, %v): %v", cj.WorkflowID, ok, err)
	}
	err = a.process(ctx, cj)
	if !errors.As(err, &d.zombie) {
		return fmt.Errorf("worker-a should have crashed on order-1, got: %v", err)
	}
	j, err := d.e.Describe(ctx, engine.Target{Job: cj.Job})
	if err != nil {
		return err
	}
	d.rep.order("order-1", "worker-a CRASHED after running charge-card, before committing it: no more heartbeats")
	d.rep.order("order-1", "job stays %s under attempt %d; its lease runs out at +%dms and the scheduler will reclaim it",
		j.Status, j.Attempt, d.rep.offset(j.LeaseExpiryMS))
	return nil
}

// runSecondWorker runs worker-b until every order completed, playing the
// person who approves order-2 meanwhile.
func (d *demo) runSecondWorker(ctx context.Context) error {
	b := d.newWorker("worker-b")
	b.onClaim = d.lateWriteOnReclaim
	wctx, stopWorker := context.WithCancel(ctx)
	defer stopWorker()
	bg := startBackground(func() error { return b.run(wctx) })
	d.rep.event("worker-b started, polling queue %q", orderQueue)
	err := d.approve(ctx, bg, "order-2", "approved")
	if err == nil {
		err = d.until(ctx, bg, d.allCompleted)
	}
	stopWorker()
	if werr := bg.wait(); err == nil && werr != nil {
		err = fmt.Errorf("worker-b: %w", werr)
	}
	if err == nil {
		d.rep.event("all %d orders completed; worker-b stopped", len(d.jobs))
	}
	return err
}

// lateWriteOnReclaim plays the crashed worker waking up: the moment worker-b
// holds order-1 under a newer attempt, the old attempt tries to commit the
// step it had finished. The engine must refuse it as stale.
func (d *demo) lateWriteOnReclaim(ctx context.Context, cj engine.ClaimedJob) error {
	z := d.zombie
	if cj.WorkflowID != z.wf || cj.Attempt <= z.ref.Attempt || d.refused != nil {
		return nil
	}
	_, err := d.e.CommitStep(ctx, engine.CommitStep{LeaseRef: z.ref, Step: z.step, Type: evActivityCompleted, Payload: z.payload})
	if !isStale(err) {
		return fmt.Errorf("FENCING BROKEN: late commit of %s by attempt %d was not refused as stale (err=%v)", z.step, z.ref.Attempt, err)
	}
	d.refused = err
	d.rep.order(z.wf, "worker-a wakes up and commits %s as attempt %d: refused: %v", z.step, z.ref.Attempt, err)
	return nil
}

// approve waits until the order waits for the signal, then sends it after a
// short pause, as a person would.
func (d *demo) approve(ctx context.Context, bg *background, wf, name string) error {
	waiting := func(ctx context.Context) (bool, error) {
		j, err := d.e.Describe(ctx, engine.Target{WorkflowID: wf})
		return err == nil && j.Status == engine.StatusWaiting, err
	}
	if err := d.until(ctx, bg, waiting); err != nil {
		return err
	}
	if err := sleep(ctx, d.cfg.Clock, approvalDelay); err != nil {
		return err
	}
	res, err := d.e.Signal(ctx, engine.Signal{Target: engine.Target{WorkflowID: wf}, Name: name, Payload: []byte(`{"by":"alice"}`)})
	if err != nil {
		return fmt.Errorf("signal %s to %s: %w", name, wf, err)
	}
	d.rep.order(wf, "alice sends signal %s: signal_received at seq %d, woke the job: %v", name, res.Seq, res.Woke)
	return nil
}

// allCompleted reports whether every order's job is Completed.
func (d *demo) allCompleted(ctx context.Context) (bool, error) {
	for wf, id := range d.jobs {
		j, err := d.e.Describe(ctx, engine.Target{Job: id})
		if err != nil {
			return false, err
		}
		if j.Status.Terminal() && j.Status != engine.StatusCompleted {
			return false, fmt.Errorf("%s ended %s", wf, j.Status)
		}
		if j.Status != engine.StatusCompleted {
			return false, nil
		}
	}
	return true, nil
}

// until polls cond until it holds, failing early if the worker stops.
func (d *demo) until(ctx context.Context, bg *background, cond func(context.Context) (bool, error)) error {
	for {
		ok, err := cond(ctx)
		if ok || err != nil {
			return err
		}
		select {
		case <-bg.done:
			return fmt.Errorf("worker-b stopped early: %v", bg.err)
		default:
		}
		if err := sleep(ctx, d.cfg.Clock, 10*time.Millisecond); err != nil {
			return fmt.Errorf("waiting for the orders: %w", err)
		}
	}
}

// background is one goroutine whose error is read after done is closed.
type background struct {
	done chan struct{}
	err  error
}

func startBackground(fn func() error) *background {
	bg := &background{done: make(chan struct{})}
	go func() {
		defer close(bg.done)
		bg.err = fn()
	}()
	return bg
}

func (bg *background) wait() error {
	<-bg.done
	return bg.err
}
