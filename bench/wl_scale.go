package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/heddlewf/heddle/engine"

	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/storage"
)

const scaleQueue = "scale"

// runScale: N cycles of one worker (claim one job, commit one step,
// complete it: three commands) on an empty store, then on a store holding
// --finished completed jobs of the same queue. The figure is the second;
// the first, and how much of it survives the finished jobs, are extras.
func runScale(r *runner) error {
	empty, err := r.scaleCycles("empty", 0)
	if err != nil {
		return err
	}
	full, err := r.scaleCycles("finished", r.opts.Finished)
	if err != nil {
		return err
	}
	ceil, err := r.ceiling(commandPayloadBytes, 1, 0)
	if err != nil {
		return err
	}
	r.throughput("cycles/s", r.n, full.elapsed, full.commands, ceil)
	r.samples(full.lat, "one claim + commit + complete cycle", full.meter, full.elapsed)
	emptyPerS := float64(r.n) / empty.elapsed.Seconds()
	r.res.Extra["finished_jobs"] = float64(r.opts.Finished)
	r.res.Extra["cycles_per_s_empty"] = emptyPerS
	r.res.Extra["ratio_to_ceiling_empty"] = emptyPerS / r.res.Ceiling
	r.res.Extra["finished_over_empty"] = r.res.Value / emptyPerS
	r.res.Extra["p50_ms_empty"] = Summarize(empty.lat).P50
	return nil
}

type cycles struct {
	lat      []time.Duration
	elapsed  time.Duration
	commands int64
	meter    *meter
}

// scaleCycles opens a backend holding finished completed jobs, creates N
// ready jobs (untimed), and times N cycles through the backend's service.
func (r *runner) scaleCycles(name string, finished int) (cycles, error) {
	if err := r.closeBackend(); err != nil {
		return cycles{}, err
	}
	dir, err := os.MkdirTemp(r.root, "scale-"+name+"-")
	if err != nil {
		return cycles{}, err
	}
	if finished > 0 && r.opts.Mode == ModeEmbedded {
		// Embedded, the finished jobs are written straight into the
		// engine's directory before it opens: minutes instead of the tens
		// of minutes a million jobs take through the log.
		bar := r.bar("building finished", finished)
		t0 := time.Now()
		err := buildFinished(filepath.Join(dir, "engine"), finished, bar)
		bar.finish()
		if err != nil {
			return cycles{}, err
		}
		r.res.Extra["build_s"] = time.Since(t0).Seconds()
	}
	r.logf("starting the %s backend (%s)", r.opts.Mode, name)
	if r.b, err = openBackend(r.opts.Mode, dir, r.obs, r.opts.Shards); err != nil {
		return cycles{}, err
	}
	ctx := context.Background()
	if finished > 0 && clustered(r.opts.Mode) {
		bar := r.bar("building finished", 2*finished)
		t0 := time.Now()
		err := buildFinishedThrough(ctx, r.b, finished, bar)
		bar.finish()
		if err != nil {
			return cycles{}, err
		}
		r.res.Extra["build_s"] = time.Since(t0).Seconds()
	}
	if err := spread(r.n, 64, func(i int) error {
		c := engine.CreateJob{WorkflowID: fmt.Sprintf("ready-%s-%d", name, i), Type: "order", Queue: scaleQueue, Input: make([]byte, 64),
			ReusePolicy: engine.IDReuseReturnExisting}
		return onLeader(r.b, func(e *embedded.Engine, _ bool) error { _, err := e.Create(ctx, c); return err })
	}); err != nil {
		return cycles{}, err
	}
	svc := r.b.svc
	payload := make([]byte, 64)
	out := cycles{lat: make([]time.Duration, r.n)}
	bar := r.bar("cycles "+name, r.n)
	out.meter = newMeter(bar)
	before := svc.commands.Load()
	start := time.Now()
	for i := range r.n {
		t0 := time.Now()
		got, err := svc.Claim(ctx, engine.Claim{Queue: scaleQueue, Owner: "bench", Max: 1, LeaseMS: 60_000})
		if err == nil && len(got) != 1 {
			err = fmt.Errorf("claim %d returned %d jobs", i, len(got))
		}
		if err != nil {
			bar.finish()
			return cycles{}, err
		}
		ref := got[0].Lease()
		if _, err := svc.CommitStep(ctx, engine.CommitStep{LeaseRef: ref, Step: "charge", Type: "activity_completed", Payload: payload}); err != nil {
			bar.finish()
			return cycles{}, err
		}
		if _, err := svc.Complete(ctx, engine.Complete{LeaseRef: ref, Result: []byte("done")}); err != nil {
			bar.finish()
			return cycles{}, err
		}
		out.lat[i] = time.Since(t0)
		out.meter.done()
	}
	out.elapsed = time.Since(start)
	out.commands = svc.commands.Load() - before
	bar.finish()
	return out, nil
}

