package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/heddlewf/heddle/cmd/heddle/internal/demo"
	"github.com/heddlewf/heddle/engine"

	"github.com/heddlewf/heddle/engine/clock"
	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/storage"
	"github.com/spf13/cobra"
)

const (
	// ordersQueue is served by worker-1; recoveryQueue by worker-a, which
	// the demo stops mid-workflow, and then by worker-b.
	ordersQueue   = "orders"
	recoveryQueue = "orders-east"
	// demoLease is worker-a's lease: short, so that it lapses within the
	// demo once worker-a stops heartbeating. Real workers use tens of seconds.
	demoLease = 300 * time.Millisecond
	// stopGrace is how long worker-a's Stop waits for its jobs to drain:
	// too short for the held activity, so its job is abandoned to its lease.
	stopGrace = 50 * time.Millisecond
	// approvalDelay is how long the "person" takes to approve order-3.
	approvalDelay = 100 * time.Millisecond
	// demoTimeout bounds the whole demo: it normally takes about a second,
	// so hitting this means something is stuck.
	demoTimeout = 20 * time.Second
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

// newDemoCommand is "heddle demo".
func newDemoCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "demo [--dir DIR] [--timeline ID]",
		Short: "run the SDK demo: order sagas, a retry, a timer, a signal, a child, compensation, recovery, steps",
		Long: "Runs four order sagas on the SDK: workflows in plain Go, workers, a client.\n" +
			"Shows a retried activity, a durable timer, a signal, a child workflow,\n" +
			"compensation, and a workflow resumed by a new worker after its first stopped.\n" +
			"A fifth order shows steps as engine state: a pool of browsers with a broken one\n" +
			"switched away from, a critic that sends a photo back, and a captcha step that\n" +
			"waits for a person (NEEDS_USER), whom the demo plays.",
		Args: noArgs,
	}
	var dir, timeline string
	cmd.Flags().StringVar(&dir, "dir", "", "database `directory`, new or empty, kept afterwards (default: a temporary one, removed at the end)")
	cmd.Flags().StringVar(&timeline, "timeline", "order-1", "workflow `id` whose full history is printed at the end")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
		defer stop()
		if len(args) == 1 {
			if err := runReviewDemo(ctx, dir, cmd.OutOrStdout()); err != nil {
				return fmt.Errorf("FAILED: %w", err)
			}
			return nil
		}
		cfg := demoConfig{Dir: dir, Out: cmd.OutOrStdout(), Clock: clock.Wall(), Timeline: timeline}
		if err := runDemo(ctx, cfg); err != nil {
			return fmt.Errorf("FAILED: %w", err)
		}
		return nil
	}
	withReviewDemo(cmd)
	return cmd
}

// demoOrder is one order of the demo, where it runs and what it shows.
type demoOrder struct {
	demo.Order
	queue string
	story string
	// wantFailed: the order must end Failed (after compensating).
	wantFailed bool
}

func demoOrders() []demoOrder {
	return []demoOrder{
		{demo.Order{ID: "order-1", Item: "loom", Qty: 1, Amount: 24900}, recoveryQueue,
			"its worker is stopped mid-workflow; a new worker resumes it", false},
		{demo.Order{ID: "order-2", Item: "shuttle", Qty: 3, Amount: 4500}, ordersQueue,
			"the card network times out once; the retry policy retries", false},
		{demo.Order{ID: "order-3", Item: "heddle-frame", Qty: 40, Amount: 1299000, NeedsApproval: true}, ordersQueue,
			"a large order: waits for the signal approved", false},
		{demo.Order{ID: "order-4", Item: "yarn", Qty: 12, Amount: 3600}, ordersQueue,
			"shipping fails for good: the saga compensates and fails", true},
	}
}

// demoRun holds the state shared by the demo's phases.
type demoRun struct {
	cfg    demoConfig
	e      *embedded.Engine
	c      client.Client
	rep    *reporter
	shop   *demo.ShopState
	orders []demoOrder
	runs   map[string]client.WorkflowRun
	// results and errs hold what each run's Get returned.
	mu      sync.Mutex
	results map[string]string
	errs    map[string]error
	// problems collects scheduler errors and unexpected worker errors.
	problems []error
	// stopErr is what worker-a's Stop returned.
	stopErr error
}

