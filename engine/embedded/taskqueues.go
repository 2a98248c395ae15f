package embedded

import (
	"cmp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/clock"
	"github.com/heddlewf/heddle/engine/machine"
)

// TaskQueues is one node's view of its task queues: who polled each queue
// and when, what the pollers run (their claims name the types), and how
// fast jobs became ready on each queue and were claimed from it. It lives in
// the node's memory and is never written: a poll costs no replicated write,
// and what a node that restarts (or a leader that changes) knew is gone,
// until the workers poll again (at least once a long poll's wait while they
// have a free slot) and the rates fill again (over engine.RateWindow).
//
// Polls are recorded by the node that serves them: an Engine's ClaimWait
// and Claim, and the HTTP server's claim route (BeginPoll), also on a
// follower whose waiting poll never reaches the leader. The rates are
// counted from every command the node applies, so every node of a cluster
// has them whole; a cluster's view of the pollers is the merge of its
// members' (engine/httpapi asks each).
//
// Its memory is bounded: engine.MaxTaskQueues queues (the least recently
// used forgotten first), engine.MaxPollersPerQueue pollers a queue and
// maxPollers in all (the one polled longest ago forgotten first), and
// maxTypeBytes of type names a poller. Safe for concurrent use; a nil
// *TaskQueues records nothing.
type TaskQueues struct {
	clock clock.Clock

	mu      sync.Mutex
	queues  map[string]*queueView
	pollers int // in all queues
	// staged counts what the commands of the batch being applied made
	// ready and claimed, by queue; Committed adds it to the rates. Only
	// the one goroutine that applies commands (which calls Stage,
	// Committed and Discard) touches it.
	staged map[string]*[2]int64
}

// Bounds of a TaskQueues beyond engine's.
const (
	// maxPollers bounds the pollers of all queues together.
	maxPollers = 4096
	// maxTypeBytes bounds the type names kept of one poller; a poller
	// naming more is kept with the first that fit (TypesTruncated).
	maxTypeBytes = 16 << 10
)

// queueView is what a node knows of one queue.
type queueView struct {
	pollers    map[string]*pollerView
	lastPollMS int64
	lastPoller string
	added      rateCounter
	dispatched rateCounter
	usedMS     int64 // the newest poll or count, to forget the least recently used
}

// pollerView is one worker polling one queue.
type pollerView struct {
	identity string
	buildID  string
	// types are the types as its last claim named them (up to
	// maxTypeBytes of them: typesTruncated), split into workflow and
	// activity types only when described. A worker names the same types,
	// in the same order, in every claim, so one comparison tells that
	// nothing changed.
	types          []string
	anyType        bool
	typesTruncated bool
	lastAccessMS   int64
	polling        int // polls waiting now
	dispatched     rateCounter
}

// NewTaskQueues returns an empty view whose times are clk's (nil: the wall
// clock).
func NewTaskQueues(clk clock.Clock) *TaskQueues {
	if clk == nil {
		clk = clock.Wall()
	}
	return &TaskQueues{clock: clk, queues: map[string]*queueView{}, staged: map[string]*[2]int64{}}
}

func (t *TaskQueues) nowMS() int64 { return t.clock.Now().UnixMilli() }

// queue returns the view of name, making it (and forgetting the least
// recently used queue when there are too many). t.mu is held.
func (t *TaskQueues) queue(name string, nowMS int64) *queueView {
	q := t.queues[name]
	if q == nil {
		if len(t.queues) >= engine.MaxTaskQueues {
			var oldest string
			var oldestMS int64
			for n, v := range t.queues {
				if oldest == "" || v.usedMS < oldestMS {
					oldest, oldestMS = n, v.usedMS
				}
			}
			t.pollers -= len(t.queues[oldest].pollers)
			delete(t.queues, oldest)
		}
		q = &queueView{pollers: map[string]*pollerView{}}
		t.queues[name] = q
	}
	q.usedMS = max(q.usedMS, nowMS)
	return q
}

// poll records that c's claimer polls its queue now, and returns the
// poller. t.mu is held.
func (t *TaskQueues) poll(c *engine.Claim, nowMS int64) *pollerView {
	q := t.queue(c.Queue, nowMS)
	p := q.pollers[c.Owner]
	if p == nil {
		t.dropPollers(q, nowMS)
		p = &pollerView{identity: c.Owner}
		q.pollers[c.Owner] = p
		t.pollers++
	}
	p.lastAccessMS = max(p.lastAccessMS, nowMS)
	q.lastPollMS, q.lastPoller = p.lastAccessMS, p.identity
	p.buildID = c.BuildID
	p.setTypes(c.Types)
	return p
}

