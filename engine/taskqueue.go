package engine

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// TaskQueueReader describes task queues: who polls each, what they serve,
// how many jobs wait and how fast jobs come and go. *embedded.Engine
// implements it from its own process's view; package engine/httpapi serves
// it (GET /v1/task-queues...), merging what every member of a cluster saw,
// and implements it over HTTP. It is apart from Service so that a Service
// written before it still is one. Safe for concurrent use.
//
// Pollers and rates are kept in the memory of the node that saw them, never
// written: a poll costs no replicated write. A node that restarts, or a
// cluster whose leader changes, starts its rates afresh, and a poller shows
// again at its next poll (a worker polls at least every long poll's wait,
// 30 s by default, while it has a free slot).
type TaskQueueReader interface {
	// DescribeTaskQueue describes one queue; a queue nobody used is
	// described as empty (no error).
	DescribeTaskQueue(ctx context.Context, queue string) (*TaskQueueDescription, error)
	// ListTaskQueues describes the queues that hold jobs or were polled,
	// in name order, up to MaxTaskQueues of them.
	ListTaskQueues(ctx context.Context) (*TaskQueueList, error)
	// QueuedReason says why the run t names waits in its queue: nil
	// Reason when it is not Queued.
	QueuedReason(ctx context.Context, t Target) (*QueuedReason, error)
}

// Bounds of the task queue view.
const (
	// PollerWindow is how long after its last poll a worker is listed as
	// a poller of a queue, as Temporal lists a queue's pollers for five
	// minutes. A long poll lasts up to 30 s and a worker whose slots are
	// all busy does not poll, so a last access up to a minute old is
	// normal; one older than that means a worker at capacity, or gone.
	PollerWindow = 5 * time.Minute
	// RateWindow is the span TaskQueueStats' rates are measured over.
	RateWindow = time.Minute
	// MaxTaskQueues bounds the queues one node keeps a view of (the
	// least recently used is forgotten first) and the queues
	// ListTaskQueues answers.
	MaxTaskQueues = 512
	// MaxPollersPerQueue bounds the pollers one node keeps of one queue
	// (the one polled longest ago is forgotten first).
	MaxPollersPerQueue = 64
	// MaxBacklogCount bounds the ready jobs counted for one queue; a
	// larger backlog is reported as this many, BacklogCountCapped set.
	MaxBacklogCount = 100_000
	// MaxDelayedCount bounds the delayed jobs (Retrying, or deferred by a
	// claimer that does not run their type) one description reads.
	MaxDelayedCount = 10_000
)

// TaskQueueDescription is one task queue as heddle sees it: Temporal's
// DescribeTaskQueue answer (its pollers, and with ReportStats its backlog
// and rates).
type TaskQueueDescription struct {
	Name string `json:"name" msgpack:"n"`
	// Pollers are the workers that polled the queue within PollerWindow,
	// the most recent first.
	Pollers []TaskQueuePoller `json:"pollers" msgpack:"p"`
	Stats   TaskQueueStats    `json:"stats" msgpack:"s"`
	// LastPollMS and LastPoller are the newest poll of the queue the view
	// remembers, also one older than PollerWindow: a queue without pollers
	// says who polled it last, and when. 0 and "": none remembered.
	LastPollMS int64  `json:"last_poll_ms,omitempty" msgpack:"lp,omitempty"`
	LastPoller string `json:"last_poller,omitempty" msgpack:"lw,omitempty"`
	// NowMS is when the view was taken (Unix ms), for the ages above.
	NowMS int64 `json:"now_ms" msgpack:"now"`
	// Unreached lists the members of a cluster whose pollers could not be
	// asked (down, or the caller's certificate cannot be passed on): the
	// pollers polling them are missing from this view.
	Unreached []string `json:"unreached,omitempty" msgpack:"ur,omitempty"`
}