// runDemo runs the whole demo and returns nil only if every check held.
func runDemo(ctx context.Context, cfg demoConfig) (err error) {
	ctx, cancel := context.WithTimeout(ctx, demoTimeout)
	defer cancel()
	d := &demoRun{cfg: cfg, rep: newReporter(cfg.Out, cfg.Clock), orders: demoOrders(),
		runs: map[string]client.WorkflowRun{}, results: map[string]string{}, errs: map[string]error{}}
	if !slices.ContainsFunc(d.orders, func(o demoOrder) bool { return o.ID == cfg.Timeline }) {
		return fmt.Errorf("--timeline %q is not one of the demo's orders (order-1 … order-4)", cfg.Timeline)
	}
	dir, cleanup, err := demoDir(cfg.Dir)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := cleanup(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("removing the temporary database: %w", cerr))
		}
	}()
	// A demo whose story could not be printed has not shown anything.
	defer func() {
		if werr := d.rep.err(); werr != nil {
			err = errors.Join(err, fmt.Errorf("printing: %w", werr))
		}
	}()
	where := "kept"
	if cfg.Dir == "" {
		where = "temporary, removed at the end"
	}
	d.rep.plain("heddle demo: order sagas written against sdk/workflow, run by sdk/worker, started by sdk/client")
	d.rep.plain("database: %s (%s)\n", dir, where)
	d.e, err = embedded.Open(embedded.Config{Dir: dir, Clock: cfg.Clock, OnSchedulerError: d.problem})
	if err != nil {
		return fmt.Errorf("open engine: %w", err)
	}
	defer func() {
		if cerr := d.e.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("close engine: %w", cerr)
		}
	}()
	d.c = client.New(d.e)
	d.shop = demo.NewShopState(d.rep.order, demo.Faults{ChargeFailures: map[string]int{"order-2": 1},
		ShipFails: map[string]bool{"order-4": true}, HoldConfirmation: "order-1"})
	if err := d.story(ctx); err != nil {
		return err
	}
	if err := d.check(ctx); err != nil {
		return err
	}
	if err := d.printTimeline(ctx); err != nil {
		return err
	}
	d.summary(ctx)
	return d.verifyStore()
}

// demoDir returns the database directory and how to clean it up. A given
// directory must be new or empty, so that the demo's workers meet only the
// demo's own jobs.
func demoDir(dir string) (string, func() error, error) {
	if dir == "" {
		tmp, err := os.MkdirTemp("", "heddle-demo-")
		if err != nil {
			return "", nil, err
		}
		return tmp, func() error { return os.RemoveAll(tmp) }, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", nil, err
	}
	if len(entries) > 0 {
		return "", nil, fmt.Errorf("--dir %s is not empty: give a new or empty directory", dir)
	}
	return dir, func() error { return nil }, nil
}

func (d *demoRun) problem(err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.problems = append(d.problems, err)
}

// newWorker starts a worker of queue with every workflow and activity.
// worker-a's errors after it is abandoned are expected and only printed.
func (d *demoRun) newWorker(name, queue string, lease time.Duration, expectErrors bool) (worker.Worker, error) {
	opts := worker.Options{Identity: name, LeaseTTL: lease, Clock: d.cfg.Clock,
		OnError: func(job engine.JobID, err error) {
			if expectErrors {
				d.rep.event("%s: job %d left to its lease: %v", name, job, err)
				return
			}
			d.problem(fmt.Errorf("%s, job %d: %w", name, job, err))
		}}
	w := worker.New(client.New(d.e), queue, opts)
	demo.NewShop(d.shop, name).Register(w)
	if err := w.Start(); err != nil {
		return nil, err
	}
	d.rep.event("%s started on queue %q (lease %v)", name, queue, lease)
	return w, nil
}

