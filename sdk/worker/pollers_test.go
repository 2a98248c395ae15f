package worker_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// countedClaims records the worker's claims in flight: how many at most,
// and the largest Max one asked for; reached is closed once want are in
// flight together.
type countedClaims struct {
	engine.Service
	want    int
	reached chan struct{}

	mu       sync.Mutex
	inFlight int
	most     int
	maxAsked int
}

func (s *countedClaims) ClaimWait(ctx context.Context, c engine.Claim) ([]engine.ClaimedJob, error) {
	s.mu.Lock()
	s.inFlight++
	s.most = max(s.most, s.inFlight)
	s.maxAsked = max(s.maxAsked, c.Max)
	if s.inFlight == s.want {
		select {
		case <-s.reached:
		default:
			close(s.reached)
		}
	}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.inFlight--
		s.mu.Unlock()
	}()
	return s.Service.ClaimWait(ctx, c)
}

// ParallelShips ships n reservations at once.
func ParallelShips(ctx workflow.Context, n int) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 5 * time.Second})
	var fs []workflow.Future
	for i := range n {
		fs = append(fs, workflow.ExecuteActivity(ctx, Ship, fmt.Sprint("R-", i)))
	}
	for _, f := range fs {
		if err := f.Get(ctx, nil); err != nil {
			return err
		}
	}
	return nil
}

// A worker runs as many pollers as Temporal's larger poller count asks,
// each claiming for its share of the worker's slots, and its work gets
// done; with neither count set it runs one.
func TestWorkerPollers(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    worker.Options
		pollers int
		maxAsk  int
	}{
		{"three pollers", worker.Options{MaxConcurrentJobs: 9, MaxConcurrentActivityTaskPollers: 3, MaxConcurrentWorkflowTaskPollers: 2}, 3, 3},
		{"the default", worker.Options{MaxConcurrentJobs: 9}, 1, 9},
		{"more pollers than slots", worker.Options{MaxConcurrentJobs: 2, MaxConcurrentWorkflowTaskPollers: 5}, 2, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := open(t)
			svc := &countedClaims{Service: service(t, e), want: tc.pollers, reached: make(chan struct{})}
			startWorkerOn(t, svc, "pollers", tc.opts, func(w worker.Worker) { w.RegisterWorkflow(ParallelShips) })
			select {
			case <-svc.reached:
			case <-time.After(30 * time.Second):
				t.Fatalf("%d claims never in flight together", tc.pollers)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			run, err := client.New(service(t, e)).ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "pollers", TaskQueue: "pollers"}, ParallelShips, 6)
			if err != nil {
				t.Fatal(err)
			}
			if err := run.Get(ctx, nil); err != nil {
				t.Fatal(err)
			}
			svc.mu.Lock()
			defer svc.mu.Unlock()
			if svc.most != tc.pollers || svc.maxAsked > tc.maxAsk {
				t.Fatalf("%d claims in flight at most, the largest asking for %d; want %d, each asking for at most %d",
					svc.most, svc.maxAsked, tc.pollers, tc.maxAsk)
			}
		})
	}
}

func TestWorkerPollersValidate(t *testing.T) {
	for _, o := range []worker.Options{{MaxConcurrentWorkflowTaskPollers: -1}, {MaxConcurrentActivityTaskPollers: -2}} {
		if err := o.Validate(); err == nil {
			t.Errorf("%+v: Validate accepted a negative poller count", o)
		}
	}
}

// keptReleaser records the ReleaseKept calls of a worker's service.
type keptReleaser struct {
	engine.Service
	mu    sync.Mutex
	calls []string
}

func (k *keptReleaser) ReleaseKept(_ context.Context, queue, owner string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.calls = append(k.calls, queue+"/"+owner)
}

// A worker that stops has its service give back what it holds for the
// worker's next claims (engine.KeptClaimReleaser), once its pollers ended:
// no claim of it is to come, and those jobs would wait out their leases.
func TestWorkerStopReleasesKeptJobs(t *testing.T) {
	e := open(t)
	svc := &keptReleaser{Service: service(t, e)}
	w := startWorkerOn(t, svc, "kept", worker.Options{Identity: "w-1", MaxConcurrentActivityTaskPollers: 2})
	svc.mu.Lock()
	before := len(svc.calls)
	svc.mu.Unlock()
	w.Stop()
	svc.mu.Lock()
	defer svc.mu.Unlock()
	if before != 0 || len(svc.calls) != 1 || svc.calls[0] != "kept/w-1" {
		t.Fatalf("ReleaseKept calls: %d before Stop, %q after; want one, for kept/w-1, at Stop", before, svc.calls)
	}
}
