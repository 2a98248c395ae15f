package httpapi

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
)

// TestListsThroughFollowers: on a three-node cluster, every node lists the
// same runs in the same order (newest first), pages forward and back with
// tokens made by any node, filters in Temporal's syntax and counts, for
// linearizable reads (a follower forwards them) and stale ones (a follower
// answers from its own state once it has applied the writes); and so again
// after the leadership moves.
func TestListsThroughFollowers(t *testing.T) {
	c := newQueryCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	clients := map[string]*Client{}
	for _, id := range c.ids {
		clients[id] = newClient(t, ClientConfig{Addrs: []string{c.url[id]}})
	}
	var follower string
	for _, id := range c.ids {
		if !c.nodes[id].IsLeader() {
			follower = id
			break
		}
	}
	// Writes through a follower: twelve runs, and a chain of three among
	// them whose first two continued as new.
	w := clients[follower]
	var want []engine.JobID
	for i := range 9 {
		res, err := w.Create(ctx, engine.CreateJob{WorkflowID: fmt.Sprintf("run-%d", i), Type: "T", Queue: "q"})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, res.Job)
	}
	res, err := w.Create(ctx, engine.CreateJob{WorkflowID: "chain", Type: "Counter", Queue: "chains"})
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, res.Job)
	for range 2 {
		got, err := w.Claim(ctx, engine.Claim{Queue: "chains", Owner: "w", Max: 1, LeaseMS: 3_600_000})
		if err != nil || len(got) != 1 {
			t.Fatalf("claim: %v, %v", got, err)
		}
		next, err := w.ContinueAsNew(ctx, engine.ContinueAsNew{LeaseRef: got[0].Lease()})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, next.Job)
	}
	slices.Reverse(want) // newest first

	check := func(when string) {
		t.Helper()
		// Stale reads need the node to have applied everything.
		target := c.leader().FSM().Applied()
		c.eventually("every node applying index "+fmt.Sprint(target), func() bool {
			for _, n := range c.nodes {
				if n.FSM().Applied() < target {
					return false
				}
			}
			return true
		})
		for _, id := range c.ids {
			for _, stale := range []bool{false, true} {
				rctx := ctx
				if stale {
					rctx = engine.WithStaleRead(ctx)
				}
				what := fmt.Sprintf("%s: node %s (leader %v, stale %v)", when, id, c.nodes[id].IsLeader(), stale)
				var got []engine.JobID
				var pages []*engine.ListPage
				q := engine.ListQuery{Limit: 5}
				at := id // the node asked: each page from the next node
				for {
					p, err := clients[at].List(rctx, q)
					if err != nil {
						t.Fatalf("%s: %v", what, err)
					}
					pages = append(pages, p)
					for _, j := range p.Jobs {
						got = append(got, j.ID)
					}
					if p.NextPageToken == "" {
						break
					}
					// The next page from another node, with the token.
					q.PageToken = p.NextPageToken
					at = c.ids[(slices.Index(c.ids, at)+1)%len(c.ids)]
				}
				if !slices.Equal(got, want) {
					t.Fatalf("%s: listed %v, want %v", what, got, want)
				}
				q.PageToken = pages[len(pages)-1].PrevPageToken
				p, err := clients[id].List(rctx, q)
				if err != nil || len(p.Jobs) != 5 || p.Jobs[0].ID != want[5] {
					t.Fatalf("%s: back a page: %+v, %v", what, p, err)
				}
				chain, err := clients[id].List(rctx, engine.ListQuery{Query: `WorkflowId = "chain" AND ExecutionStatus = "ContinuedAsNew" ORDER BY StartTime ASC`})
				if err != nil || len(chain.Jobs) != 2 || chain.Jobs[0].NextRunID != chain.Jobs[1].ID || chain.Jobs[1].NextRunID != want[0] {
					t.Fatalf("%s: the chain: %+v, %v", what, chain, err)
				}
				n, err := clients[id].Count(rctx, engine.ListQuery{ExecutionStatus: "Running"})
				if err != nil || n.Count != 10 || n.ByStatus["Queued"] != 10 {
					t.Fatalf("%s: count of open runs: %+v, %v", what, n, err)
				}
			}
		}
	}
	check("before the transfer")
	from, to := c.transfer(ctx)
	check(fmt.Sprintf("after the leadership moved from %s to %s", from, to))
}
