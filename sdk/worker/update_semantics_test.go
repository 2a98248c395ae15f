package worker_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/converter"
	"github.com/heddlewf/heddle/sdk/temporal"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// Temporal's semantics of updates that code ported from it relies on (as
// go-workflows' and temporalio/features' scenarios found): updates are
// decided while the workflow's activities run, a
// panicking validator rejects the update and the run goes on, a validator
// may leave out the Context, and a rejected update leaves nothing in the
// history.

// bumpOptions run an activity once, with a timeout long enough that a
// test failing on it fails on its own deadline first.
var bumpOptions = workflow.ActivityOptions{StartToCloseTimeout: 30 * time.Second,
	RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 1}}

// BumpDuring counts "bump" updates while its activity (registered by the
// test as "during") runs, and returns the count plus the activity's result.
func BumpDuring(ctx workflow.Context) (int, error) {
	count := 0
	if err := workflow.SetUpdateHandler(ctx, "bump", func(_ workflow.Context, n int) (int, error) {
		count += n
		return count, nil
	}); err != nil {
		return 0, err
	}
	var got int
	if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, bumpOptions), "during").Get(ctx, &got); err != nil {
		return 0, err
	}
	return count + got, nil
}

// An update sent while the workflow's inline activity runs is accepted,
// handled and answered before the activity ends, as Temporal decides
// updates while activities run.
func TestUpdateDecidedWhileActivityRuns(t *testing.T) {
	e := open(t)
	started, release := make(chan struct{}), make(chan struct{})
	startWorker(t, e, "upd-act", worker.Options{}, func(w worker.Worker) {
		w.RegisterWorkflow(BumpDuring)
		w.RegisterActivityWithName(func(ctx context.Context) (int, error) {
			close(started)
			select {
			case <-release:
				return 100, nil
			case <-ctx.Done():
				return 0, ctx.Err()
			}
		}, "during")
	})
	c := client.New(service(t, e))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "bump-1", TaskQueue: "upd-act"}, BumpDuring)
	if err != nil {
		t.Fatal(err)
	}
	await(t, ctx, started, "the activity's start")
	uctx, ucancel := context.WithTimeout(ctx, 10*time.Second)
	defer ucancel()
	h, err := c.UpdateWorkflow(uctx, client.UpdateWorkflowOptions{WorkflowID: "bump-1", UpdateName: "bump", Args: []any{1},
		WaitForStage: client.WorkflowUpdateStageCompleted})
	if err != nil {
		t.Fatalf("an update while the activity runs: %v", err)
	}
	var n int
	if err := h.Get(uctx, &n); err != nil || n != 1 {
		t.Fatalf("the update's result while the activity runs: %d, %v", n, err)
	}
	close(release)
	if err := run.Get(ctx, &n); err != nil || n != 101 {
		t.Fatalf("the workflow returned %d, %v; want 101", n, err)
	}
}

// An activity may update its own workflow and wait for the result, as in
// Temporal; it used to wait until the activity's timeout, for the update
// was decided only after the activity ended.
func TestActivityUpdatesItsOwnWorkflow(t *testing.T) {
	e := open(t)
	c := client.New(service(t, e))
	startWorker(t, e, "upd-self", worker.Options{}, func(w worker.Worker) {
		w.RegisterWorkflow(BumpDuring)
		w.RegisterActivityWithName(func(ctx context.Context) (int, error) {
			uctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			h, err := c.UpdateWorkflow(uctx, client.UpdateWorkflowOptions{WorkflowID: activity.GetInfo(ctx).WorkflowExecution.ID,
				UpdateName: "bump", Args: []any{7}, WaitForStage: client.WorkflowUpdateStageCompleted})
			if err != nil {
				return 0, err
			}
			var n int
			if err := h.Get(uctx, &n); err != nil {
				return 0, err
			}
			if n != 7 {
				return 0, fmt.Errorf("the update answered %d, want 7", n)
			}
			return 0, nil
		}, "during")
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "bump-self", TaskQueue: "upd-self"}, BumpDuring)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := run.Get(ctx, &n); err != nil || n != 7 {
		t.Fatalf("the workflow returned %d, %v; want 7 (the update's count, the activity's 0)", n, err)
	}
}

// Guarded keeps a total that "add" updates change, refusing negative
// amounts in the validator kind names: "ctx" takes the Context, "noctx"
// does not (Temporal accepts both), "panic" panics on them.
func Guarded(ctx workflow.Context, kind string) (int, error) {
	total := 0
	validators := map[string]any{
		"ctx": func(_ workflow.Context, n int) error {
			if n < 0 {
				return errors.New("negative amount")
			}
			return nil
		},
		"noctx": func(n int) error {
			if n < 0 {
				return errors.New("negative amount")
			}
			return nil
		},
		"panic": func(_ workflow.Context, n int) error {
			if n < 0 {
				panic("validator panic on a negative amount")
			}
			return nil
		},
	}
	err := workflow.SetUpdateHandlerWithOptions(ctx, "add", func(_ workflow.Context, n int) (int, error) {
		total += n
		return total, nil
	}, workflow.UpdateHandlerOptions{Validator: validators[kind]})
	if err != nil {
		return 0, err
	}
	workflow.GetSignalChannel(ctx, "done").Receive(ctx, nil)
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return 0, err
	}
	return total, nil
}