// dropPollers makes room for one more poller of q: it forgets the pollers
// gone past the window, then, while q or the whole view is full, the one
// polled longest ago (of q, else of any queue). t.mu is held.
func (t *TaskQueues) dropPollers(q *queueView, nowMS int64) {
	for id, p := range q.pollers {
		if p.polling == 0 && nowMS-p.lastAccessMS > engine.PollerWindow.Milliseconds() {
			delete(q.pollers, id)
			t.pollers--
		}
	}
	for len(q.pollers) >= engine.MaxPollersPerQueue {
		t.dropOldest(q)
	}
	for t.pollers >= maxPollers {
		var from *queueView
		var fromMS int64
		for _, v := range t.queues {
			for _, p := range v.pollers {
				if from == nil || p.lastAccessMS < fromMS {
					from, fromMS = v, p.lastAccessMS
				}
			}
		}
		if from == nil {
			return
		}
		t.dropOldest(from)
	}
}

// dropOldest forgets q's poller polled longest ago. t.mu is held.
func (t *TaskQueues) dropOldest(q *queueView) {
	var oldest *pollerView
	for _, p := range q.pollers {
		if oldest == nil || p.lastAccessMS < oldest.lastAccessMS {
			oldest = p
		}
	}
	if oldest != nil {
		delete(q.pollers, oldest.identity)
		t.pollers--
	}
}

// setTypes keeps the types a claim names, unless they are those of its
// last claim.
func (p *pollerView) setTypes(types []string) {
	if len(types) == 0 {
		p.anyType, p.types, p.typesTruncated = true, nil, false
		return
	}
	if !p.anyType && !p.typesTruncated && slices.Equal(types, p.types) {
		return
	}
	p.anyType, p.typesTruncated = false, false
	p.types = p.types[:0]
	size := 0
	for _, ty := range types {
		if size += len(ty); size > maxTypeBytes {
			p.typesTruncated = true
			break
		}
		p.types = append(p.types, strings.Clone(ty))
	}
}

// splitTypes returns the workflow and the activity types of types, each
// sorted and without repeats.
func splitTypes(types []string) (wf, act []string) {
	for _, ty := range types {
		if name, ok := strings.CutPrefix(ty, engine.ActivityTypePrefix); ok {
			act = append(act, name)
		} else {
			wf = append(wf, ty)
		}
	}
	slices.Sort(wf)
	slices.Sort(act)
	return slices.Compact(wf), slices.Compact(act)
}

// BeginPoll records that c's claimer polls c.Queue from now until end is
// called: while it waits it is listed as polling, its last access now. The
// HTTP server's claim route and ClaimWait call it. c must have passed its
// Check.
func (t *TaskQueues) BeginPoll(c *engine.Claim) (end func()) {
	if t == nil {
		return func() {}
	}
	t.mu.Lock()
	p := t.poll(c, t.nowMS())
	p.polling++
	t.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			t.mu.Lock()
			defer t.mu.Unlock()
			p.polling--
			p.lastAccessMS = max(p.lastAccessMS, t.nowMS())
		})
	}
}

// Claimed records a claim by c's claimer that took n jobs (0: it found
// none).
func (t *TaskQueues) Claimed(c *engine.Claim, n int) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.nowMS()
	p := t.poll(c, now)
	if n > 0 {
		p.dispatched.add(now, int64(n))
	}
}

// Stage adds what a command that succeeded changed to the batch being
// applied, from the notes Apply wrote for it: the jobs of each queue that
// entered its ready index (became Queued) and those claimed from it
// (Queued to Running).
func (t *TaskQueues) Stage(n *machine.Notes) {
	if t == nil || n == nil {
		return
	}
	n.JobMoves(func(queue string, from, to engine.Status) {
		var k int
		switch {
		case to == engine.StatusQueued && from != engine.StatusQueued:
			k = 0
		case from == engine.StatusQueued && to == engine.StatusRunning:
			k = 1
		default:
			return
		}
		c := t.staged[queue]
		if c == nil {
			if len(t.staged) >= engine.MaxTaskQueues {
				return // a batch over that many queues counts the first ones
			}
			c = new([2]int64)
			t.staged[strings.Clone(queue)] = c
		}
		c[k]++
	})
}