// buildFinished writes n completed jobs of the scale queue into a new
// engine directory by applying Create, Claim and Complete commands through
// the engine's state machine straight into storage batches, unsynced, as
// full as a transaction allows; then it lets Badger finish compacting, so
// the store is measured as a long-running one would be rather than while
// the bulk load's compaction competes for the cores.
func buildFinished(dir string, n int, bar *progress) (err error) {
	db, err := storage.Open(storage.Options{Dir: dir, NoSync: true, Logger: quietLogger{}})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, db.Close()) }()
	m, err := machine.NewMachine(engine.Limits{})
	if err != nil {
		return err
	}
	// Time runs a day behind the wall clock, one millisecond per chunk,
	// as if the jobs had finished over the previous day.
	nowMS := time.Now().Add(-24 * time.Hour).UnixMilli()
	batch := db.NewBatch()
	apply := func(cmd engine.Command) (engine.Result, error) {
		cmd.Head().NowMS = nowMS
		tx := batch.Begin()
		res, err := m.Apply(tx, cmd)
		if err != nil {
			return nil, err
		}
		err = batch.Add(tx)
		if errors.Is(err, storage.ErrBatchFull) {
			if err := batch.Commit(); err != nil {
				return nil, err
			}
			batch = db.NewBatch()
			err = batch.Add(tx)
		}
		return res, err
	}
	const chunk = 1000
	input := make([]byte, 64)
	for start := 0; start < n; start += chunk {
		k := min(chunk, n-start)
		for i := range k {
			if _, err := apply(&engine.CreateJob{WorkflowID: fmt.Sprintf("done-%012d", start+i), Type: "order", Queue: scaleQueue, Input: input}); err != nil {
				return err
			}
		}
		res, err := apply(&engine.Claim{Queue: scaleQueue, Owner: "builder", Max: k, LeaseMS: 60_000})
		if err != nil {
			return err
		}
		jobs := res.(*engine.ClaimResult).Jobs
		if len(jobs) != k {
			return fmt.Errorf("bench: building chunk at %d: claimed %d jobs, want %d", start, len(jobs), k)
		}
		for _, j := range jobs {
			if _, err := apply(&engine.Complete{LeaseRef: j.Lease(), Result: []byte("done")}); err != nil {
				return err
			}
		}
		nowMS++
		bar.add(k)
	}
	if err := batch.Commit(); err != nil {
		return err
	}
	if err := db.Badger().Flatten(runtime.NumCPU()); err != nil {
		return err
	}
	return nil
}

// buildFinishedThrough makes n completed jobs of the scale queue through a
// cluster leader's engine, in process (the setup, not the measurement):
// creates from 256 concurrent proposers, so the proposer packs them into
// large Raft entries, then claims of up to 1000 jobs, each followed by the
// completions of its jobs, 256 at a time. On a loaded machine leadership
// can move during the minutes this takes, so every command follows the
// leader and is retried in a way that a command applied before its answer
// was lost does no harm (see onLeader).
func buildFinishedThrough(ctx context.Context, b *backend, n int, bar *progress) error {
	input := make([]byte, 64)
	if err := spread(n, 256, func(i int) error {
		// ReturnExisting makes a retried create of an applied one a no-op.
		c := engine.CreateJob{WorkflowID: fmt.Sprintf("done-%012d", i), Type: "order", Queue: scaleQueue, Input: input,
			ReusePolicy: engine.IDReuseReturnExisting}
		err := onLeader(b, func(e *embedded.Engine, _ bool) error { _, err := e.Create(ctx, c); return err })
		bar.add(1)
		return err
	}); err != nil {
		return err
	}
	for done := 0; done < n; {
		var jobs []engine.ClaimedJob
		err := onLeader(b, func(e *embedded.Engine, _ bool) error {
			var err error
			// A claim applied but unanswered leaves its jobs leased to
			// nobody until their lease expires and the scheduler hands
			// them back: long enough for the completions, short enough to
			// wait out.
			jobs, err = e.Claim(ctx, engine.Claim{Queue: scaleQueue, Owner: "builder", Max: min(1000, n-done), LeaseMS: 30_000})
			return err
		})
		if err != nil {
			return err
		}
		if len(jobs) == 0 {
			time.Sleep(100 * time.Millisecond) // jobs leased by a lost claim come back when their lease expires
			continue
		}
		if err := spread(len(jobs), 256, func(i int) error {
			c := engine.Complete{LeaseRef: jobs[i].Lease(), Result: []byte("done")}
			err := onLeader(b, func(e *embedded.Engine, retry bool) error {
				_, err := e.Complete(ctx, c)
				if retry && errors.Is(err, engine.ErrStaleAttempt) {
					return nil // the first try was applied
				}
				return err
			})
			bar.add(1)
			return err
		}); err != nil {
			return err
		}
		done += len(jobs)
	}
	return nil
}

// onLeader runs op on the current leader's engine, and again (retry true)
// for up to a minute while it fails because that node is no longer, or not
// yet, the leader, or lost its leadership with the command in flight (whose
// outcome the caller's retry must then tolerate either way).
func onLeader(b *backend, op func(e *embedded.Engine, retry bool) error) error {
	deadline := time.Now().Add(time.Minute)
	for retry := false; ; retry = true {
		err := op(b.setup(), retry)
		retriable := errors.Is(err, engine.ErrNotLeader) || errors.Is(err, engine.ErrUnknownOutcome)
		if err == nil || !retriable || time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}