// TaskQueuePoller is one worker polling a queue: Temporal's
// TaskQueuePollerInfo, with what heddle's claims say of the worker.
type TaskQueuePoller struct {
	// Identity is the worker's (worker.Options.Identity: a claim's Owner).
	Identity string `json:"identity" msgpack:"id"`
	// LastAccessMS is the worker's newest poll (Unix ms): its start, or
	// now while one is waiting (Polling).
	LastAccessMS int64 `json:"last_access_ms" msgpack:"la"`
	// Polling: a poll of the worker is waiting for a job now. A worker
	// that does not poll has no free slot, or is gone.
	Polling bool `json:"polling,omitempty" msgpack:"pl,omitempty"`
	// WorkflowTypes and ActivityTypes are the types its claims name
	// (Claim.Types), sorted. AnyType: its claims name none, so it takes
	// every type (a dynamic workflow or activity is registered).
	WorkflowTypes []string `json:"workflow_types,omitempty" msgpack:"wt,omitempty"`
	ActivityTypes []string `json:"activity_types,omitempty" msgpack:"at,omitempty"`
	AnyType       bool     `json:"any_type,omitempty" msgpack:"any,omitempty"`
	// TypesTruncated: its claims name more types than a view keeps (16
	// KiB of names); it may run types not listed.
	TypesTruncated bool `json:"types_truncated,omitempty" msgpack:"ttr,omitempty"`
	// BuildID is the worker's build (worker.Options.BuildID), if it says.
	BuildID string `json:"build_id,omitempty" msgpack:"b,omitempty"`
	// DispatchRate is the jobs per second its claims took over RateWindow.
	// (Temporal's RatePerSecond is a limit the worker sets; heddle's
	// workers set none, and this is what they took.)
	DispatchRate float64 `json:"dispatch_rate" msgpack:"dr"`
	// Nodes are the cluster members that served its polls (empty when
	// not in a cluster).
	Nodes []string `json:"nodes,omitempty" msgpack:"nd,omitempty"`
}

// Serves reports whether p runs jobs of type (a workflow type, or
// ActivityTypePrefix and an activity type).
func (p *TaskQueuePoller) Serves(jobType string) bool {
	if p.AnyType || p.TypesTruncated {
		return true
	}
	if name, ok := strings.CutPrefix(jobType, ActivityTypePrefix); ok {
		return slices.Contains(p.ActivityTypes, name)
	}
	return slices.Contains(p.WorkflowTypes, jobType)
}

// RunsWorkflows reports whether p runs workflows (it names a workflow type,
// or may run any type).
func (p *TaskQueuePoller) RunsWorkflows() bool {
	return len(p.WorkflowTypes) > 0 || p.AnyType || p.TypesTruncated
}

// RunsActivities reports whether p runs activity tasks (it names an
// activity type, or may run any type).
func (p *TaskQueuePoller) RunsActivities() bool {
	return len(p.ActivityTypes) > 0 || p.AnyType || p.TypesTruncated
}

// TaskQueueStats are a queue's backlog and rates: Temporal's
// TaskQueueStats, with the jobs not yet claimable counted apart.
type TaskQueueStats struct {
	// BacklogCount is the jobs ready to claim (Queued, in the ready
	// index), up to MaxBacklogCount (then BacklogCountCapped).
	BacklogCount       int64 `json:"approximate_backlog_count" msgpack:"bc"`
	BacklogCountCapped bool  `json:"backlog_count_capped,omitempty" msgpack:"bcc,omitempty"`
	// BacklogAgeMS is how long the oldest ready job has waited; 0 with no
	// backlog.
	BacklogAgeMS int64 `json:"approximate_backlog_age_ms" msgpack:"ba"`
	// DelayedCount is the jobs of the queue that wait for a time before
	// they can be claimed: Retrying (a retry's backoff, a start delay) or
	// Queued but deferred (a claimer passed them over: it does not run
	// their type). Up to MaxDelayedCount read (then DelayedCountCapped).
	DelayedCount       int64 `json:"delayed_count" msgpack:"dc"`
	DelayedCountCapped bool  `json:"delayed_count_capped,omitempty" msgpack:"dcc,omitempty"`
	// AddRate and DispatchRate are the jobs per second that became ready
	// to claim and that were claimed, over RateWindow.
	AddRate      float64 `json:"tasks_add_rate" msgpack:"ar"`
	DispatchRate float64 `json:"tasks_dispatch_rate" msgpack:"dr"`
}

// TaskQueueList is ListTaskQueues' answer.
type TaskQueueList struct {
	Queues []TaskQueueDescription `json:"task_queues" msgpack:"q"`
	// Truncated: there were more than MaxTaskQueues queues.
	Truncated bool `json:"truncated,omitempty" msgpack:"tr,omitempty"`
	// Unreached is TaskQueueDescription.Unreached, for the whole list.
	Unreached []string `json:"unreached,omitempty" msgpack:"ur,omitempty"`
}

// The codes of a QueuedReason.
const (
	// QueuedNoPoller: no worker polled the run's queue within
	// PollerWindow.
	QueuedNoPoller = "no_poller"
	// QueuedNoPollerForType: workers poll the queue, none runs the type.
	QueuedNoPollerForType = "no_poller_for_type"
	// QueuedNoFreeSlot: workers that run the type polled the queue, but
	// none polls now: their slots are all busy.
	QueuedNoFreeSlot = "no_free_slot"
	// QueuedDeferred: a claimer passed the run over (it does not run its
	// type) and the run waits out the backoff before it is offered again;
	// a worker that runs the type polls now.
	QueuedDeferred = "deferred"
	// QueuedDispatching: a worker that runs the type polls now; the run is
	// about to be claimed (or others are ahead of it).
	QueuedDispatching = "dispatching"
)

