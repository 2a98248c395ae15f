package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/sdk/client"
)

// driver starts workflows, signals them and waits for them, from several
// goroutines, and remembers every start the engine acknowledged.
type driver struct {
	c    client.Client
	svc  engine.Service
	seed uint64
	// shards is the cluster's shard count (0: one group).
	shards int

	mu        sync.Mutex
	next      int
	acks      []Ack
	completed int
}

func (d *driver) acked() []Ack {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]Ack(nil), d.acks...)
}

// run drives one stream of workflows until startCtx ends (no new starts)
// or ctx ends (it stops waiting).
func (d *driver) run(ctx, startCtx context.Context, r *rand.Rand) {
	for startCtx.Err() == nil {
		a, ok := d.startOne(startCtx, r)
		if !ok {
			return
		}
		sleepCtx(ctx, between(r, 200*time.Millisecond, 2*time.Second))
		for ctx.Err() == nil {
			err := d.c.SignalWorkflow(ctx, a.WorkflowID, "", SignalName, "go")
			if err == nil || errors.Is(err, engine.ErrJobClosed) {
				break
			}
			sleepCtx(ctx, 200*time.Millisecond)
		}
		for ctx.Err() == nil {
			wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			j, err := d.svc.WaitClosed(wctx, engine.Target{Job: a.Job})
			cancel()
			if err == nil && j.Status.Terminal() {
				d.mu.Lock()
				d.completed++
				d.mu.Unlock()
				break
			}
			sleepCtx(ctx, 200*time.Millisecond)
		}
	}
}

// startOne starts the next workflow, retrying under the same request id
// until the start is acknowledged or ctx ends, and records the ack.
func (d *driver) startOne(ctx context.Context, r *rand.Rand) (Ack, bool) {
	d.mu.Lock()
	d.next++
	i := d.next
	d.mu.Unlock()
	in := FlowInput{SleepMS: 100 + r.IntN(900), WorkMS: 20 + r.IntN(300), RaceMS: 20 + r.IntN(200), CancelMS: r.IntN(100)}
	wf := fmt.Sprintf("wf-%d", i)
	// On a sharded cluster every other run starts a child on another
	// shard: its create and its result cross shards through the outbox.
	if d.shards > 1 && i%2 == 0 {
		home := engine.ShardOfKey(wf, d.shards)
		for n := 0; in.ChildID == ""; n++ {
			if id := fmt.Sprintf("%s-child-%d", wf, n); engine.ShardOfKey(id, d.shards) != home {
				in.ChildID = id
			}
		}
	}
	opts := client.StartWorkflowOptions{ID: wf, TaskQueue: Queue, RequestID: fmt.Sprintf("start-%d-%d", d.seed, i)}
	for ctx.Err() == nil {
		run, err := d.c.ExecuteWorkflow(ctx, opts, "ChaosFlow", in)
		if err == nil {
			// The run id is the job id in decimal; a run id that is not
			// one leaves Job 0, which the checkers report as lost.
			job, _ := strconv.ParseUint(run.GetRunID(), 10, 64)
			a := Ack{WorkflowID: wf, Job: engine.JobID(job), ChildID: in.ChildID}
			d.mu.Lock()
			d.acks = append(d.acks, a)
			d.mu.Unlock()
			return a, true
		}
		sleepCtx(ctx, 200*time.Millisecond)
	}
	return Ack{}, false
}
