package embedded

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/clock"
)

// TestListReadsOnlyWhatItsIndexesAllow: a filter that an index answers
// reads the records of the runs it lists and no others (Scanned), in a
// store where most runs do not match, in every order.
func TestListReadsOnlyWhatItsIndexesAllow(t *testing.T) {
	clk := clock.NewManual(time.UnixMilli(1_800_000_000_000))
	e, err := Open(Config{InMemory: true, Clock: clk, DisableScheduler: true})
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, e)
	ctx := context.Background()
	create := func(wf, typ string) engine.JobID {
		t.Helper()
		clk.Advance(time.Millisecond)
		res, err := e.Create(ctx, engine.CreateJob{WorkflowID: wf, Type: typ, Queue: "q"})
		if err != nil {
			t.Fatal(err)
		}
		return res.Job
	}
	for i := range 300 {
		id := create(fmt.Sprintf("bulk-%d", i), "Bulk")
		clk.Advance(time.Millisecond)
		if _, err := e.Cancel(ctx, engine.Cancel{Target: engine.Target{Job: id}}); err != nil {
			t.Fatal(err)
		}
	}
	from := clk.Now().UnixMilli() + 1
	x1 := create("x", "Rare")
	if _, err := e.Terminate(ctx, engine.Terminate{Target: engine.Target{Job: x1}, Reason: "again"}); err != nil {
		t.Fatal(err)
	}
	x2 := create("x", "Rare")
	open := create("y", "Rare")
	for _, tc := range []struct {
		query string
		want  []engine.JobID // newest first
	}{
		{`WorkflowId = "x"`, []engine.JobID{x2, x1}},
		{`WorkflowId IN ("x", "y")`, []engine.JobID{open, x2, x1}},
		{`ExecutionStatus = "Running"`, []engine.JobID{open, x2}},
		{`status=Terminated`, []engine.JobID{x1}},
		{`WorkflowType = "Rare"`, []engine.JobID{open, x2, x1}},
		{fmt.Sprintf("StartTime >= %d", from), []engine.JobID{open, x2, x1}},
		{fmt.Sprintf(`RunId IN (%d, %d, 999999)`, x1, open), []engine.JobID{open, x1}},
	} {
		for _, order := range []engine.ListOrder{engine.ListStartDesc, engine.ListStartAsc, engine.ListCloseAsc, engine.ListCloseDesc} {
			p, err := e.List(ctx, engine.ListQuery{Query: tc.query, Order: order})
			if err != nil {
				t.Fatalf("%s %v: %v", tc.query, order, err)
			}
			if len(p.Jobs) != len(tc.want) {
				t.Errorf("%s %v: %d runs, want %d", tc.query, order, len(p.Jobs), len(tc.want))
			}
			// A close order walks the closing-time index for the runs that
			// ended (a bound on the closing time narrows it, below), and the
			// filter's index for the open ones: open runs alone read no more.
			if order.ByClose() && tc.query == `ExecutionStatus = "Running"` && p.Scanned != len(tc.want) {
				t.Errorf("%s %v: read %d records for %d runs", tc.query, order, p.Scanned, len(p.Jobs))
			}
			if !order.ByClose() && p.Scanned != len(tc.want) {
				t.Errorf("%s %v: read %d records for %d runs: the filter did not use its index", tc.query, order, p.Scanned, len(tc.want))
			}
			if order == engine.ListStartDesc {
				for i, j := range p.Jobs {
					if j.ID != tc.want[i] {
						t.Errorf("%s: run %d is %d, want %d", tc.query, i, j.ID, tc.want[i])
					}
				}
			}
		}
	}
	// A bounded closing time reads only the runs that ended in it.
	p, err := e.List(ctx, engine.ListQuery{Query: fmt.Sprintf("CloseTime >= %d ORDER BY CloseTime DESC", from)})
	if err != nil || len(p.Jobs) != 1 || p.Jobs[0].ID != x1 || p.Scanned != 1 {
		t.Errorf("closed since %d: %+v, %v", from, p, err)
	}
	// Counting statuses reads no record, and agrees with the list.
	c, err := e.Count(ctx, engine.ListQuery{ExecutionStatus: "Running"})
	if err != nil || c.Count != 2 || c.ByStatus["Queued"] != 2 {
		t.Errorf("count of running: %+v, %v", c, err)
	}
	c, err = e.Count(ctx, engine.ListQuery{})
	if err != nil || c.Count != 303 || c.ByStatus["Cancelled"] != 300 || c.ByStatus["Terminated"] != 1 {
		t.Errorf("count of all: %+v, %v", c, err)
	}
}

