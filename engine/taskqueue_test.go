package engine

import (
	"fmt"
	"strings"
	"testing"
)

// ExplainQueued's cases, from the queue's pollers alone.
func TestExplainQueued(t *testing.T) {
	const now = 10_000_000
	wf := TaskQueuePoller{Identity: "wf-worker", LastAccessMS: now - 40_000, WorkflowTypes: []string{"Order"}, ActivityTypes: []string{"Charge"}}
	polling := wf
	polling.Polling, polling.LastAccessMS = true, now
	dyn := TaskQueuePoller{Identity: "dyn", LastAccessMS: now, AnyType: true, Polling: true}
	queued := func(typ string) Job { return Job{Status: StatusQueued, Queue: "q", Type: typ} }
	deferred := queued("Order")
	deferred.DeferredUntilMS, deferred.DeferredReason = now+4_000, `no worker on queue "q" registers type "Order" (asked by owner "old")`
	for _, tc := range []struct {
		name    string
		job     Job
		pollers []TaskQueuePoller
		backlog int64
		polled  []string
		code    string
		want    []string
	}{
		{"not queued", Job{Status: StatusRunning, Queue: "q", Type: "Order"}, nil, 0, nil, "", nil},
		{"nobody polls", queued("Order"), nil, 0, nil, QueuedNoPoller,
			[]string{`no worker has polled task queue "q" in the last 5m`}},
		{"nobody polls, others do", Job{Status: StatusQueued, Queue: "Orders", Type: "Order"}, nil, 0, []string{"orders", "Orders", "billing"}, QueuedNoPoller,
			[]string{"queues with pollers: orders, billing", `did you mean "orders"?`}},
		{"no poller of the type", queued("order"), []TaskQueuePoller{wf}, 0, nil, QueuedNoPollerForType,
			[]string{`serves workflow type "order" (they serve workflow types Order, activity types Charge); did you mean "Order"?`}},
		{"no poller of the activity type", queued(ActivityTypePrefix + "Chrage"), []TaskQueuePoller{wf}, 0, nil, QueuedNoPollerForType,
			[]string{`serves activity type "Chrage"`, `did you mean "Charge"?`}},
		{"nothing near", queued("Shipping"), []TaskQueuePoller{wf}, 0, nil, QueuedNoPollerForType,
			[]string{`serves workflow type "Shipping" (they serve workflow types Order, activity types Charge)`}},
		{"busy", queued("Order"), []TaskQueuePoller{wf}, 1, nil, QueuedNoFreeSlot,
			[]string{"waiting for a free slot", "(wf-worker) are all busy; none has polled for 40s"}},
		{"polling", queued("Order"), []TaskQueuePoller{polling}, 3, nil, QueuedDispatching,
			[]string{"polls now (wf-worker); the queue holds 2 other ready jobs"}},
		{"dynamic", queued("Anything"), []TaskQueuePoller{wf, dyn}, 1, nil, QueuedDispatching,
			[]string{"polls now (dyn)"}},
		{"deferred", deferred, []TaskQueuePoller{polling}, 0, nil, QueuedDeferred,
			[]string{`offered again in 4s: no worker on queue "q" registers type "Order"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &TaskQueueDescription{Name: tc.job.Queue, Pollers: tc.pollers, NowMS: now, Stats: TaskQueueStats{BacklogCount: tc.backlog}}
			r := ExplainQueued(&tc.job, d, tc.polled)
			if r.Code != tc.code || r.Queued != (tc.code != "") {
				t.Fatalf("%+v, want code %q", r, tc.code)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.Message, w) {
					t.Errorf("%q lacks %q", r.Message, w)
				}
			}
		})
	}
}

func TestNearest(t *testing.T) {
	for _, tc := range []struct{ s, want string }{
		{"OrderWorkflw", "OrderWorkflow"}, {"orderworkflow", "OrderWorkflow"}, {"Ship", ""}, {"OrderWorkflow", ""},
		{"OdrerWorkflow", "OrderWorkflow"}, // a swap is two edits
	} {
		if got := nearest(tc.s, []string{"OrderWorkflow", "Shipping"}); got != tc.want {
			t.Errorf("nearest(%q) = %q, want %q", tc.s, got, tc.want)
		}
	}
	if d := editDistance("kitten", "sitting", 10); d != 3 {
		t.Errorf("editDistance = %d", d)
	}
}

// Merging members' views: one worker seen by two members is one poller,
// with its newest access and both members; rates are the larger.
func TestTaskQueueMerge(t *testing.T) {
	a := TaskQueueDescription{Name: "q", Pollers: []TaskQueuePoller{{Identity: "w", LastAccessMS: 10, WorkflowTypes: []string{"Old"}, Nodes: []string{"n1"}, DispatchRate: 1}},
		Stats: TaskQueueStats{AddRate: 2, DispatchRate: 1}, LastPollMS: 10, LastPoller: "w"}
	b := TaskQueueDescription{Name: "q", Pollers: []TaskQueuePoller{
		{Identity: "w", LastAccessMS: 20, Polling: true, WorkflowTypes: []string{"New"}, Nodes: []string{"n2"}, DispatchRate: 0.5},
		{Identity: "v", LastAccessMS: 15, Nodes: []string{"n2"}}},
		Stats: TaskQueueStats{AddRate: 3, DispatchRate: 0.5}, LastPollMS: 20, LastPoller: "w"}
	a.Merge(&b)
	got := fmt.Sprintf("%+v", a.Pollers)
	want := "[{Identity:w LastAccessMS:20 Polling:true WorkflowTypes:[New] ActivityTypes:[] AnyType:false TypesTruncated:false BuildID: DispatchRate:1.5 Nodes:[n1 n2]} " +
		"{Identity:v LastAccessMS:15 Polling:false WorkflowTypes:[] ActivityTypes:[] AnyType:false TypesTruncated:false BuildID: DispatchRate:0 Nodes:[n2]}]"
	if got != want {
		t.Errorf("pollers\n got %s\nwant %s", got, want)
	}
	if a.Stats.AddRate != 3 || a.Stats.DispatchRate != 1 || a.LastPollMS != 20 {
		t.Errorf("merged %+v", a)
	}
}
