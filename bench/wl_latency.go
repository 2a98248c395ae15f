package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/sdk/client"
)

// timerLead is how far ahead of the start the timer workload sets its
// common wake time: a second of sleep, plus room to start n workflows and
// run their first activity before it (3 ms each, several times what a
// start costs in either mode).
func timerLead(n int) time.Duration { return time.Second + time.Duration(n)*3*time.Millisecond }

// runTimer: N workflows, started together, each runs an activity and then
// sleeps until the same instant, so N timers fall due at once; the worker
// has a slot for each of them. The lateness of a wake-up is the wall time
// from that instant to the activity the workflow runs after its sleep. Each
// wake-up's path is then read back from its history and split into the
// engine's firing (timer_fired, less the due time), the claim that followed
// it (job_leased, less timer_fired) and the worker's replay and activity
// dispatch (the activity, less job_leased).
func runTimer(r *runner) error {
	if err := r.open("timer"); err != nil {
		return err
	}
	marks := make([]time.Time, r.n)
	wakes := make([]time.Time, r.n)
	var mu sync.Mutex
	bar := r.bar("wake-ups", r.n)
	m := newMeter(bar)
	acts := map[string]any{
		"Mark": func(_ context.Context, i int) error {
			mu.Lock()
			marks[i] = time.Now()
			mu.Unlock()
			return nil
		},
		"Woke": func(_ context.Context, i int) error {
			mu.Lock()
			first := wakes[i].IsZero()
			if first {
				wakes[i] = time.Now()
			}
			mu.Unlock()
			if first {
				m.done()
			}
			return nil
		},
	}
	// A slot for every timer: the figure is the wake-up path, not a queue
	// of woken workflows waiting for a worker's slot.
	r.workerSlots = max(defaultWorkerSlots, r.n)
	if _, err := r.worker(queue, 0, acts); err != nil {
		return err
	}
	c := r.client()
	ctx := context.Background()
	runs := make([]client.WorkflowRun, r.n)
	start := time.Now()
	until := start.Add(timerLead(r.n)).Truncate(time.Millisecond)
	err := spread(r.n, r.starters, func(i int) error {
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: fmt.Sprintf("timer-%d", i), TaskQueue: queue}, Sleeper, i, until.UnixMilli())
		runs[i] = run
		return err
	})
	if err == nil {
		err = spread(r.n, r.starters, func(i int) error { return runs[i].Get(ctx, nil) })
	}
	elapsed := time.Since(start)
	bar.finish()
	if err != nil {
		return err
	}
	late := make([]time.Duration, r.n)
	for i := range late {
		if !marks[i].Before(until) {
			return fmt.Errorf("workflow %d ran its first activity %v after the common wake time: starting %d workflows took longer than the lead of %v",
				i, marks[i].Sub(until), r.n, timerLead(r.n))
		}
		late[i] = wakes[i].Sub(until)
	}
	if err := r.timerPath(ctx, c, runs, until, wakes); err != nil {
		return err
	}
	ceil, err := r.ceiling(commandPayloadBytes, r.n, 0)
	if err != nil {
		return err
	}
	r.samples(late, "lateness of one wake-up (due time to the activity after the sleep)", m, elapsed)
	// A wake-up's path: the scheduler's firing, the claim, then the
	// activity runs.
	r.latency("p99 lateness ms", r.res.LatencyMS.P99, 2, "p99", ceil)
	r.res.WorkflowsPerS = ptr(float64(r.n) / elapsed.Seconds())
	return nil
}

// timerPath splits each wake-up of the timer workload at the events its
// history holds, and records the p50 and p99 of each part as extras:
// fire_late (timer_fired less the due time), claim_after_fire (the
// job_leased after it, less timer_fired) and run_after_claim (the activity
// after the sleep, less that job_leased). The events' times are the
// engine's clock, the same machine's as the bench's.
func (r *runner) timerPath(ctx context.Context, c client.Client, runs []client.WorkflowRun, until time.Time, wakes []time.Time) error {
	var fire, claim, run []time.Duration
	for i, wr := range runs {
		evs, err := c.GetWorkflowHistory(ctx, wr.GetID(), wr.GetRunID())
		if err != nil {
			return err
		}
		var firedMS, leasedMS int64
		for _, ev := range evs {
			switch {
			case ev.Type == engine.EventTimerFired && firedMS == 0:
				firedMS = ev.AtMS
			case ev.Type == engine.EventJobLeased && firedMS != 0 && leasedMS == 0:
				leasedMS = ev.AtMS
			}
		}
		if firedMS == 0 || leasedMS == 0 {
			return fmt.Errorf("workflow %s: no timer_fired and job_leased after it in its history", wr.GetID())
		}
		fire = append(fire, time.Duration(firedMS-until.UnixMilli())*time.Millisecond)
		claim = append(claim, time.Duration(leasedMS-firedMS)*time.Millisecond)
		run = append(run, wakes[i].Sub(time.UnixMilli(leasedMS)))
	}
	for name, d := range map[string][]time.Duration{"fire_late": fire, "claim_after_fire": claim, "run_after_claim": run} {
		s := Summarize(d)
		r.res.Extra[name+"_p50_ms"] = s.P50
		r.res.Extra[name+"_p99_ms"] = s.P99
	}
	return nil
}