// TestListScanBudget: a filter no index answers reads at most
// MaxListScan records a page; the short page says so and its token goes
// on where it stopped, and the page after it finds the rest.
func TestListScanBudget(t *testing.T) {
	e, err := Open(Config{InMemory: true, DisableScheduler: true})
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, e)
	ctx := context.Background()
	n := engine.MaxListScan + 50
	for i := range n {
		wf := fmt.Sprintf("run-%05d", i)
		if i == 0 || i == n-1 {
			wf = fmt.Sprintf("needle-%d", i)
		}
		if _, err := e.Create(ctx, engine.CreateJob{WorkflowID: wf, Type: "T", Queue: "q"}); err != nil {
			t.Fatal(err)
		}
	}
	q := engine.ListQuery{Query: `WorkflowId STARTS_WITH "needle-"`, Limit: 5}
	p, err := e.List(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Jobs) != 1 || p.Jobs[0].WorkflowID != fmt.Sprintf("needle-%d", n-1) || !p.Cut || p.Scanned != engine.MaxListScan || p.NextPageToken == "" {
		t.Fatalf("first page: %d runs, cut %v, scanned %d, next %q", len(p.Jobs), p.Cut, p.Scanned, p.NextPageToken)
	}
	q.PageToken = p.NextPageToken
	p, err = e.List(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Jobs) != 1 || p.Jobs[0].WorkflowID != "needle-0" || p.Cut || p.Scanned != 50 || p.NextPageToken != "" || p.PrevPageToken == "" {
		t.Fatalf("second page: %d runs, cut %v, scanned %d, next %q", len(p.Jobs), p.Cut, p.Scanned, p.NextPageToken)
	}
	// Oldest first, by the first cursor, a page that finds nothing before
	// its budget runs out still says where to go on.
	p, err = e.List(ctx, engine.ListQuery{Query: `WorkflowId STARTS_WITH "needle-"`, After: 1, Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Jobs) != 0 || !p.Cut || p.Next != engine.JobID(engine.MaxListScan+1) || p.NextPageToken == "" {
		t.Fatalf("oldest first after run 1: %d runs, cut %v, next %d", len(p.Jobs), p.Cut, p.Next)
	}
	// And back: the page before the last run finds the first needle past
	// the budget, from where it stopped.
	q = engine.ListQuery{Query: `WorkflowId STARTS_WITH "needle-"`, Limit: 5}
	last, err := e.List(ctx, engine.ListQuery{Query: `WorkflowId STARTS_WITH "needle-"`, Limit: 1, Order: engine.ListStartAsc, After: engine.JobID(n - 1)})
	if err != nil || len(last.Jobs) != 1 || last.PrevPageToken == "" {
		t.Fatalf("the last needle: %+v, %v", last, err)
	}
	q.Order, q.PageToken = engine.ListStartAsc, last.PrevPageToken
	back, err := e.List(ctx, q)
	if err != nil || len(back.Jobs) != 0 || !back.Cut || back.PrevPageToken == "" || back.NextPageToken == "" {
		t.Fatalf("back from the last needle: %+v, %v", back, err)
	}
	q.PageToken = back.PrevPageToken
	back, err = e.List(ctx, q)
	if err != nil || len(back.Jobs) != 1 || back.Jobs[0].WorkflowID != "needle-0" || back.PrevPageToken != "" {
		t.Fatalf("back again: %+v, %v", back, err)
	}
}

// TestListRefuses: what List refuses, as invalid commands.
func TestListRefuses(t *testing.T) {
	e, err := Open(Config{InMemory: true, DisableScheduler: true})
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, e)
	ctx := context.Background()
	for range 3 {
		if _, err := e.Create(ctx, engine.CreateJob{Type: "T", Queue: "q"}); err != nil {
			t.Fatal(err)
		}
	}
	p, err := e.List(ctx, engine.ListQuery{Query: "type=T", Limit: 1})
	if err != nil || p.NextPageToken == "" {
		t.Fatalf("%+v, %v", p, err)
	}
	for _, q := range []engine.ListQuery{
		{Query: "type=U", PageToken: p.NextPageToken},                             // another query
		{Query: "type=T", Order: engine.ListStartAsc, PageToken: p.NextPageToken}, // another order
		{Query: "type=T", PageToken: p.NextPageToken + "x"},
		{Query: "type=T", PageToken: "garbage"},
		{Query: "WorkflowType = "},
		{ExecutionStatus: "Sleeping"},
		{After: 1, Order: engine.ListCloseAsc},
		{Limit: engine.MaxPage + 1},
	} {
		if _, err := e.List(ctx, q); !errors.Is(err, engine.ErrInvalidCommand) {
			t.Errorf("List(%+v) = %v, want ErrInvalidCommand", q, err)
		}
	}
}
