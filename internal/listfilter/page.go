package listfilter

import (
	"context"
	"fmt"

	"github.com/heddlewf/heddle/engine"
)

// Lister is the list read of engine.Service, which Page pages through.
type Lister interface {
	List(ctx context.Context, q engine.ListQuery) (*engine.ListPage, error)
}

// DefaultScanBudget is how many runs one Page reads at most, by default,
// looking for matches the list API cannot select itself: ten of the API's
// largest pages.
const DefaultScanBudget = 10 * engine.MaxPage

// Page is one page of matching runs, in creation order.
type Page struct {
	Jobs []*engine.Job
	// Next is the cursor of the following page (the after of the next
	// call); 0 when no run after this page can match.
	Next engine.JobID
	// Scanned counts the runs the list API returned for this page.
	Scanned int
	// Cut: the scan budget ran out before the page was full. Next goes
	// on from the last run read, and later pages may still hold matches.
	Cut bool
}

// Page returns up to limit runs that match q, created after the run with
// id after (0: from the first). Reading stops when the page is full, the
// runs end, or budget runs have been read (0: DefaultScanBudget; a
// negative budget: no bound).
func (q *Query) Page(ctx context.Context, l Lister, after engine.JobID, limit, budget int) (*Page, error) {
	if limit < 1 || limit > engine.MaxPage {
		return nil, fmt.Errorf("%w: a page holds 1 to %d runs, not %d", engine.ErrInvalidCommand, engine.MaxPage, limit)
	}
	if budget == 0 {
		budget = DefaultScanBudget
	}
	lq := q.ListQuery()
	exact := q.exact()
	// When the API filters everything, its page is the page; otherwise
	// ask for its largest pages and filter them here.
	lq.Limit = engine.MaxPage
	if exact {
		lq.Limit = limit
	}
	lq.After = after
	page := &Page{}
	for {
		got, err := l.List(ctx, lq)
		if err != nil {
			return nil, err
		}
		for i, j := range got.Jobs {
			page.Scanned++
			if !q.Match(j) {
				continue
			}
			page.Jobs = append(page.Jobs, j)
			if len(page.Jobs) == limit {
				if i < len(got.Jobs)-1 || got.Next != 0 {
					page.Next = j.ID
				}
				return page, nil
			}
		}
		if got.Next == 0 {
			return page, nil
		}
		if budget > 0 && page.Scanned >= budget {
			page.Next, page.Cut = got.Next, true
			return page, nil
		}
		lq.After = got.Next
	}
}

// All calls fn with every run that matches q, in creation order, reading
// the list API's largest pages until the runs end or fn returns an error.
func (q *Query) All(ctx context.Context, l Lister, fn func(*engine.Job) error) error {
	var after engine.JobID
	for {
		p, err := q.Page(ctx, l, after, engine.MaxPage, -1)
		if err != nil {
			return err
		}
		for _, j := range p.Jobs {
			if err := fn(j); err != nil {
				return err
			}
		}
		if p.Next == 0 {
			return nil
		}
		after = p.Next
	}
}
