package listfilter

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"

	"github.com/heddlewf/heddle/engine/clock"
	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/engine/httpapi"
)

// store is an engine holding runs of random types, queues, statuses and
// creation times, and the same runs as a list to filter by brute force.
type store struct {
	e    *embedded.Engine
	jobs []*engine.Job
}

func newStore(t *testing.T, rng *rand.Rand, n int) *store {
	t.Helper()
	clk := clock.NewManual(now.Add(-48 * time.Hour))
	e, err := embedded.Open(embedded.Config{InMemory: true, Clock: clk, DisableScheduler: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Error(err)
		}
	})
	ctx := context.Background()
	for i := range n {
		clk.Advance(time.Duration(rng.IntN(600)) * time.Second)
		queue := fmt.Sprintf("q%d", rng.IntN(2))
		res, err := e.Create(ctx, engine.CreateJob{WorkflowID: fmt.Sprintf("wf-%d-%d", rng.IntN(3), i),
			Type: []string{"Order", "Ship", "Bill"}[rng.IntN(3)], Queue: queue})
		if err != nil {
			t.Fatal(err)
		}
		switch rng.IntN(4) {
		case 1:
			if _, err := e.Cancel(ctx, engine.Cancel{Target: engine.Target{Job: res.Job}}); err != nil {
				t.Fatal(err)
			}
		case 2:
			if _, err := e.Claim(ctx, engine.Claim{Queue: queue, Owner: "w", Max: 1, LeaseMS: 1000000}); err != nil {
				t.Fatal(err)
			}
		}
	}
	s := &store{e: e}
	if err := (&Query{}).All(ctx, e, func(j *engine.Job) error { s.jobs = append(s.jobs, j); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(s.jobs) != n {
		t.Fatalf("All listed %d runs of %d", len(s.jobs), n)
	}
	return s
}

// randomQuery writes a query of up to three random terms.
func randomQuery(rng *rand.Rand) string {
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	var terms []string
	for range rng.IntN(4) {
		switch rng.IntN(6) {
		case 0:
			terms = append(terms, pick("status=", "status!=")+pick("Queued", "Running", "Cancelled", "Queued,Running", "Completed"))
		case 1:
			terms = append(terms, pick("type=", "type!=")+pick("Order", "Ship", "Bill,Ship", "O*", "Nope"))
		case 2:
			terms = append(terms, pick("queue=", "queue!=")+pick("q0", "q1", "q*"))
		case 3:
			terms = append(terms, "id="+pick("wf-0-*", "wf-1-*", "wf-2-1*", "wf-0-3"))
		case 4:
			terms = append(terms, "created"+pick(">", ">=", "<", "<=")+pick("-47h", "-40h", "-24h", "-2h", "2026-11-01T00:00Z"))
		case 5:
			terms = append(terms, "closed"+pick(">", "<")+pick("-47h", "-24h", "now"))
		}
	}
	return strings.Join(terms, " ")
}

// TestPagesAgainstBruteForce pages through random queries, with random page
// sizes and scan budgets, straight from the engine and through the HTTP API
// (whose list takes the time range), and checks the pages join to exactly
// the runs a filter of every run keeps, in creation order.
func TestPagesAgainstBruteForce(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	s := newStore(t, rng, 300)
	api, err := httpapi.NewServer(httpapi.ServerConfig{Service: s.e})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api)
	defer srv.Close()
	client, err := httpapi.NewClient(httpapi.ClientConfig{Addrs: []string{srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 60 {
		text := randomQuery(rng)
		q, err := Parse(text, now)
		if err != nil {
			t.Fatalf("query %d %q: %v", i, text, err)
		}
		var want []engine.JobID
		for _, j := range s.jobs {
			if q.Match(j) {
				want = append(want, j.ID)
			}
		}
		var lister Lister = s.e
		switch i % 3 {
		case 1:
			lister = client
		case 2:
			lister = smallPages{s.e} // so that the scan budgets cut pages
		}
		limit, budget := 1+rng.IntN(40), []int{0, -1, 1, 7, 150}[rng.IntN(5)]
		var got []engine.JobID
		var after engine.JobID
		for pages := 0; ; pages++ {
			if pages > len(s.jobs)+1 {
				t.Fatalf("query %q: paging does not end", text)
			}
			p, err := q.Page(ctx, lister, after, limit, budget)
			if err != nil {
				t.Fatalf("query %q: %v", text, err)
			}
			if len(p.Jobs) > limit || (!p.Cut && p.Next != 0 && len(p.Jobs) != limit) {
				t.Fatalf("query %q limit %d: a page of %d runs, next %d, cut %v", text, limit, len(p.Jobs), p.Next, p.Cut)
			}
			for _, j := range p.Jobs {
				got = append(got, j.ID)
			}
			if p.Next == 0 {
				break
			}
			if p.Next <= after {
				t.Fatalf("query %q: cursor %d does not move on from %d", text, p.Next, after)
			}
			after = p.Next
		}
		if !slices.Equal(got, want) {
			t.Errorf("query %q (limit %d, budget %d): pages hold %v, want %v", text, limit, budget, got, want)
		}
	}
}

func TestPageLimits(t *testing.T) {
	q := &Query{}
	for _, limit := range []int{0, -1, engine.MaxPage + 1} {
		if _, err := q.Page(context.Background(), nil, 0, limit, 0); err == nil {
			t.Errorf("Page with limit %d: no error", limit)
		}
	}
}

// TestPageCut reads a query that matches only the last run, with a budget
// of one API page of four runs: the pages before it are cut, empty, and
// go on where they stopped.
func TestPageCut(t *testing.T) {
	s := newStore(t, rand.New(rand.NewPCG(1, 2)), 30)
	last := s.jobs[len(s.jobs)-1]
	q := mustParse(t, "id="+Quote(last.WorkflowID)+",nothing")
	ctx := context.Background()
	var after engine.JobID
	cuts := 0
	for {
		p, err := q.Page(ctx, smallPages{s.e}, after, 5, 1)
		if err != nil {
			t.Fatal(err)
		}
		if p.Cut {
			cuts++
			if len(p.Jobs) != 0 || p.Scanned != 4 || p.Next != after+4 {
				t.Fatalf("a cut page after %d holds %d runs after scanning %d, next %d", after, len(p.Jobs), p.Scanned, p.Next)
			}
		}
		if p.Next == 0 {
			if len(p.Jobs) != 1 || p.Jobs[0].ID != last.ID || p.Cut {
				t.Fatalf("the last page holds %v (cut %v), want run %d", p.Jobs, p.Cut, last.ID)
			}
			break
		}
		after = p.Next
	}
	if cuts != 7 {
		t.Errorf("%d cut pages over 30 runs read four at a time, want 7", cuts)
	}
}

// smallPages is a list API whose pages hold at most four runs.
type smallPages struct{ l Lister }

func (s smallPages) List(ctx context.Context, q engine.ListQuery) (*engine.ListPage, error) {
	q.Limit = min(q.Limit, 4)
	return s.l.List(ctx, q)
}
