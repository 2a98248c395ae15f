package worker_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// gate lets the test hold an activity (and so keep its job Running).
var gate = make(chan struct{})

func Hold(ctx context.Context) error {
	select {
	case <-gate:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Collect receives six signals, holding an activity in between so that some
// arrive while the job is Running.
func Collect(ctx workflow.Context) (string, error) {
	ch := workflow.GetSignalChannel(ctx, "s")
	var got []string
	recv := func() {
		var v string
		ch.Receive(ctx, &v)
		got = append(got, v)
	}
	recv()
	recv()
	if err := workflow.ExecuteActivity(ctx, Hold).Get(ctx, nil); err != nil {
		return "", err
	}
	for len(got) < 6 {
		recv()
	}
	return strings.Join(got, ","), nil
}

func TestSignalsInEveryStatusDeliveredOnceInOrder(t *testing.T) {
	forEachCache(t, testSignalsInEveryStatusDeliveredOnceInOrder)
}

func testSignalsInEveryStatusDeliveredOnceInOrder(t *testing.T, cache int) {
	gate = make(chan struct{}) // fresh for every run of the test (-count)
	e := open(t)
	c := client.New(service(t, e))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "collect", TaskQueue: "sig"}, Collect)
	if err != nil {
		t.Fatal(err)
	}
	send := func(v string) {
		t.Helper()
		if err := c.SignalWorkflow(ctx, "collect", "", "s", v); err != nil {
			t.Fatal(err)
		}
	}
	status := func() engine.Status {
		j, err := c.DescribeWorkflow(ctx, "collect", "")
		if err != nil {
			t.Fatal(err)
		}
		return j.Status
	}
	waitFor := func(s engine.Status) {
		t.Helper()
		for {
			changed := e.Committed() // before the read, or a commit in between is missed
			if status() == s {
				return
			}
			select {
			case <-changed:
			case <-ctx.Done():
				t.Fatalf("the job never became %s", s)
			}
		}
	}
	// Queued: no worker yet.
	send("q1")
	send("q2")
	startWorker(t, e, "sig", worker.Options{CacheSize: cache}, func(w worker.Worker) {
		w.RegisterWorkflow(Collect)
		w.RegisterActivity(Hold)
	})
	// Running: the worker holds the job while Hold blocks.
	waitFor(engine.StatusRunning)
	send("r1")
	send("r2")
	close(gate)
	// Waiting: after the activity, for the rest.
	waitFor(engine.StatusWaiting)
	send("w1")
	send("w2")
	var got string
	if err := run.Get(ctx, &got); err != nil {
		t.Fatal(err)
	}
	if want := "q1,q2,r1,r2,w1,w2"; got != want {
		t.Fatalf("received %q, want %q", got, want)
	}
	verify(t, e)
}
