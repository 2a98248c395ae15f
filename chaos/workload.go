package chaos

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/httpapi"
	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// Queue is the task queue of the chaos workload.
const Queue = "chaos"

// SignalName is the signal every chaos workflow waits for.
const SignalName = "go"

// ChildSignalName is the signal a chaos child sends its parent before it
// ends: on a sharded cluster the child lives on another shard, so the
// signal crosses shards through the child's shard's outbox.
const ChildSignalName = "child"

// FlowInput parameterises one workflow: how long its timer sleeps and how
// long each activity works, so kills land in the middle of things.
type FlowInput struct {
	SleepMS int `json:"sleep_ms"`
	WorkMS  int `json:"work_ms"`
	// RaceMS, when set, runs a race a timer of that length wins against an
	// activity that never ends on its own; CancelMS is how long an
	// activity runs before its workflow cancels it.
	RaceMS   int `json:"race_ms,omitempty"`
	CancelMS int `json:"cancel_ms,omitempty"`
	// ChildID, when set, is the workflow id of a child workflow the run
	// starts after its first activity and waits for (ChaosChild): on a
	// sharded cluster the driver names it on another shard, so its start
	// and its result cross shards through the outbox.
	ChildID string `json:"child_id,omitempty"`
}

// ChaosChild is the child workflow of a chaos run: one activity, then a
// signal to its parent (ChildSignalName, carrying the child's workflow id).
func ChaosChild(ctx workflow.Context, workMS int) (int, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 30 * time.Second,
		RetryPolicy: &workflow.RetryPolicy{InitialInterval: 100 * time.Millisecond, MaximumAttempts: 100}})
	var n int
	if err := workflow.ExecuteActivity(ctx, "ChaosStep", workMS).Get(ctx, &n); err != nil {
		return 0, err
	}
	info := workflow.GetInfo(ctx)
	if p := info.ParentWorkflowExecution; p != nil {
		if err := workflow.SignalExternalWorkflow(ctx, p.ID, "", ChildSignalName, info.WorkflowExecution.ID).Get(ctx, nil); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// ChaosFlow is the workflow the workers run: an activity, a child workflow
// when the input names one (and the signal the child sends), a durable timer,
// a race and a cancellation (raceAndCancel), two activities in parallel, an
// activity on a unit of a resource, a wait for a signal, a last activity.
func ChaosFlow(ctx workflow.Context, in FlowInput) (int, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 30 * time.Second,
		RetryPolicy: &workflow.RetryPolicy{InitialInterval: 100 * time.Millisecond, MaximumAttempts: 100}})
	total := 0
	run := func(f workflow.Future) error {
		var n int
		if err := f.Get(ctx, &n); err != nil {
			return err
		}
		total += n
		return nil
	}
	if err := run(workflow.ExecuteActivity(ctx, "ChaosStep", in.WorkMS)); err != nil {
		return 0, err
	}
	if in.ChildID != "" {
		cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{WorkflowID: in.ChildID})
		if err := run(workflow.ExecuteChildWorkflow(cctx, "ChaosChild", in.WorkMS)); err != nil {
			return 0, err
		}
		// The child signalled before it ended, and its signal and its end
		// travel in order: the signal is here.
		var from string
		workflow.GetSignalChannel(ctx, ChildSignalName).Receive(ctx, &from)
		if from != in.ChildID {
			return 0, fmt.Errorf("chaos: the signal of child %q came from %q", in.ChildID, from)
		}
	}
	if err := workflow.Sleep(ctx, time.Duration(in.SleepMS)*time.Millisecond); err != nil {
		return 0, err
	}
	if in.RaceMS > 0 {
		if err := raceAndCancel(ctx, in); err != nil {
			return 0, err
		}
	}
	a := workflow.ExecuteActivity(ctx, "ChaosStep", in.WorkMS)
	b := workflow.ExecuteActivity(ctx, "ChaosStep", in.WorkMS)
	if err := run(a); err != nil {
		return 0, err
	}
	if err := run(b); err != nil {
		return 0, err
	}
	// A step on a unit of a small resource pool (Slots): the workflows
	// contend for the units, and the checks count any moment more tries
	// used a resource than it has units. On a sharded cluster the runs of
	// every shard but the pool's lease their units across shards.
	sctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 30 * time.Second,
		RequiredCapabilities: []string{SlotCapability},
		RetryPolicy:          &workflow.RetryPolicy{InitialInterval: 100 * time.Millisecond, MaximumAttempts: 100}})
	if err := run(workflow.ExecuteActivity(sctx, "ChaosSlot", in.WorkMS)); err != nil {
		return 0, err
	}
	var sig string
	workflow.GetSignalChannel(ctx, SignalName).Receive(ctx, &sig)
	if err := run(workflow.ExecuteActivity(ctx, "ChaosStep", in.WorkMS)); err != nil {
		return 0, err
	}
	return total, nil
}

