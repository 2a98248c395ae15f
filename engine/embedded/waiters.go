package embedded

import "github.com/heddlewf/heddle/engine"

// jobWaiters are the channels of goroutines waiting for something to
// happen to one job, closed (and dropped) when it does. The Engine's
// commitMu guards them.
type jobWaiters map[engine.JobID][]chan struct{}

// add returns a new channel for job id, closed by the next wake of id.
func (w *jobWaiters) add(id engine.JobID) chan struct{} {
	if *w == nil {
		*w = jobWaiters{}
	}
	ch := make(chan struct{})
	(*w)[id] = append((*w)[id], ch)
	return ch
}

// wake closes and drops the channels of every job in ids (repeats are
// fine).
func (w jobWaiters) wake(ids []uint64) {
	for _, id := range ids {
		for _, ch := range w[engine.JobID(id)] {
			close(ch)
		}
		delete(w, engine.JobID(id))
	}
}

// wakeAll closes and drops every channel.
func (w jobWaiters) wakeAll() {
	for id, chs := range w {
		for _, ch := range chs {
			close(ch)
		}
		delete(w, id)
	}
}

// forget drops ch from job id's channels, if it is there.
func (w jobWaiters) forget(id engine.JobID, ch <-chan struct{}) {
	chs := w[id]
	for i, c := range chs {
		if c == ch {
			chs = append(chs[:i], chs[i+1:]...)
			break
		}
	}
	if len(chs) == 0 {
		delete(w, id)
	} else {
		w[id] = chs
	}
}