// story starts the workers and the orders, stops worker-a in the middle of
// order-1 and resumes it on worker-b, approves order-3, and waits for every
// order to end.
func (d *demoRun) story(ctx context.Context) (err error) {
	// stop stops a worker at the end, waiting for its jobs to drain.
	stop := func(w worker.Worker, name string) {
		if serr := w.Shutdown(context.Background()); serr != nil {
			err = errors.Join(err, fmt.Errorf("stop %s: %w", name, serr))
		}
	}
	w1, err := d.newWorker("worker-1", ordersQueue, 5*time.Second, false)
	if err != nil {
		return err
	}
	defer stop(w1, "worker-1")
	wa, err := d.newWorker("worker-a", recoveryQueue, demoLease, true)
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	for _, o := range d.orders {
		run, err := d.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: o.ID, TaskQueue: o.queue}, demo.OrderWorkflow, o.Order)
		if err != nil {
			return errors.Join(fmt.Errorf("start %s: %w", o.ID, err), wa.Shutdown(context.Background()))
		}
		d.runs[o.ID] = run
		d.rep.order(o.ID, "started (run %s, queue %s): %s", run.GetRunID(), o.queue, o.story)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var res string
			err := run.Get(ctx, &res)
			d.mu.Lock()
			d.results[o.ID], d.errs[o.ID] = res, err
			d.mu.Unlock()
			if err != nil {
				d.rep.order(o.ID, "workflow FAILED: %v", err)
			} else {
				d.rep.order(o.ID, "workflow completed: %s", res)
			}
		}()
	}
	wg.Add(1)
	go func() { defer wg.Done(); d.approve(ctx, "order-3") }()
	listing, err := d.startListing(ctx)
	if err != nil {
		return errors.Join(fmt.Errorf("start %s: %w", demo.ListingID, err), wa.Shutdown(context.Background()))
	}
	wg.Add(2)
	go func() { defer wg.Done(); d.answerCaptcha(ctx) }()
	go func() {
		defer wg.Done()
		var res string
		err := listing.Get(ctx, &res)
		d.mu.Lock()
		d.results[demo.ListingID], d.errs[demo.ListingID] = res, err
		d.mu.Unlock()
		if err != nil {
			d.rep.order(demo.ListingID, "workflow FAILED: %v", err)
		} else {
			d.rep.order(demo.ListingID, "workflow completed: %s", res)
		}
	}()

	// Recovery: wait for order-1 to be inside SendConfirmation, then stop
	// worker-a with a grace too short for it, and start worker-b.
	wb, recErr := d.recover(ctx, wa)
	if wb != nil {
		defer stop(wb, "worker-b")
	}
	if recErr != nil {
		d.shop.ReleaseHeld()
		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		// An ended context abandons worker-a's jobs to their leases,
		// which is what is wanted here; the context's error that Stop
		// returns for it says only that.
		_ = wa.Shutdown(cancelled)
	}
	wg.Wait()
	return recErr
}

// recover stops worker-a while order-1 is held inside its third activity,
// a hung call: the drain cannot finish, so worker-a is abandoned to its
// lease, and worker-b resumes order-1 once the lease lapses. Only then does
// the hung call return, and worker-a's late commit is fenced off.
func (d *demoRun) recover(ctx context.Context, wa worker.Worker) (worker.Worker, error) {
	select {
	case <-d.shop.Held():
	case <-ctx.Done():
		return nil, fmt.Errorf("order-1 never reached SendConfirmation: %w", ctx.Err())
	}
	hist, err := d.c.GetWorkflowHistory(ctx, "order-1", "")
	if err != nil {
		return nil, err
	}
	var done []string
	for _, ev := range hist {
		if ev.Commit {
			done = append(done, ev.Name)
		}
	}
	d.rep.order("order-1", "committed so far: %s; stopping worker-a with a %v grace", strings.Join(done, ", "), stopGrace)
	sctx, cancel := context.WithTimeout(ctx, stopGrace)
	defer cancel()
	stopped := make(chan struct{})
	go func() { defer close(stopped); d.stopErr = wa.Shutdown(sctx) }()
	<-sctx.Done()
	j, err := d.c.DescribeWorkflow(ctx, "order-1", "")
	if err != nil {
		return nil, err
	}
	d.rep.order("order-1", "worker-a's drain timed out: job abandoned (%s, attempt %d), no more heartbeats; lease lapses at +%dms",
		j.Status, j.Attempt, d.rep.offset(j.LeaseExpiryMS))
	wb, err := d.newWorker("worker-b", recoveryQueue, 5*time.Second, false)
	if err != nil {
		return nil, err
	}
	// Wait for worker-b to hold order-1 under a newer attempt.
	for {
		changed := d.e.Committed()
		j, err := d.c.DescribeWorkflow(ctx, "order-1", "")
		if err != nil {
			return wb, err
		}
		if j.Attempt >= 2 {
			d.rep.order("order-1", "resumed by worker-b as attempt %d (%s)", j.Attempt, j.Status)
			break
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return wb, fmt.Errorf("order-1 was never resumed: %w", ctx.Err())
		}
	}
	d.shop.ReleaseHeld()
	select {
	case <-stopped:
	case <-ctx.Done():
		return wb, fmt.Errorf("worker-a never stopped: %w", ctx.Err())
	}
	d.rep.order("order-1", "worker-a's Stop returned: %v", d.stopErr)
	return wb, nil
}

