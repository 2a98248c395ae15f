package httpapi

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
)

// fakeShard lists one shard's runs as the machine does (machine.ListJobs),
// over positions in the shard's own order: "F<p>" is the token of the runs
// after position p, "B<p>" of the runs before it; a page reads at most
// budget runs, of which only those that match count, and is cut short
// when it reads budget runs before it is full.
type fakeShard struct {
	runs   []*engine.Job // in the shard's order
	match  []bool
	budget int
}

func (s *fakeShard) list(tok string, limit int, order engine.ListOrder) *engine.ListPage {
	page := &engine.ListPage{Jobs: []*engine.Job{}, Order: order}
	forward, from := true, -1
	started := tok != ""
	if started {
		n, err := strconv.Atoi(tok[1:])
		if err != nil {
			panic(tok)
		}
		forward, from = tok[0] == 'F', n
	}
	step, at := 1, from+1
	if !forward {
		step, at = -1, from-1
	}
	var found []int
	last, more, cut := -2, false, false
	for ; at >= 0 && at < len(s.runs); at += step {
		if page.Scanned >= s.budget {
			cut = true
			break
		}
		page.Scanned++
		last = at
		if !s.match[at] {
			continue
		}
		if len(found) == limit {
			more = true
			break
		}
		found = append(found, at)
	}
	page.Cut = cut && len(found) < limit
	var onward string
	dir := "F"
	if !forward {
		dir = "B"
	}
	switch {
	case more:
		onward = dir + strconv.Itoa(found[len(found)-1])
	case cut && last != -2:
		onward = dir + strconv.Itoa(last)
	}
	if forward {
		for _, i := range found {
			page.Jobs = append(page.Jobs, s.runs[i])
			page.Places = append(page.Places, "F"+strconv.Itoa(i))
		}
		page.NextPageToken = onward
		switch {
		case !started:
		case len(found) > 0:
			page.PrevPageToken = "B" + strconv.Itoa(found[0])
		default:
			page.PrevPageToken = "B" + strconv.Itoa(from+1)
		}
		return page
	}
	page.PrevPageToken = onward
	for i := len(found) - 1; i >= 0; i-- {
		page.Jobs = append(page.Jobs, s.runs[found[i]])
		page.Places = append(page.Places, "B"+strconv.Itoa(found[i]))
	}
	if len(found) > 0 {
		page.NextPageToken = "F" + strconv.Itoa(found[0])
	} else {
		page.NextPageToken = "F" + strconv.Itoa(from-1)
	}
	return page
}

// listFake is listMerged over fake shards.
func listFake(shards []*fakeShard, tok string, limit int, order engine.ListOrder) (*engine.ListPage, error) {
	from := mergedToken{states: make([]string, len(shards))}
	if tok != "" {
		var err error
		if from, err = decodeMergedToken(tok, len(shards)); err != nil {
			return nil, err
		}
	}
	pages := make([]*engine.ListPage, len(shards))
	for k, s := range shards {
		if from.back && from.states[k] == "" {
			continue
		}
		pages[k] = s.list(from.states[k], limit, order)
	}
	return mergePages(from, pages, limit), nil
}