// guarded is one run of Guarded with its validator kind, and a client
// whose updates a worker validates (over HTTP, through the node's query
// broker, as from a client in another process).
type guarded struct {
	t       *testing.T
	ctx     context.Context
	c       client.Client
	svc     engine.Service
	querier client.Querier
	id      string
	run     client.WorkflowRun
}

func startGuarded(t *testing.T, cache int, kind string) *guarded {
	e := open(t)
	w := startWorker(t, e, "guarded", worker.Options{CacheSize: cache}, func(w worker.Worker) { w.RegisterWorkflow(Guarded) })
	svc, q := service(t, e), querier(t, e, "guarded", w)
	c := client.NewWithOptions(svc, client.Options{Querier: q})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	g := &guarded{t: t, ctx: ctx, c: c, svc: svc, querier: q, id: "guarded-" + kind}
	var err error
	if g.run, err = c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: g.id, TaskQueue: "guarded"}, Guarded, kind); err != nil {
		t.Fatal(err)
	}
	return g
}

// update sends an update and returns its result.
func (g *guarded) update(id, name string, n int, stage client.WorkflowUpdateStage) (int, error) {
	h, err := g.c.UpdateWorkflow(g.ctx, client.UpdateWorkflowOptions{UpdateID: id, WorkflowID: g.id, UpdateName: name,
		Args: []any{n}, WaitForStage: stage})
	if err != nil {
		return 0, err
	}
	var got int
	return got, h.Get(g.ctx, &got)
}

// add sends an update "add" that must be accepted, and checks its result.
func (g *guarded) add(id string, n, want int) {
	g.t.Helper()
	if got, err := g.update(id, "add", n, client.WorkflowUpdateStageCompleted); err != nil || got != want {
		g.t.Fatalf("update %s (add %d): %d, %v; want %d", id, n, got, err, want)
	}
}

// rejected checks that err is the rejection of update name for cause.
func (g *guarded) rejected(err error, name, cause string) {
	g.t.Helper()
	var rej *client.UpdateRejectedError
	if !errors.As(err, &rej) || !strings.Contains(err.Error(), cause) {
		g.t.Fatalf("update %s: %v, want a rejection for %q", name, err, cause)
	}
	if rej.UpdateName != name {
		g.t.Errorf("the rejection names update %q, want %q (%v)", rej.UpdateName, name, err)
	}
}

// done ends the run and checks its total; it returns the run's history.
func (g *guarded) done(want int) []engine.Event {
	g.t.Helper()
	if err := g.c.SignalWorkflow(g.ctx, g.id, "", "done", nil); err != nil {
		g.t.Fatal(err)
	}
	var got int
	if err := g.run.Get(g.ctx, &got); err != nil || got != want {
		g.t.Fatalf("the workflow returned %d, %v; want %d", got, err, want)
	}
	hist, err := g.c.GetWorkflowHistory(g.ctx, g.id, "")
	if err != nil {
		g.t.Fatal(err)
	}
	return hist
}

func TestUpdateValidatorsLikeTemporal(t *testing.T) {
	forEachCache(t, func(t *testing.T, cache int) {
		t.Run("rejections leave no trace", func(t *testing.T) { testRejectionsLeaveNoTrace(t, cache) })
		t.Run("a validator without a Context", func(t *testing.T) { testValidatorWithoutContext(t, cache) })
		t.Run("a panicking validator", func(t *testing.T) { testPanickingValidator(t, cache) })
		t.Run("validated live", func(t *testing.T) { testValidatedLive(t, cache) })
	})
}

// earlierWorker answers queries as a worker of an earlier version: it
// does not know the validation query, so the client admits updates
// without one.
type earlierWorker struct{ client.Querier }

func (q earlierWorker) QueryWorkflow(ctx context.Context, workflowID, runID, queryType string, args ...any) (converter.EncodedValue, error) {
	if queryType == workflow.ValidateUpdateQuery {
		return nil, fmt.Errorf("%w: %q", workflow.ErrUnknownQuery, queryType)
	}
	return q.Querier.QueryWorkflow(ctx, workflowID, runID, queryType, args...)
}