// waitWaiting waits until the run waits (on a signal) with a history of at
// least minSeq events, reporting its length to bar.
func waitWaiting(ctx context.Context, c client.Client, id string, minSeq uint64, bar *progress) (*engine.Job, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Minute)
	defer cancel()
	for {
		j, err := c.DescribeWorkflow(ctx, id, "")
		if err != nil {
			return nil, err
		}
		if bar != nil {
			bar.done.Store(int64(j.LastSeq))
		}
		if (j.Status == engine.StatusWaiting || j.Status == engine.StatusParked) && j.LastSeq >= minSeq {
			return j, nil
		}
		if j.Status.Terminal() {
			return nil, fmt.Errorf("workflow %s ended (%v) before its signal", id, j.Status)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// pongs is the activity "Pong" of a run: it hands each value to the bench.
func pongs() (chan int, map[string]any) {
	ch := make(chan int, 16)
	return ch, map[string]any{"Pong": func(_ context.Context, i int) error {
		ch <- i
		return nil
	}}
}

func awaitPong(ch chan int, want int) error {
	for {
		select {
		case got := <-ch:
			if got == want {
				return nil
			}
			// A retried activity may report an earlier value again.
		case <-time.After(2 * time.Minute):
			return fmt.Errorf("signal %d never reached the workflow", want)
		}
	}
}

// runSignal: N signal round trips to one waiting workflow, one at a time:
// from the client's signal to the workflow's code acting on it (the
// activity "Pong" running in the worker).
func runSignal(r *runner) error {
	if err := r.open("signal"); err != nil {
		return err
	}
	ch, acts := pongs()
	if _, err := r.worker(queue, 0, acts); err != nil {
		return err
	}
	c := r.client()
	ctx := context.Background()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "pinger", TaskQueue: queue}, Pinger, r.n)
	if err != nil {
		return err
	}
	if _, err := waitWaiting(ctx, c, "pinger", 0, nil); err != nil {
		return err
	}
	lat := make([]time.Duration, r.n)
	bar := r.bar("signals", r.n)
	m := newMeter(bar)
	start := time.Now()
	for i := range r.n {
		t0 := time.Now()
		if err := c.SignalWorkflow(ctx, "pinger", "", "ping", i); err != nil {
			bar.finish()
			return err
		}
		if err := awaitPong(ch, i); err != nil {
			bar.finish()
			return err
		}
		lat[i] = time.Since(t0)
		m.done()
	}
	elapsed := time.Since(start)
	bar.finish()
	if err := run.Get(ctx, nil); err != nil {
		return err
	}
	ceil, err := r.ceiling(commandPayloadBytes, 1, 0)
	if err != nil {
		return err
	}
	r.samples(lat, "signal sent to the workflow's code acting on it", m, elapsed)
	// The path: the signal, then the worker's claim of the woken job.
	r.latency("p50 round trip ms", r.res.LatencyMS.P50, 2, "p50", ceil)
	r.res.Extra["round_trips_per_s"] = float64(r.n) / elapsed.Seconds()
	return nil
}

// runReplay: a workflow with an N-event history waits for a signal; a
// fresh worker (an empty cache) takes the signal and must replay the whole
// history before its code runs past it: the cold replay. The same worker
// then takes a second signal with the workflow in its cache: the cached
// resume.
func runReplay(r *runner) error {
	if r.n < 8 {
		return errors.New("replay needs n >= 8 events")
	}
	if err := r.open("replay"); err != nil {
		return err
	}
	build, err := r.worker(queue, 0, nil)
	if err != nil {
		return err
	}
	c := r.client()
	ctx := context.Background()
	// The job's creation, its claim, a wait and the two signals' turns add
	// a handful of events to the activities' one each.
	acts := r.n - 4
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "long", TaskQueue: queue}, Long, acts)
	if err != nil {
		return err
	}
	bar := r.bar("history events", r.n)
	buildStart := time.Now()
	j, err := waitWaiting(ctx, c, "long", uint64(acts), bar)
	bar.finish()
	if err != nil {
		return err
	}
	r.res.Extra["build_s"] = time.Since(buildStart).Seconds()
	r.res.Extra["history_events"] = float64(j.LastSeq)
	if err := stopWorker(build); err != nil {
		return err
	}
	ch, pong := pongs()
	if _, err := r.worker(queue, 0, pong); err != nil {
		return err
	}
	t0 := time.Now()
	if err := c.SignalWorkflow(ctx, "long", "", "go", 1); err != nil {
		return err
	}
	if err := awaitPong(ch, 1); err != nil {
		return err
	}
	cold := time.Since(t0)
	// Let the worker commit the turn and keep the execution in its cache.
	if _, err := waitWaiting(ctx, c, "long", j.LastSeq+1, nil); err != nil {
		return err
	}
	t1 := time.Now()
	if err := c.SignalWorkflow(ctx, "long", "", "go", 2); err != nil {
		return err
	}
	if err := awaitPong(ch, 2); err != nil {
		return err
	}
	cached := time.Since(t1)
	if err := run.Get(ctx, nil); err != nil {
		return err
	}
	ceil, err := r.ceiling(commandPayloadBytes, 1, 0)
	if err != nil {
		return err
	}
	r.samples([]time.Duration{cold}, "cold replay: signal to the code acting on it, on a worker without the workflow cached", nil, 0)
	r.latency("cold replay ms", ms(cold), 2, "p50", ceil)
	r.res.Extra["cached_resume_ms"] = ms(cached)
	r.res.Extra["cached_ratio_to_ceiling"] = ms(cached) / r.res.Ceiling
	r.res.Extra["cold_over_cached"] = ms(cold) / ms(cached)
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
