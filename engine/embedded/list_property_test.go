package embedded

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/clock"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/storage"
)

// The list's property test: a store of runs in every status (chains of
// continue-as-new and retries among them, several runs of one workflow id,
// runs that start in the same millisecond), random filters in both
// syntaxes, every order, and pages of random sizes walked to the end and
// back; each listing must be the reference's: the runs a plain Go
// predicate keeps, sorted by a plain Go comparison.

const listSeedEnv = "HEDDLE_LIST_SEED"

func listSeed(t *testing.T) uint64 {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(listSeedEnv); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", listSeedEnv, s, err)
		}
		seed = v
	}
	t.Logf("seed %d (rerun with %s=%d)", seed, listSeedEnv, seed)
	return seed
}

// listStore builds a random store of about n runs and returns the engine
// and every run's record.
func listStore(t *testing.T, rng *rand.Rand, n int) (*Engine, *clock.Manual, []*engine.Job) {
	t.Helper()
	clk := clock.NewManual(time.UnixMilli(1_800_000_000_000))
	e, err := Open(Config{InMemory: true, Clock: clk, DisableScheduler: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, e) })
	ctx := context.Background()
	tick := func() { clk.Advance(time.Duration(rng.IntN(3)) * time.Millisecond) } // 0: two runs in one ms
	queues := []string{"q0", "q1", "q2"}
	for i := range n {
		tick()
		wf := fmt.Sprintf("wf-%d", rng.IntN(n/3+1))
		if rng.IntN(4) == 0 {
			wf = fmt.Sprintf("order-%d", i)
		}
		c := engine.CreateJob{WorkflowID: wf, Type: []string{"Order", "Ship", "Bill", "Order v2"}[rng.IntN(4)], Queue: queues[rng.IntN(3)]}
		if _, err := e.Create(ctx, c); errors.Is(err, engine.ErrWorkflowExists) {
			c.WorkflowID = fmt.Sprintf("%s-%d", wf, i)
			if _, err := e.Create(ctx, c); err != nil {
				t.Fatal(err)
			}
		} else if err != nil {
			t.Fatal(err)
		}
	}
	// Claim most runs and end them in every way a worker does; continued
	// runs are queued again and may be claimed in turn.
	for range n + n/2 {
		tick()
		q := queues[rng.IntN(3)]
		got, err := e.Claim(ctx, engine.Claim{Queue: q, Owner: "w", Max: 1, LeaseMS: 3_600_000})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 {
			continue
		}
		ref := engine.LeaseRef{Job: got[0].Job, Attempt: got[0].Attempt, Token: got[0].LeaseToken}
		tick()
		switch rng.IntN(6) {
		case 0:
			_, err = e.Complete(ctx, engine.Complete{LeaseRef: ref})
		case 1:
			_, err = e.Fail(ctx, engine.Fail{LeaseRef: ref, Error: []byte(`{"message":"x"}`)})
		case 2:
			_, err = e.ContinueAsNew(ctx, engine.ContinueAsNew{LeaseRef: ref})
		case 3:
			_, err = e.ContinueAsNew(ctx, engine.ContinueAsNew{LeaseRef: ref, Failure: []byte(`{"message":"x"}`)})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	// People end or pause some of the rest.
	for id := engine.JobID(1); ; id++ {
		j, err := e.Describe(ctx, engine.Target{Job: id})
		if errors.Is(err, engine.ErrUnknownJob) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if j.Status.Terminal() {
			continue
		}
		tick()
		switch rng.IntN(5) {
		case 0:
			_, err = e.Cancel(ctx, engine.Cancel{Target: engine.Target{Job: id}})
		case 1:
			_, err = e.Terminate(ctx, engine.Terminate{Target: engine.Target{Job: id}, Reason: "r"})
		case 2:
			_, err = e.Suspend(ctx, engine.Suspend{Target: engine.Target{Job: id}})
		}
		if err != nil && !errors.Is(err, engine.ErrInvalidCommand) && !errors.Is(err, engine.ErrJobClosed) {
			var te *engine.TransitionError
			if !errors.As(err, &te) {
				t.Fatalf("ending run %d (%s): %v", id, j.Status, err)
			}
		}
	}
	var all []*engine.Job
	for id := engine.JobID(1); ; id++ {
		j, err := e.Describe(ctx, engine.Target{Job: id})
		if errors.Is(err, engine.ErrUnknownJob) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, j)
	}
	viewOK(t, e.db, func(r *storage.Reader) error {
		if errs := machine.Verify(r, 10); len(errs) > 0 {
			t.Fatalf("the store does not verify: %v", errs)
		}
		return nil
	})
	return e, clk, all
}