// approve waits until order-3 has waited out its ship window and waits
// again (for the signal), then sends the signal after a short pause.
func (d *demoRun) approve(ctx context.Context, wf string) {
	for {
		changed := d.e.Committed()
		j, err := d.c.DescribeWorkflow(ctx, wf, "")
		if err != nil {
			d.problem(err)
			return
		}
		if j.Status.Terminal() {
			d.problem(fmt.Errorf("%s ended %s before its approval", wf, j.Status))
			return
		}
		if j.Status == engine.StatusWaiting {
			hist, err := d.c.GetWorkflowHistory(ctx, wf, "")
			if err != nil {
				d.problem(err)
				return
			}
			if slices.ContainsFunc(hist, func(ev engine.Event) bool { return ev.Type == engine.EventTimerFired }) {
				break
			}
		}
		select {
		case <-changed:
		case <-ctx.Done():
			d.problem(fmt.Errorf("waiting to approve %s: %w", wf, ctx.Err()))
			return
		}
	}
	d.rep.order(wf, "ship window over, waiting for approval")
	if err := sleep(ctx, d.cfg.Clock, approvalDelay); err != nil {
		d.problem(err)
		return
	}
	if err := d.c.SignalWorkflow(ctx, wf, "", "approved", "alice"); err != nil {
		d.problem(fmt.Errorf("signal %s: %w", wf, err))
		return
	}
	d.rep.order(wf, "alice sends signal approved")
}

// check verifies what the demo claims, from the runs' results, the
// activity execution counter and the histories.
func (d *demoRun) check(ctx context.Context) error {
	d.rep.plain("")
	d.rep.plain("checks:")
	var fails []string
	fail := func(format string, a ...any) { fails = append(fails, fmt.Sprintf(format, a...)) }
	ok := func(format string, a ...any) { d.rep.plain("  ok  "+format, a...) }
	d.mu.Lock()
	problems := slices.Clone(d.problems)
	d.mu.Unlock()
	for _, p := range problems {
		fail("unexpected error: %v", p)
	}
	hist := map[string][]engine.Event{}
	for _, o := range d.orders {
		h, err := d.c.GetWorkflowHistory(ctx, o.ID, "")
		if err != nil {
			return err
		}
		hist[o.ID] = h
		j, err := d.c.DescribeWorkflow(ctx, o.ID, "")
		if err != nil {
			return err
		}
		err = d.errs[o.ID]
		switch {
		case o.wantFailed && j.Status == engine.StatusFailed && err != nil && strings.Contains(err.Error(), "compensated"):
			ok("%s Failed after compensating, as planned", o.ID)
		case !o.wantFailed && j.Status == engine.StatusCompleted && err == nil:
			ok("%s Completed", o.ID)
		default:
			fail("%s ended %s (err %v)", o.ID, j.Status, err)
		}
	}
	// the retry
	if runs, keys := d.shop.Executions("order-2", "ChargeCard"); runs == 2 && keys == 1 &&
		countType(hist["order-2"], engine.EventActivityAttemptFailed) == 1 {
		ok("order-2 ChargeCard retried: 2 executions of one step, 1 activity_attempt_failed event")
	} else {
		fail("order-2 ChargeCard ran %d times under %d keys", runs, keys)
	}
	// the signal
	if slices.ContainsFunc(hist["order-3"], func(ev engine.Event) bool {
		return ev.Type == engine.EventSignalReceived && ev.Name == "approved"
	}) {
		ok("order-3 received the signal approved")
	} else {
		fail("order-3 has no signal_received approved")
	}
	// the timers and the children
	for _, o := range d.orders {
		if countType(hist[o.ID], engine.EventTimerFired) < 1 {
			fail("%s has no timer_fired (ship window)", o.ID)
		}
		child, err := d.c.DescribeWorkflow(ctx, o.ID+"-shipment", "")
		want := engine.StatusCompleted
		if o.wantFailed {
			want = engine.StatusFailed
		}
		if err != nil || child.Status != want {
			fail("child %s-shipment: %v %v, want %s", o.ID, child, err, want)
		}
	}
	ok("every order waited out its ship window (timer_fired) and ran its child ShipmentWorkflow")
	// the compensation
	ship, _ := d.shop.Executions("order-4", "ShipOrder")
	refund, _ := d.shop.Executions("order-4", "RefundCard")
	release, _ := d.shop.Executions("order-4", "ReleaseInventory")
	if ship == 1 && refund == 1 && release == 1 && countType(hist["order-4"], engine.EventChildFailed) == 1 {
		ok("order-4 ShipOrder failed once (non-retryable), child_failed; RefundCard and ReleaseInventory ran once each")
	} else {
		fail("order-4: ShipOrder %d, RefundCard %d, ReleaseInventory %d executions", ship, refund, release)
	}
	for _, o := range d.orders[:3] {
		if n, _ := d.shop.Executions(o.ID, "RefundCard"); n != 0 {
			fail("%s was compensated", o.ID)
		}
	}
	// the steps: a critic, a broken resource, a person
	if err := d.errs[demo.ListingID]; err != nil {
		fail("%s failed: %v", demo.ListingID, err)
	}
	if err := d.checkSteps(ctx, ok, fail); err != nil {
		return err
	}
	// the recovery
	reserve, _ := d.shop.Executions("order-1", "ReserveInventory")
	charge, _ := d.shop.Executions("order-1", "ChargeCard")
	confirm, confirmKeys := d.shop.Executions("order-1", "SendConfirmation")
	requeued := slices.ContainsFunc(hist["order-1"], func(ev engine.Event) bool {
		return ev.Type == engine.EventJobRequeued && ev.Reason == engine.ReasonLeaseExpired
	})
	d.rep.plain("      order-1 executions by idempotency key: %s", strings.Join(d.shop.Counts("order-1"), ", "))
	if reserve == 1 && charge == 1 && confirm == 2 && confirmKeys == 1 && requeued && d.stopErr != nil {
		ok("order-1 recovered: lease_expired requeue; worker-b did not re-run ReserveInventory (1 execution) or ChargeCard (1 execution); it re-ran only SendConfirmation, in flight when worker-a was abandoned (2 executions, one idempotency key)")
	} else {
		fail("order-1 recovery: ReserveInventory %d, ChargeCard %d, SendConfirmation %d (%d keys), lease_expired requeue %v, Stop %v",
			reserve, charge, confirm, confirmKeys, requeued, d.stopErr)
	}
	if len(fails) > 0 {
		for _, f := range fails {
			d.rep.plain("  FAIL %s", f)
		}
		return fmt.Errorf("%d checks failed, first: %s", len(fails), fails[0])
	}
	return nil
}

