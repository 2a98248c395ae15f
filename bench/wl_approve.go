package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/heddlewf/heddle/engine"
)

// approveQueue is the task queue of the approve workload.
const approveQueue = "approve"

// reviewClaimer is a ReviewService that can wait for claimable tasks (the
// engine, and the HTTP client with long polls).
type reviewClaimer interface {
	engine.ReviewService
	ClaimReviewsWait(context.Context, engine.ClaimReviews) ([]engine.ClaimedReview, error)
}

// runApprove: N jobs of two review tasks, "up" and "down" (down depends on
// up), one job at a time. A worker loop claims work and records its output
// (up is reviewed automatically), a reviewer loop approves every review.
// Once up waits for approval, the bench approves it and measures the time
// from sending the approve command until the worker holds the dependant
// RUNNING: the approval, the release of the dependant, and its claim.
func runApprove(r *runner) error {
	if err := r.open("approve"); err != nil {
		return err
	}
	ts, ok := r.b.svc.Service.(reviewClaimer)
	if !ok {
		return fmt.Errorf("bench: the %s backend has no review tasks", r.opts.Mode)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	awaiting := map[string]chan struct{}{} // "<job>/<phase>/<event>" -> closed when it happened
	signal := func(key string) {
		mu.Lock()
		ch, ok := awaiting[key]
		if !ok {
			ch = make(chan struct{})
			awaiting[key] = ch
		}
		mu.Unlock()
		select {
		case <-ch:
		default:
			close(ch)
		}
	}
	waitFor := func(key string) <-chan struct{} {
		mu.Lock()
		defer mu.Unlock()
		ch, ok := awaiting[key]
		if !ok {
			ch = make(chan struct{})
			awaiting[key] = ch
		}
		return ch
	}
	loopErr := make(chan error, 2)
	// The loops end before the backend closes (the ceiling closes it):
	// nothing may read a closed store.
	var loops sync.WaitGroup
	defer loops.Wait()
	defer cancel()
	loops.Add(2)
	loop := func(role engine.ReviewRole, handle func(engine.ClaimedReview) error) {
		defer loops.Done()
		for ctx.Err() == nil {
			got, err := ts.ClaimReviewsWait(ctx, engine.ClaimReviews{Role: role, Queue: approveQueue, Owner: "bench-" + role.String(),
				Max: 16, LeaseMS: 60_000})
			if err != nil {
				if ctx.Err() == nil {
					loopErr <- err
				}
				return
			}
			for _, c := range got {
				if err := handle(c); err != nil {
					loopErr <- err
					return
				}
			}
		}
	}
	go loop(engine.ReviewRoleWork, func(c engine.ClaimedReview) error {
		signal(c.Job + "/" + c.Phase + "/running")
		_, err := ts.ReviewReport(context.WithoutCancel(ctx), engine.ReviewReport{ReviewLeaseRef: c.Lease(),
			Op: engine.ReviewReportOutput, Output: []byte(`"done"`), Cost: 1})
		return err
	})
	go loop(engine.ReviewRoleReview, func(c engine.ClaimedReview) error {
		_, err := ts.ReviewReport(context.WithoutCancel(ctx), engine.ReviewReport{ReviewLeaseRef: c.Lease(),
			Op: engine.ReviewReportVerdict, Assessment: &engine.Assessment{Verdict: engine.VerdictApprove, Summary: "ok"}})
		if err == nil {
			signal(c.Job + "/" + c.Phase + "/approval")
		}
		return err
	})
	wait := func(key string) error {
		select {
		case <-waitFor(key):
			return nil
		case err := <-loopErr:
			return err
		case <-time.After(time.Minute):
			return fmt.Errorf("bench: %s did not happen within a minute", key)
		}
	}
	lat := make([]time.Duration, r.n)
	bar := r.bar("approvals", r.n)
	m := newMeter(bar)
	start := time.Now()
	for i := range r.n {
		job := fmt.Sprintf("approve-%d", i)
		if _, err := ts.CreateReview(ctx, engine.CreateReview{Job: job, Phase: "up", Queue: approveQueue, Type: "w", AutoReview: true}); err != nil {
			bar.finish()
			return err
		}
		if _, err := ts.CreateReview(ctx, engine.CreateReview{Job: job, Phase: "down", Queue: approveQueue, Type: "w", Deps: []string{"up"}}); err != nil {
			bar.finish()
			return err
		}
		if err := wait(job + "/up/approval"); err != nil {
			bar.finish()
			return err
		}
		t0 := time.Now()
		res, err := ts.ReviewCommand(ctx, engine.ReviewCommand{ReviewTarget: engine.ReviewTarget{Job: job, Phase: "up"}, Op: engine.ReviewOpApprove, By: "bench"})
		if err == nil && res.State != engine.ReviewSuccess {
			err = errors.New("bench: an approval did not reach SUCCESS")
		}
		if err == nil {
			err = wait(job + "/down/running")
		}
		if err != nil {
			bar.finish()
			return err
		}
		lat[i] = time.Since(t0)
		m.done()
	}
	elapsed := time.Since(start)
	bar.finish()
	cancel()
	loops.Wait()
	ceil, err := r.ceiling(commandPayloadBytes, 1, 0)
	if err != nil {
		return err
	}
	r.samples(lat, "approve command sent to the dependant task RUNNING under a worker's lease", m, elapsed)
	// The path: the approval (which releases the dependant), then the claim.
	r.latency("p50 approval ms", r.res.LatencyMS.P50, 2, "p50", ceil)
	r.res.Extra["p99_approval_ms"] = r.res.LatencyMS.P99
	r.res.Extra["approvals_per_s"] = float64(r.n) / elapsed.Seconds()
	return nil
}