// raceAndCancel keeps the workflow live while activities run: a timer
// beats an activity that only ends when cancelled, the loser is cancelled
// and its cancellation awaited (WaitForCancellation); then an activity is
// cancelled CancelMS after it started, without waiting. Anything else is
// an error that fails the run, which the run's checks report.
func raceAndCancel(ctx workflow.Context, in FlowInput) error {
	opts := workflow.GetActivityOptions(ctx)
	opts.WaitForCancellation = true
	rctx, cancelRace := workflow.WithCancel(workflow.WithActivityOptions(ctx, opts))
	hang := workflow.ExecuteActivity(rctx, "ChaosHang")
	timerWon := false
	s := workflow.NewSelector(ctx)
	s.AddFuture(workflow.NewTimer(ctx, time.Duration(in.RaceMS)*time.Millisecond), func(workflow.Future) { timerWon = true })
	s.AddFuture(hang, func(workflow.Future) {})
	s.Select(ctx)
	cancelRace()
	if err := hang.Get(ctx, nil); !timerWon || !errors.Is(err, workflow.ErrCanceled) {
		return fmt.Errorf("chaos: the race: the timer won %v, the losing activity ended with %v", timerWon, err)
	}
	cctx, cancelLong := workflow.WithCancel(ctx)
	long := workflow.ExecuteActivity(cctx, "ChaosStep", int(time.Hour/time.Millisecond))
	if err := workflow.Sleep(ctx, time.Duration(in.CancelMS)*time.Millisecond); err != nil {
		return err
	}
	cancelLong()
	if err := long.Get(ctx, nil); !errors.Is(err, workflow.ErrCanceled) {
		return fmt.Errorf("chaos: the cancelled activity ended with %v", err)
	}
	return nil
}

// Execution is one line of an activity log: an activity started running
// for a key, in a worker process, at T (Unix ns). An activity on a
// resource names it, and logs a second line (End) when it stops.
type Execution struct {
	Key      string `json:"key"`
	Worker   string `json:"worker"`
	Attempt  int    `json:"attempt"`
	T        int64  `json:"t"`
	Resource string `json:"resource,omitempty"`
	End      bool   `json:"end,omitempty"`
}

// execLog is where a worker process's activities report each execution,
// synced to disk before the activity goes on, so the log holds every
// execution whose effects could have been seen.
type execLog struct {
	mu     sync.Mutex
	f      *os.File
	worker string
}

func (l *execLog) record(ctx context.Context) error { return l.write(ctx, false) }

// write logs the start (or with end, the stop) of an activity's try.
func (l *execLog) write(ctx context.Context, end bool) error {
	info := activity.GetInfo(ctx)
	b, _ := json.Marshal(Execution{Key: info.IdempotencyKey, Worker: l.worker, Attempt: int(info.Attempt), T: time.Now().UnixNano(),
		Resource: info.Resource, End: end})
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("chaos: activity log: %w", err)
	}
	return l.f.Sync()
}

// WorkerConfig configures one worker process of the workload.
type WorkerConfig struct {
	Addrs []string // the nodes' HTTP addresses
	Name  string   // unique per process incarnation: names its log files
	Dir   string   // where ops-<name>.jsonl and acts-<name>.jsonl go
	Lease time.Duration
	// TLS, if set, is the client configuration of the nodes' HTTPS API.
	TLS *tls.Config
}

// RunWorker runs the workload's worker until ctx ends. Its activities log
// their executions and its engine calls go through a Recorder.
func RunWorker(ctx context.Context, cfg WorkerConfig) (err error) {
	svc, err := httpapi.NewClient(httpapi.ClientConfig{Addrs: cfg.Addrs, TLS: cfg.TLS, RequestTimeout: 5 * time.Second, PollWait: 5 * time.Second})
	if err != nil {
		return err
	}
	rec, err := NewRecorder(svc, filepath.Join(cfg.Dir, "ops-"+cfg.Name+".jsonl"))
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, rec.Close()) }()
	f, err := os.OpenFile(filepath.Join(cfg.Dir, "acts-"+cfg.Name+".jsonl"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, f.Close()) }()
	log := &execLog{f: f, worker: cfg.Name}
	step := func(ctx context.Context, workMS int) (int, error) {
		if err := log.record(ctx); err != nil {
			return 0, err
		}
		select {
		case <-time.After(time.Duration(workMS) * time.Millisecond):
		case <-ctx.Done():
			return 0, ctx.Err()
		}
		return 1, nil
	}
	lease := cfg.Lease
	if lease == 0 {
		lease = 3 * time.Second
	}
	w := worker.New(client.New(rec), Queue, worker.Options{Identity: cfg.Name, LeaseTTL: lease, MaxConcurrentJobs: 32,
		OnError: func(job engine.JobID, err error) {
			fmt.Fprintf(os.Stderr, "chaos worker %s: job %d: %v\n", cfg.Name, job, err)
		}})
	w.RegisterWorkflowWithName(ChaosFlow, "ChaosFlow")
	w.RegisterWorkflowWithName(ChaosChild, "ChaosChild")
	w.RegisterActivityWithName(step, "ChaosStep")
	w.RegisterActivityWithName(func(ctx context.Context) error {
		if err := log.record(ctx); err != nil {
			return err
		}
		<-ctx.Done()
		return ctx.Err()
	}, "ChaosHang")
	w.RegisterActivityWithName(func(ctx context.Context, workMS int) (int, error) {
		if activity.GetInfo(ctx).Resource == "" {
			return 0, errors.New("chaos: ChaosSlot ran without a resource unit")
		}
		n, err := step(ctx, workMS)
		// The stop is logged once the try no longer uses the unit, before
		// its outcome reaches the engine that may give the unit away.
		return n, errors.Join(err, log.write(ctx, true))
	}, "ChaosSlot")
	if err := w.Start(); err != nil {
		return err
	}
	<-ctx.Done()
	stop, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return w.Shutdown(stop)
}