// QueuedReason says why a Queued run has not been claimed.
type QueuedReason struct {
	// Queued: the run is Queued; the rest is empty when it is not.
	Queued bool `json:"queued" msgpack:"q"`
	// Code is one of the Queued* constants.
	Code string `json:"code,omitempty" msgpack:"c,omitempty"`
	// Message says it for people, naming the queue, the type and the
	// pollers.
	Message string `json:"message,omitempty" msgpack:"m,omitempty"`
	// Queue and Type are the run's.
	Queue string `json:"queue,omitempty" msgpack:"qu,omitempty"`
	Type  string `json:"type,omitempty" msgpack:"ty,omitempty"`
	// BacklogCount is the queue's (TaskQueueStats.BacklogCount).
	BacklogCount int64 `json:"backlog_count,omitempty" msgpack:"bc,omitempty"`
}

// ExplainQueued says why j, a Queued run, waits in its queue d (d's
// pollers: those of j.Queue within PollerWindow at d.NowMS). polled names
// the other queues that have pollers, offered when j's has none (a
// misspelled queue). It returns a reason with Queued false for a run that
// is not Queued. Pure: it reads only its arguments.
func ExplainQueued(j *Job, d *TaskQueueDescription, polled []string) *QueuedReason {
	if j == nil || j.Status != StatusQueued {
		return &QueuedReason{}
	}
	r := &QueuedReason{Queued: true, Queue: j.Queue, Type: j.Type}
	if d == nil {
		d = &TaskQueueDescription{Name: j.Queue}
	}
	r.BacklogCount = d.Stats.BacklogCount
	kind, name := "workflow type", j.Type
	if n, ok := strings.CutPrefix(j.Type, ActivityTypePrefix); ok {
		kind, name = "activity type", n
	}
	var serving []TaskQueuePoller
	for _, p := range d.Pollers {
		if p.Serves(j.Type) {
			serving = append(serving, p)
		}
	}
	switch {
	case len(d.Pollers) == 0:
		r.Code = QueuedNoPoller
		r.Message = fmt.Sprintf("no worker has polled task queue %q in the last %s", j.Queue, minutes(PollerWindow))
		if d.LastPollMS > 0 {
			r.Message += fmt.Sprintf("; the last poll was %s ago, by %s", ago(d.NowMS-d.LastPollMS), d.LastPoller)
		}
		others := slices.DeleteFunc(slices.Clone(polled), func(q string) bool { return q == j.Queue })
		if len(others) > 0 {
			r.Message += "; queues with pollers: " + listOf(others, 8)
			if near := nearest(j.Queue, others); near != "" {
				r.Message += fmt.Sprintf(" (did you mean %q?)", near)
			}
		}
	case len(serving) == 0:
		r.Code = QueuedNoPollerForType
		wf, act := servedTypes(d.Pollers)
		served := "workflow types " + listOf(wf, 8)
		if len(wf) == 0 {
			served = "no workflow type"
		}
		if len(act) > 0 {
			served += ", activity types " + listOf(act, 8)
		}
		r.Message = fmt.Sprintf("no poller of task queue %q serves %s %q (they serve %s)", j.Queue, kind, name, served)
		candidates := wf
		if kind == "activity type" {
			candidates = act
		}
		if near := nearest(name, candidates); near != "" {
			r.Message += fmt.Sprintf("; did you mean %q?", near)
		}
	case j.DeferredUntilMS > d.NowMS && anyPolling(serving):
		r.Code = QueuedDeferred
		r.Message = fmt.Sprintf("offered again in %s: %s", ago(j.DeferredUntilMS-d.NowMS), j.DeferredReason)
	case !anyPolling(serving):
		r.Code = QueuedNoFreeSlot
		newest := serving[0].LastAccessMS
		for _, p := range serving {
			newest = max(newest, p.LastAccessMS)
		}
		r.Message = fmt.Sprintf("waiting for a free slot: the workers of task queue %q that run %s %q (%s) are all busy; none has polled for %s",
			j.Queue, kind, name, identities(serving, 4), ago(d.NowMS-newest))
	default:
		r.Code = QueuedDispatching
		r.Message = fmt.Sprintf("a worker of task queue %q that runs %s %q polls now (%s)", j.Queue, kind, name, identities(pollingOnly(serving), 4))
		if ahead := d.Stats.BacklogCount - 1; ahead > 0 {
			r.Message += fmt.Sprintf("; the queue holds %d other ready jobs", ahead)
		}
	}
	return r
}