func countType(hist []engine.Event, t engine.EventType) int {
	n := 0
	for _, ev := range hist {
		if ev.Type == t {
			n++
		}
	}
	return n
}

// summary prints one line per order: status, attempts, what ran.
func (d *demoRun) summary(ctx context.Context) {
	d.rep.plain("")
	d.rep.plain("summary:")
	for _, o := range d.orders {
		j, err := d.c.DescribeWorkflow(ctx, o.ID, "")
		if err != nil {
			d.rep.plain("  %-8s %v", o.ID, err)
			continue
		}
		var ran []string
		for _, act := range []string{"ReserveInventory", "ChargeCard", "SendConfirmation", "PackOrder", "ShipOrder", "RefundCard", "ReleaseInventory"} {
			if n, _ := d.shop.Executions(o.ID, act); n > 0 {
				ran = append(ran, fmt.Sprintf("%s×%d", act, n))
			}
		}
		d.mu.Lock()
		outcome := d.results[o.ID]
		if err := d.errs[o.ID]; err != nil {
			outcome = shorten(err.Error(), 90)
		}
		d.mu.Unlock()
		d.rep.plain("  %-8s %-9s job %d, %d claims, %d events; ran %s", o.ID, j.Status, j.ID, j.Attempt, j.LastSeq, strings.Join(ran, " "))
		d.rep.plain("  %-8s => %s", "", outcome)
	}
}

// verifyStore runs machine.Verify over one consistent read of the whole
// store: histories legal, records, indexes and effects all in agreement.
func (d *demoRun) verifyStore() error {
	var problems []error
	jobs := 0
	err := d.e.DB().View(func(r *storage.Reader) error {
		problems = machine.Verify(r, 0)
		return r.Scan(storage.JobPrefix, nil, false, func(_, _ []byte) (bool, error) {
			jobs++
			return true, nil
		})
	})
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	d.rep.plain("")
	d.rep.plain("store verified: %d jobs, %d problems", jobs, len(problems))
	for _, p := range problems {
		d.rep.plain("  problem: %v", p)
	}
	if len(problems) > 0 {
		return fmt.Errorf("engine.Verify found %d problems, first: %w", len(problems), problems[0])
	}
	if want := 2*len(d.orders) + 1; jobs != want {
		return fmt.Errorf("verify: store holds %d jobs, want %d (each order and its child, and order-5)", jobs, want)
	}
	return nil
}
