package testsuite

import (
	"context"
	"fmt"
	"strings"

	"github.com/heddlewf/heddle/engine"

	"github.com/heddlewf/heddle/engine/embedded"
)

// recorded is what the environment keeps of its runs once the engine is
// closed: every job's record and history, which is all that results,
// errors and queries read.
type recorded struct {
	jobs      map[engine.JobID]*engine.Job
	histories map[engine.JobID][]engine.Event
	// latest is the newest workflow run of each workflow id.
	latest map[string]engine.JobID
	rootID string
	root   engine.JobID
	// err, when set, is why nothing was kept.
	err error
}

// record reads every job and its history out of e.
func record(e *embedded.Engine) (*recorded, error) {
	ctx := context.Background()
	r := &recorded{jobs: map[engine.JobID]*engine.Job{}, histories: map[engine.JobID][]engine.Event{}, latest: map[string]engine.JobID{}}
	q := engine.ListQuery{Limit: engine.MaxPage, Order: engine.ListStartAsc}
	for {
		page, err := e.List(ctx, q)
		if err != nil {
			return nil, err
		}
		for _, j := range page.Jobs {
			r.jobs[j.ID] = j
			if !strings.HasPrefix(j.Type, engine.ActivityTypePrefix) && j.ID > r.latest[j.WorkflowID] {
				r.latest[j.WorkflowID] = j.ID
			}
			var evs []engine.Event
			for after := uint64(0); ; {
				h, err := e.History(ctx, j.ID, after, engine.MaxPage)
				if err != nil {
					return nil, err
				}
				evs = append(evs, h.Events...)
				if h.Next == 0 {
					break
				}
				after = h.Next
			}
			r.histories[j.ID] = evs
		}
		if page.Next == 0 {
			return r, nil
		}
		q.After = page.Next
	}
}

// recordedService answers Describe and History from the records; the
// environment asks nothing else of a closed run. Any other method would
// dereference the nil Service: none is called.
type recordedService struct {
	engine.Service
	r *recorded
}

func (s recordedService) Describe(_ context.Context, t engine.Target) (*engine.Job, error) {
	id := t.Job
	if id == 0 {
		id = s.r.latest[t.WorkflowID]
	}
	j := s.r.jobs[id]
	if j == nil {
		return nil, fmt.Errorf("%w: %v", engine.ErrUnknownJob, t)
	}
	return j, nil
}

func (s recordedService) History(_ context.Context, id engine.JobID, afterSeq uint64, limit int) (*engine.HistoryPage, error) {
	evs, ok := s.r.histories[id]
	if !ok {
		return nil, fmt.Errorf("%w: %d", engine.ErrUnknownJob, id)
	}
	page := &engine.HistoryPage{}
	for _, ev := range evs {
		if ev.Seq <= afterSeq {
			continue
		}
		if limit > 0 && len(page.Events) == limit {
			page.Next = page.Events[len(page.Events)-1].Seq
			break
		}
		page.Events = append(page.Events, ev)
	}
	return page, nil
}