// Committed adds what the staged commands changed to the rates: the batch
// holding their writes committed.
func (t *TaskQueues) Committed() {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.staged) == 0 {
		return
	}
	now := t.nowMS()
	for name, c := range t.staged {
		q := t.queue(name, now)
		q.added.add(now, c[0])
		q.dispatched.add(now, c[1])
	}
	clear(t.staged)
}

// Discard drops what the staged commands changed: their batch failed.
func (t *TaskQueues) Discard() {
	if t == nil {
		return
	}
	clear(t.staged)
}

// Views returns the node's view of every queue it knows, in name order:
// the pollers within engine.PollerWindow, the rates, the newest poll, and
// NowMS. The backlog is not in it (the store has it: see
// Engine.DescribeTaskQueue).
func (t *TaskQueues) Views() []engine.TaskQueueDescription {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.nowMS()
	out := make([]engine.TaskQueueDescription, 0, len(t.queues))
	for name, q := range t.queues {
		out = append(out, q.describe(name, now))
	}
	slices.SortFunc(out, func(a, b engine.TaskQueueDescription) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// View returns the node's view of queue (see Views); a queue it does not
// know is empty. A nil TaskQueues's view has NowMS 0.
func (t *TaskQueues) View(queue string) engine.TaskQueueDescription {
	if t == nil {
		return engine.TaskQueueDescription{Name: queue, Pollers: []engine.TaskQueuePoller{}}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.nowMS()
	q := t.queues[queue]
	if q == nil {
		return engine.TaskQueueDescription{Name: queue, Pollers: []engine.TaskQueuePoller{}, NowMS: now}
	}
	return q.describe(queue, now)
}

// describe copies q out. The lock of its TaskQueues is held.
func (q *queueView) describe(name string, nowMS int64) engine.TaskQueueDescription {
	d := engine.TaskQueueDescription{Name: name, Pollers: []engine.TaskQueuePoller{}, NowMS: nowMS,
		LastPollMS: q.lastPollMS, LastPoller: q.lastPoller}
	d.Stats.AddRate = q.added.rate(nowMS)
	d.Stats.DispatchRate = q.dispatched.rate(nowMS)
	for _, p := range q.pollers {
		if p.polling > 0 {
			// A poll waiting now is an access now.
			d.LastPollMS = nowMS
		} else if nowMS-p.lastAccessMS > engine.PollerWindow.Milliseconds() {
			continue
		}
		d.Pollers = append(d.Pollers, p.describe(nowMS))
	}
	if d.LastPollMS == nowMS {
		for _, p := range d.Pollers {
			if p.Polling {
				d.LastPoller = p.Identity
				break
			}
		}
	}
	slices.SortFunc(d.Pollers, func(a, b engine.TaskQueuePoller) int {
		return cmp.Or(cmp.Compare(b.LastAccessMS, a.LastAccessMS), strings.Compare(a.Identity, b.Identity))
	})
	return d
}

func (p *pollerView) describe(nowMS int64) engine.TaskQueuePoller {
	out := engine.TaskQueuePoller{Identity: p.identity, LastAccessMS: p.lastAccessMS, Polling: p.polling > 0,
		AnyType: p.anyType, TypesTruncated: p.typesTruncated, BuildID: p.buildID,
		DispatchRate: p.dispatched.rate(nowMS)}
	out.WorkflowTypes, out.ActivityTypes = splitTypes(p.types)
	if out.Polling {
		out.LastAccessMS = nowMS
	}
	return out
}

// rateCounter counts events over engine.RateWindow in rateBuckets buckets.
type rateCounter struct {
	counts [rateBuckets]int64
	// slots are the bucket numbers (time / rateBucketMS) the counts are of.
	slots [rateBuckets]int64
}

const (
	rateBuckets  = 12
	rateBucketMS = int64(engine.RateWindow/time.Millisecond) / rateBuckets
)

// add counts n events at nowMS.
func (r *rateCounter) add(nowMS, n int64) {
	if n == 0 {
		return
	}
	slot := nowMS / rateBucketMS
	i := slot % rateBuckets
	if r.slots[i] != slot {
		r.slots[i], r.counts[i] = slot, 0
	}
	r.counts[i] += n
}

// rate is the events per second over the window ending at nowMS.
func (r *rateCounter) rate(nowMS int64) float64 {
	slot := nowMS / rateBucketMS
	var sum int64
	for i := range r.counts {
		if s := r.slots[i]; s > slot-rateBuckets && s <= slot {
			sum += r.counts[i]
		}
	}
	return float64(sum) / engine.RateWindow.Seconds()
}
