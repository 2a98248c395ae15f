package worker

import (
	"context"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/internal/backoff"
)

// watchDelay is how long inline activities run before their turn starts
// watching the job's history for what others write (signals, cancel
// requests), when the workflow waits for nothing else. Short activities
// finish first and cost no watch; what arrived meanwhile is seen at their
// commit, which reads the history when it finds others' events in between.
const watchDelay = 2 * time.Millisecond

// watcher keeps one Service.WatchHistory in flight for a turn: the loop
// asks for the events after what it has seen, and reads the answer when it
// comes, between activity outcomes. One request is out at a time, and it
// outlives the loop's iterations, so a long poll is not cut short (and, over
// HTTP, its connection not dropped) each time an activity finishes.
type watcher struct {
	want   chan uint64
	got    chan watchResult
	out    bool // a request is out and its answer not yet read
	cancel context.CancelFunc
	done   chan struct{}
}

type watchResult struct {
	page *engine.HistoryPage
	err  error
}

func (r *run) startWatch() {
	ctx, cancel := context.WithCancel(r.ctx)
	w := &watcher{want: make(chan uint64, 1), got: make(chan watchResult, 1), cancel: cancel, done: make(chan struct{})}
	r.watch = w
	go func() {
		defer close(w.done)
		var bo backoff.Backoff
		for {
			var after uint64
			select {
			case after = <-w.want:
			case <-ctx.Done():
				return
			}
			page, err := r.w.e.WatchHistory(ctx, r.job.Job, after, engine.MaxPage)
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				// The service is unreachable or refused: answer after a
				// jittered pause, so the loop does not ask again at once.
				if backoff.Sleep(ctx, bo.Next()) != nil {
					return
				}
			} else {
				bo.Reset()
			}
			w.got <- watchResult{page, err}
		}
	}()
}

// ask makes sure a request for the events after seq (or an earlier one
// still out) is in flight, and returns where its answer comes.
func (w *watcher) ask(seq uint64) <-chan watchResult {
	if !w.out {
		w.want <- seq
		w.out = true
	}
	return w.got
}

func (r *run) stopWatch() {
	if r.watch == nil {
		return
	}
	r.watch.cancel()
	<-r.watch.done
	r.watch = nil
}

// watched applies what the watch found. A status event means another
// writer moved the job on (a cancel, termination, timeout, suspension or
// reclaim): this attempt is over and the turn ends without writing.
func (r *run) watched(res watchResult) error {
	r.watch.out = false
	if res.err != nil {
		return nil // the turn goes on; the next await asks again
	}
	for _, ev := range res.page.Events {
		if ev.Seq > r.x.LastSeq() && engine.IsStatusEvent(ev.Type) {
			return errAttemptOver
		}
	}
	if err := r.x.Advance(res.page.Events, false); err != nil {
		if r.x.Fault() != nil {
			return nil // the loop fails the run
		}
		return err
	}
	if res.page.Next != 0 {
		if err := r.catchUp(false); err != nil && r.x.Fault() == nil {
			return err
		}
	}
	return nil
}