// refQuery is a filter as text, in either syntax, with its meaning as Go.
type refQuery struct {
	text  string
	match func(j *engine.Job) bool
}

// refExecStatus is Temporal's ExecutionStatus of j, worked out here
// apart from the engine's own.
func refExecStatus(j *engine.Job) string {
	switch j.Status {
	case engine.StatusCompleted:
		if j.NextRunID != 0 && j.NextRunReason == engine.ReasonContinuedAsNew {
			return "ContinuedAsNew"
		}
		return "Completed"
	case engine.StatusFailed, engine.StatusTerminated, engine.StatusTimedOut:
		return j.Status.String()
	case engine.StatusCancelled:
		return "Canceled"
	}
	return "Running"
}

// genQuery draws a random filter over all's runs.
func genQuery(rng *rand.Rand, all []*engine.Job, depth int) refQuery {
	pick := func() *engine.Job { return all[rng.IntN(len(all))] }
	if depth > 0 && rng.IntN(3) == 0 {
		a, b := genQuery(rng, all, depth-1), genQuery(rng, all, depth-1)
		if rng.IntN(2) == 0 {
			join := []string{" AND ", " and ", " "}[rng.IntN(3)]
			return refQuery{"(" + a.text + ")" + join + "(" + b.text + ")", func(j *engine.Job) bool { return a.match(j) && b.match(j) }}
		}
		return refQuery{"(" + a.text + ") OR (" + b.text + ")", func(j *engine.Job) bool { return a.match(j) || b.match(j) }}
	}
	j0 := pick()
	switch rng.IntN(13) {
	case 0:
		s := []string{"Running", "Completed", "ContinuedAsNew", "Failed", "Canceled", "Terminated"}[rng.IntN(6)]
		return refQuery{fmt.Sprintf("ExecutionStatus = %q", s), func(j *engine.Job) bool { return refExecStatus(j) == s }}
	case 1:
		return refQuery{"status=open", func(j *engine.Job) bool { return !j.Status.Terminal() }}
	case 2:
		s := []engine.Status{engine.StatusQueued, engine.StatusRunning, engine.StatusSuspended, engine.StatusCompleted}[rng.IntN(4)]
		return refQuery{"HeddleStatus=" + s.String(), func(j *engine.Job) bool { return j.Status == s }}
	case 3:
		return refQuery{"status!=Running,Failed", func(j *engine.Job) bool { s := refExecStatus(j); return s != "Running" && s != "Failed" }}
	case 4:
		return refQuery{fmt.Sprintf("WorkflowType = %q", j0.Type), func(j *engine.Job) bool { return j.Type == j0.Type }}
	case 5:
		return refQuery{`type IN ("Ship", "Bill")`, func(j *engine.Job) bool { return j.Type == "Ship" || j.Type == "Bill" }}
	case 6:
		return refQuery{"queue!=" + j0.Queue, func(j *engine.Job) bool { return j.Queue != j0.Queue }}
	case 7:
		return refQuery{fmt.Sprintf("WorkflowId = '%s'", j0.WorkflowID), func(j *engine.Job) bool { return j.WorkflowID == j0.WorkflowID }}
	case 8:
		p := j0.WorkflowID[:1+rng.IntN(len(j0.WorkflowID))]
		if rng.IntN(2) == 0 {
			return refQuery{"id=" + p + "*", func(j *engine.Job) bool { return strings.HasPrefix(j.WorkflowID, p) }}
		}
		return refQuery{fmt.Sprintf("WorkflowId STARTS_WITH %q", p), func(j *engine.Job) bool { return strings.HasPrefix(j.WorkflowID, p) }}
	case 9:
		return refQuery{fmt.Sprintf("RunId = %d", j0.ID), func(j *engine.Job) bool { return j.ID == j0.ID }}
	case 10:
		at := pick().CreatedMS + int64(rng.IntN(3)) - 1
		op := []string{">", ">=", "<", "<=", "=", "!="}[rng.IntN(6)]
		return refQuery{fmt.Sprintf("StartTime %s %d", op, at), func(j *engine.Job) bool { return cmpOp(op, j.CreatedMS, at) }}
	case 11:
		c := pick()
		for !c.Status.Terminal() {
			c = pick()
		}
		at := c.ClosedMS + int64(rng.IntN(3)) - 1
		op := []string{">", ">=", "<", "<="}[rng.IntN(4)]
		return refQuery{fmt.Sprintf("closed%s%d", op, at), func(j *engine.Job) bool { return j.Status.Terminal() && cmpOp(op, j.ClosedMS, at) }}
	default:
		a, b := pick().CreatedMS, pick().CreatedMS
		a, b = min(a, b), max(a, b)
		return refQuery{fmt.Sprintf(`StartTime BETWEEN "%d" AND "%d"`, a, b), func(j *engine.Job) bool { return j.CreatedMS >= a && j.CreatedMS <= b }}
	}
}

