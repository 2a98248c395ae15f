package worker_test

import (
	"context"
	"testing"

	"github.com/heddlewf/heddle/engine"

	"github.com/heddlewf/heddle/engine/embedded"
)

// dumpJobs logs every job and its history, to explain a test that timed out.
func dumpJobs(t *testing.T, e *embedded.Engine) {
	t.Helper()
	page, err := e.List(context.Background(), engine.ListQuery{Limit: 100})
	if err != nil {
		t.Log(err)
		return
	}
	for _, j := range page.Jobs {
		t.Logf("job %d %s %s %s attempt %d wait %+v", j.ID, j.WorkflowID, j.Type, j.Status, j.Attempt, j.Wait)
		h, _ := e.History(context.Background(), j.ID, 0, 100)
		for _, ev := range h.Events {
			t.Logf("   %d %s step=%q name=%q reason=%q commit=%v", ev.Seq, ev.Type, ev.Step, ev.Name, ev.Reason, ev.Commit)
		}
	}
}
