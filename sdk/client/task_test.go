package client_test

import (
	"context"
	"errors"
	"testing"

	"github.com/heddlewf/heddle/engine"

	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/sdk/client"
)

// The client's task commands on a draft: configured, activated, an
// illegal approval refused with the state, then canceled; the manifest
// read back.
func TestClientTaskCommands(t *testing.T) {
	e, err := embedded.Open(embedded.Config{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := e.Close(); err != nil {
			t.Error(err)
		}
	}()
	ctx := context.Background()
	if _, err := e.CreateTask(ctx, engine.CreateTask{Job: "j", Phase: "p", Queue: "q", Type: "w", Draft: true}); err != nil {
		t.Fatal(err)
	}
	c := client.New(e)
	d := client.TaskDecision{Job: "j", Phase: "p", By: "ann"}
	if s, err := c.ConfigureTask(ctx, d, engine.TaskConfig{Objective: "o"}); err != nil || s != engine.TaskDraft {
		t.Fatalf("configure: %s, %v", s, err)
	}
	if s, err := c.ActivateTask(ctx, d); err != nil || s != engine.TaskPending {
		t.Fatalf("activate: %s, %v", s, err)
	}
	_, err = c.ApproveTask(ctx, d)
	var se *engine.TaskStateError
	if !errors.As(err, &se) || se.State != engine.TaskPending {
		t.Fatalf("approve while PENDING: %v", err)
	}
	if s, err := c.CancelTask(ctx, client.TaskDecision{Job: "j", Phase: "p", By: "ann", Reason: "not needed"}); err != nil || s != engine.TaskCanceled {
		t.Fatalf("cancel: %s, %v", s, err)
	}
	m, err := c.DescribeTaskJob(ctx, "j")
	if err != nil || m.Status != engine.TaskCanceled || m.History[0].Summary != "not needed" || m.History[0].DecidedBy != "ann" {
		t.Fatalf("manifest %+v, %v", m, err)
	}
	task, err := c.DescribeTask(ctx, "j", "p")
	if err != nil || task.Config.Objective != "o" {
		t.Fatalf("task %+v, %v", task, err)
	}
	if ts, err := c.ListTasks(ctx, "j"); err != nil || len(ts) != 1 {
		t.Fatalf("list %+v, %v", ts, err)
	}
}