func cmpOp(op string, a, b int64) bool {
	switch op {
	case ">":
		return a > b
	case ">=":
		return a >= b
	case "<":
		return a < b
	case "<=":
		return a <= b
	case "=":
		return a == b
	}
	return a != b
}

// refSorted sorts jobs as order lists them.
func refSorted(jobs []*engine.Job, order engine.ListOrder) []*engine.Job {
	out := slices.Clone(jobs)
	byID := func(a, b *engine.Job) int { return cmp.Compare(a.ID, b.ID) }
	switch order {
	case engine.ListStartAsc:
		slices.SortFunc(out, byID)
	case engine.ListStartDesc:
		slices.SortFunc(out, func(a, b *engine.Job) int { return byID(b, a) })
	default:
		desc := order == engine.ListCloseDesc
		slices.SortFunc(out, func(a, b *engine.Job) int {
			ca, cb := a.Status.Terminal(), b.Status.Terminal()
			if ca != cb {
				if ca {
					return -1 // ended runs first, both ways
				}
				return 1
			}
			c := 0
			if ca {
				c = cmp.Compare(a.ClosedMS, b.ClosedMS)
			}
			if c == 0 {
				c = byID(a, b)
			}
			if desc {
				return -c
			}
			return c
		})
	}
	return out
}

func ids(jobs []*engine.Job) []engine.JobID {
	out := make([]engine.JobID, len(jobs))
	for i, j := range jobs {
		out[i] = j.ID
	}
	return out
}

func TestListMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(listSeed(t), 0x6c697374))
	e, _, all := listStore(t, rng, 240)
	dist := map[string]int{}
	for _, j := range all {
		dist[refExecStatus(j)+"/"+j.Status.String()]++
	}
	t.Logf("runs: %d %v", len(all), dist)
	ctx := context.Background()
	orders := []engine.ListOrder{engine.ListOrderDefault, engine.ListStartDesc, engine.ListStartAsc, engine.ListCloseDesc, engine.ListCloseAsc}
	orderBy := map[engine.ListOrder]string{engine.ListStartDesc: "ORDER BY StartTime DESC", engine.ListStartAsc: "ORDER BY StartTime",
		engine.ListCloseDesc: "order by CloseTime desc", engine.ListCloseAsc: "ORDER BY CloseTime ASC"}
	for round := range 150 {
		rq := genQuery(rng, all, 2)
		if rng.IntN(8) == 0 {
			rq = refQuery{"", func(*engine.Job) bool { return true }}
		}
		order := orders[rng.IntN(len(orders))]
		lq := engine.ListQuery{Query: rq.text, Limit: 1 + rng.IntN(40), Places: true}
		if order != engine.ListOrderDefault && rng.IntN(2) == 0 {
			lq.Query += " " + orderBy[order]
		} else {
			lq.Order = order
		}
		if order == engine.ListOrderDefault {
			order = engine.ListStartDesc
		}
		var want []*engine.Job
		for _, j := range all {
			if rq.match(j) {
				want = append(want, j)
			}
		}
		want = refSorted(want, order)
		what := fmt.Sprintf("round %d: %q order %v limit %d", round, lq.Query, lq.Order, lq.Limit)

		// Forward to the end.
		var got []*engine.Job
		var pages []*engine.ListPage
		for {
			p, err := e.List(ctx, lq)
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if p.Order != order || len(p.Jobs) > lq.Limit || (p.NextPageToken != "" && len(p.Jobs) != lq.Limit) || p.Cut {
				t.Fatalf("%s: page %d has %d runs, order %v, next %q, cut %v", what, len(pages), len(p.Jobs), p.Order, p.NextPageToken, p.Cut)
			}
			if (len(pages) == 0) != (p.PrevPageToken == "") {
				t.Fatalf("%s: page %d has prev token %q", what, len(pages), p.PrevPageToken)
			}
			pages = append(pages, p)
			got = append(got, p.Jobs...)
			if p.NextPageToken == "" {
				break
			}
			lq.PageToken = p.NextPageToken
		}
		if !slices.Equal(ids(got), ids(want)) {
			t.Fatalf("%s:\n got %v\nwant %v", what, ids(got), ids(want))
		}
		// Each run's place (ListQuery.Places) goes on with the run after it
		// going forward, and with the run before it going back.
		at := map[engine.JobID]int{}
		for i, j := range want {
			at[j.ID] = i
		}
		checkPlaces := func(p *engine.ListPage, forward bool) {
			t.Helper()
			if len(p.Places) != len(p.Jobs) {
				t.Fatalf("%s: %d places for %d runs", what, len(p.Places), len(p.Jobs))
			}
			if len(p.Jobs) == 0 {
				return
			}
			i := rng.IntN(len(p.Jobs))
			next, err := e.List(ctx, engine.ListQuery{Query: lq.Query, Order: lq.Order, PageToken: p.Places[i], Limit: 1})
			if err != nil {
				t.Fatalf("%s: from the place of %d: %v", what, p.Jobs[i].ID, err)
			}
			k := at[p.Jobs[i].ID] + 1
			if !forward {
				k -= 2
			}
			var wantNext []engine.JobID
			if k >= 0 && k < len(want) {
				wantNext = []engine.JobID{want[k].ID}
			}
			if !slices.Equal(ids(next.Jobs), wantNext) {
				t.Fatalf("%s: from the place of %d (forward %v): %v, want %v", what, p.Jobs[i].ID, forward, ids(next.Jobs), wantNext)
			}
		}
		for _, p := range pages {
			checkPlaces(p, true)
		}
		// And back from the last page to the first.
		back := slices.Clone(pages[len(pages)-1].Jobs)
		tok := pages[len(pages)-1].PrevPageToken
		for n := len(pages) - 2; tok != ""; n-- {
			lq.PageToken = tok
			p, err := e.List(ctx, lq)
			if err != nil {
				t.Fatalf("%s: back: %v", what, err)
			}
			if n < 0 || !slices.Equal(ids(p.Jobs), ids(pages[n].Jobs)) {
				t.Fatalf("%s: back to page %d: %v, forward it was %v", what, n, ids(p.Jobs), ids(pages[max(n, 0)].Jobs))
			}
			if p.NextPageToken == "" {
				t.Fatalf("%s: a page reached going back has no next token", what)
			}
			checkPlaces(p, false)
			back = append(slices.Clone(p.Jobs), back...)
			tok = p.PrevPageToken
		}
		if !slices.Equal(ids(back), ids(want)) {
			t.Fatalf("%s: back:\n got %v\nwant %v", what, ids(back), ids(want))
		}
		// The count agrees.
		c, err := e.Count(ctx, engine.ListQuery{Query: rq.text})
		if err != nil || c.Count != uint64(len(want)) {
			t.Fatalf("%s: count %+v, %v; want %d", what, c, err, len(want))
		}
		by := map[string]uint64{}
		for _, j := range want {
			by[j.Status.String()]++
		}
		if fmt.Sprint(by) != fmt.Sprint(c.ByStatus) {
			t.Fatalf("%s: count by status %v, want %v", what, c.ByStatus, by)
		}
	}
	// The first cursor pages oldest first, as it always did.
	var got []*engine.Job
	for q := (engine.ListQuery{Limit: 7, After: 0, Order: engine.ListStartAsc}); ; {
		p, err := e.List(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, p.Jobs...)
		if p.Next == 0 {
			break
		}
		q.After = p.Next
	}
	if !slices.Equal(ids(got), ids(all)) {
		t.Fatalf("After paging: %v, want %v", ids(got), ids(all))
	}
}