func mergeSeed(t *testing.T) uint64 {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("HEDDLE_MERGE_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("seed %d (HEDDLE_MERGE_SEED=%d replays it)", seed, seed)
	return seed
}

// TestMergedListMatchesReference: the router's merge of the shards'
// pages, paged forward to the end and back to the start in every order,
// with page limits from 1 up and shards whose pages are cut short by their
// scan budget, lists every matching run of every shard once, in the order
// of the runs of all shards sorted together (the reference).
func TestMergedListMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(mergeSeed(t), 0x6d657267))
	for round := range 300 {
		nShards := 1 + rng.IntN(5)
		order := []engine.ListOrder{engine.ListStartDesc, engine.ListStartAsc, engine.ListCloseDesc, engine.ListCloseAsc}[rng.IntN(4)]
		budget := 1000
		if rng.IntN(3) == 0 {
			budget = 1 + rng.IntN(6)
		}
		var shards []*fakeShard
		var want []*engine.Job
		for k := range nShards {
			s := &fakeShard{budget: budget}
			created := int64(rng.IntN(5))
			var runs []*engine.Job
			for n := range rng.IntN(25) {
				created += int64(rng.IntN(3)) // the times a shard stamps never go back
				j := &engine.Job{ID: engine.JobIDOf(k, uint64(n+1)), CreatedMS: created, Status: engine.StatusRunning}
				if rng.IntN(2) == 0 {
					j.Status, j.ClosedMS = engine.StatusCompleted, created+int64(rng.IntN(40))
				}
				runs = append(runs, j)
			}
			// The shard's own order is the merged order restricted to it.
			slices.SortFunc(runs, func(a, b *engine.Job) int { return compareRuns(order, a, b) })
			for _, j := range runs {
				m := rng.IntN(4) != 0
				s.runs, s.match = append(s.runs, j), append(s.match, m)
				if m {
					want = append(want, j)
				}
			}
			shards = append(shards, s)
		}
		slices.SortFunc(want, func(a, b *engine.Job) int { return compareRuns(order, a, b) })
		limit := 1 + rng.IntN(8)
		what := fmt.Sprintf("round %d: %d shards, %v, limit %d, budget %d", round, nShards, order, limit, budget)

		var got []engine.JobID
		var pages []*engine.ListPage
		tok := ""
		for n := 0; ; n++ {
			if n > 10*len(want)+50 {
				t.Fatalf("%s: the listing does not end", what)
			}
			p, err := listFake(shards, tok, limit, order)
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if len(p.Jobs) > limit || (budget == 1000 && p.NextPageToken != "" && len(p.Jobs) != limit) {
				t.Fatalf("%s: page %d has %d runs, next %q", what, n, len(p.Jobs), p.NextPageToken)
			}
			if (n == 0) != (p.PrevPageToken == "") && budget == 1000 {
				t.Fatalf("%s: page %d has prev token %q", what, n, p.PrevPageToken)
			}
			pages = append(pages, p)
			got = append(got, ids(p.Jobs)...)
			if tok = p.NextPageToken; tok == "" {
				break
			}
		}
		if !slices.Equal(got, ids(want)) {
			t.Fatalf("%s: forward\n got %v\nwant %v", what, got, ids(want))
		}
		// Back from the last page to the first: without cut pages, the same
		// pages; with them, the same runs.
		var back []engine.JobID
		tok = pages[len(pages)-1].PrevPageToken
		back = ids(pages[len(pages)-1].Jobs)
		for n := len(pages) - 2; tok != ""; n-- {
			if n < -10*len(want)-50 {
				t.Fatalf("%s: going back does not end", what)
			}
			p, err := listFake(shards, tok, limit, order)
			if err != nil {
				t.Fatalf("%s: back: %v", what, err)
			}
			if budget == 1000 && (n < 0 || !slices.Equal(ids(p.Jobs), ids(pages[n].Jobs))) {
				t.Fatalf("%s: back to page %d: %v, forward it was %v", what, n, ids(p.Jobs), ids(pages[max(n, 0)].Jobs))
			}
			if p.NextPageToken == "" {
				t.Fatalf("%s: a page reached going back has no next token", what)
			}
			back = append(ids(p.Jobs), back...)
			tok = p.PrevPageToken
		}
		if !slices.Equal(back, ids(want)) {
			t.Fatalf("%s: back\n got %v\nwant %v", what, back, ids(want))
		}
	}
}

func ids(jobs []*engine.Job) []engine.JobID {
	out := make([]engine.JobID, len(jobs))
	for i, j := range jobs {
		out[i] = j.ID
	}
	return out
}