// servedTypes lists the workflow and activity types the pollers name,
// sorted and without repeats.
func servedTypes(ps []TaskQueuePoller) (wf, act []string) {
	for _, p := range ps {
		wf = append(wf, p.WorkflowTypes...)
		act = append(act, p.ActivityTypes...)
	}
	slices.Sort(wf)
	slices.Sort(act)
	return slices.Compact(wf), slices.Compact(act)
}

func anyPolling(ps []TaskQueuePoller) bool {
	return slices.ContainsFunc(ps, func(p TaskQueuePoller) bool { return p.Polling })
}

func pollingOnly(ps []TaskQueuePoller) []TaskQueuePoller {
	return slices.DeleteFunc(slices.Clone(ps), func(p TaskQueuePoller) bool { return !p.Polling })
}

// identities names up to n pollers.
func identities(ps []TaskQueuePoller, n int) string {
	ids := make([]string, 0, len(ps))
	for _, p := range ps {
		ids = append(ids, p.Identity)
	}
	return listOf(ids, n)
}

// listOf joins up to n names, saying how many more there are.
func listOf(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
}

// minutes formats a window such as PollerWindow ("5m").
func minutes(d time.Duration) string {
	if d%time.Minute == 0 {
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
}

// ago formats a span of ms for people, to the second ("2m5s", "0s").
func ago(ms int64) string {
	return (time.Duration(max(ms, 0)) * time.Millisecond).Truncate(time.Second).String()
}

// nearest returns the candidate a person most likely meant by s: the same
// name in another case, or one at most two edits away (the closest, the
// first in order among equals); "" when none is that close.
func nearest(s string, candidates []string) string {
	best, bestD := "", 3
	for _, c := range candidates {
		if c == s {
			continue
		}
		if strings.EqualFold(c, s) {
			return c
		}
		if d := editDistance(s, c, bestD); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b in bytes, or limit
// when it is limit or more (names are at most Limits.MaxNameBytes long;
// the work is len(a)*len(b) at most).
func editDistance(a, b string, limit int) int {
	if d := len(a) - len(b); d >= limit || -d >= limit {
		return limit
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			rowMin = min(rowMin, cur[j])
		}
		if rowMin >= limit {
			return limit
		}
		prev, cur = cur, prev
	}
	return min(prev[len(b)], limit)
}

// PolledQueues names the queues of views that have pollers, in views'
// order.
func PolledQueues(views []TaskQueueDescription) []string {
	var out []string
	for _, v := range views {
		if len(v.Pollers) > 0 {
			out = append(out, v.Name)
		}
	}
	return out
}

// Merge adds to d what another member of a cluster saw of the same queue
// (its own view: pollers and rates). A worker that polled both is one
// poller: its newest access, polling if it polls either, the types of its
// newest access, the dispatch rates added (a claim is served by the one
// member that proposes it) and both members named. The queue's rates are
// the larger (every member applies every command and counts them all; one
// that restarted has counted less), and its newest poll the newer.
func (d *TaskQueueDescription) Merge(o *TaskQueueDescription) {
	for _, p := range o.Pollers {
		i := slices.IndexFunc(d.Pollers, func(q TaskQueuePoller) bool { return q.Identity == p.Identity })
		if i < 0 {
			p.Nodes = slices.Clone(p.Nodes)
			d.Pollers = append(d.Pollers, p)
			continue
		}
		q := &d.Pollers[i]
		if p.LastAccessMS > q.LastAccessMS {
			q.LastAccessMS, q.BuildID = p.LastAccessMS, p.BuildID
			q.WorkflowTypes, q.ActivityTypes = p.WorkflowTypes, p.ActivityTypes
			q.AnyType, q.TypesTruncated = p.AnyType, p.TypesTruncated
		}
		q.Polling = q.Polling || p.Polling
		q.DispatchRate += p.DispatchRate
		for _, n := range p.Nodes {
			if !slices.Contains(q.Nodes, n) {
				q.Nodes = append(q.Nodes, n)
			}
		}
		slices.Sort(q.Nodes)
	}
	slices.SortFunc(d.Pollers, func(a, b TaskQueuePoller) int {
		if a.LastAccessMS != b.LastAccessMS {
			return cmp.Compare(b.LastAccessMS, a.LastAccessMS)
		}
		return strings.Compare(a.Identity, b.Identity)
	})
	d.Stats.AddRate = max(d.Stats.AddRate, o.Stats.AddRate)
	d.Stats.DispatchRate = max(d.Stats.DispatchRate, o.Stats.DispatchRate)
	if o.LastPollMS > d.LastPollMS {
		d.LastPollMS, d.LastPoller = o.LastPollMS, o.LastPoller
	}
}