// testValidatedLive: an update admitted without a validation (a worker of
// an earlier version; or the state changed between the validation and
// the admission) is validated by the run when it takes it: a panic there
// rejects it with a *temporal.PanicError too, the rejection is recorded
// (the request is in the history already) and returned with the update's
// name, and the run goes on.
func testValidatedLive(t *testing.T, cache int) {
	g := startGuarded(t, cache, "panic")
	g.c = client.NewWithOptions(g.svc, client.Options{Querier: earlierWorker{g.querier}})
	_, err := g.update("r1", "add", -1, client.WorkflowUpdateStageCompleted)
	g.rejected(err, "add", "validator panic on a negative amount")
	if !temporal.IsPanicError(err) {
		t.Errorf("a validator's panic is rejected as %v, want a *temporal.PanicError", err)
	}
	g.add("a1", 4, 4)
	recorded := false
	for _, ev := range g.done(4) {
		recorded = recorded || ev.Step == "k:"+workflow.UpdateMarkerKey("r1", "decision")
	}
	if !recorded {
		t.Error("the rejection of an admitted update is not in the history")
	}
}

// testRejectionsLeaveNoTrace: every rejection names its update, and no
// rejected update leaves anything in the history, as Temporal keeps
// neither the request nor the rejection.
func testRejectionsLeaveNoTrace(t *testing.T, cache int) {
	g := startGuarded(t, cache, "ctx")
	g.add("a1", 2, 2)
	_, err := g.update("r1", "add", -1, client.WorkflowUpdateStageCompleted)
	g.rejected(err, "add", "negative amount")
	_, err = g.update("r2", "add", -1, client.WorkflowUpdateStageAccepted)
	g.rejected(err, "add", "negative amount")
	_, err = g.update("r3", "subtract", 1, client.WorkflowUpdateStageCompleted)
	g.rejected(err, "subtract", "unknown update subtract")
	g.add("a2", 3, 5)
	accepted := map[string]int{}
	for _, ev := range g.done(5) {
		for _, id := range []string{"r1", "r2", "r3"} {
			if strings.Contains(ev.Step, ":"+id+":") || strings.Contains(string(ev.Payload), `"`+id+`"`) {
				t.Errorf("rejected update %s left event %d (%s %s %s) in the history", id, ev.Seq, ev.Type, ev.Name, ev.Step)
			}
		}
		if ev.Type == engine.EventMarkerRecorded && strings.HasSuffix(ev.Step, ":decision") {
			accepted[ev.Step]++
		}
		if ev.Type == engine.EventSignalReceived && ev.Name == workflow.UpdateSignalName {
			accepted["signals"]++
		}
	}
	if len(accepted) != 3 || accepted["signals"] != 2 {
		t.Errorf("the history holds %v, want the requests and decisions of a1 and a2 only", accepted)
	}
}

// testValidatorWithoutContext: a validator may leave out the Context, as
// Temporal's may; it used to be refused, failing the run.
func testValidatorWithoutContext(t *testing.T, cache int) {
	g := startGuarded(t, cache, "noctx")
	g.add("a1", 3, 3)
	_, err := g.update("r1", "add", -1, client.WorkflowUpdateStageCompleted)
	g.rejected(err, "add", "negative amount")
	g.done(3)
}

// testPanickingValidator: a validator's panic rejects its update with a
// *temporal.PanicError and the run goes on, as in Temporal; it used to
// fail the run.
func testPanickingValidator(t *testing.T, cache int) {
	g := startGuarded(t, cache, "panic")
	_, err := g.update("r1", "add", -1, client.WorkflowUpdateStageCompleted)
	g.rejected(err, "add", "validator panic on a negative amount")
	if !temporal.IsPanicError(err) {
		t.Errorf("a validator's panic is rejected as %v, want a *temporal.PanicError", err)
	}
	g.add("a1", 4, 4)
	g.done(4)
}

// An update to a run that no worker serves waits for the caller's
// deadline and fails with it, as in Temporal, and leaves nothing in the
// history.
func TestUpdateWithoutWorkerWaitsForTheDeadline(t *testing.T) {
	e := open(t)
	c := client.New(service(t, e))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "unserved", TaskQueue: "nobody"}, Guarded, "ctx"); err != nil {
		t.Fatal(err)
	}
	const wait = 300 * time.Millisecond
	uctx, ucancel := context.WithTimeout(ctx, wait)
	defer ucancel()
	start := time.Now()
	_, err := c.UpdateWorkflow(uctx, client.UpdateWorkflowOptions{WorkflowID: "unserved", UpdateName: "add", Args: []any{1},
		WaitForStage: client.WorkflowUpdateStageAccepted})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("an update nobody serves: %v, want context.DeadlineExceeded", err)
	}
	if took := time.Since(start); took < wait-50*time.Millisecond {
		t.Errorf("it failed after %v, before the caller's deadline of %v", took, wait)
	}
	hist, err := c.GetWorkflowHistory(ctx, "unserved", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range hist {
		if ev.Type == engine.EventSignalReceived {
			t.Errorf("the update nobody validated is in the history: %+v", ev)
		}
	}
}
