package worker_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"

	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// addResources registers resources of one capability with the given ids.
func addResources(t *testing.T, svc engine.Service, capability string, capacity int, ids ...string) {
	t.Helper()
	for _, id := range ids {
		if _, err := svc.AddResource(context.Background(), engine.AddResource{ID: id, Capabilities: []string{capability},
			Labels: map[string]string{"id": id}, Capacity: capacity}); err != nil {
			t.Fatal(err)
		}
	}
}

// waitStepState polls the steps of workflow id until step is in state,
// and returns its info.
func waitStepState(t *testing.T, svc engine.Service, id, step string, state engine.StepState) engine.StepInfo {
	t.Helper()
	var last []engine.StepInfo
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		steps, err := svc.Steps(context.Background(), engine.Target{WorkflowID: id})
		if err != nil {
			t.Fatal(err)
		}
		last = steps
		for _, s := range steps {
			if s.Step == step && s.State == state {
				return s
			}
		}
	}
	t.Fatalf("step %s of %s never reached %s; steps: %+v", step, id, state, last)
	return engine.StepInfo{}
}

// stepTypes lists the step events of a workflow's history, as
// "type@step#attempt[resource]".
func stepTypes(t *testing.T, e *embedded.Engine, id string) []string {
	t.Helper()
	j, err := e.Describe(context.Background(), engine.Target{WorkflowID: id})
	if err != nil {
		t.Fatal(err)
	}
	page, err := e.History(context.Background(), j.ID, 0, engine.MaxPage)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ev := range page.Events {
		if engine.IsStepEvent(ev.Type) {
			s := fmt.Sprintf("%s@%s#%d", ev.Type, ev.Step, ev.StepAttempt)
			if ev.Resource != "" {
				s += "[" + ev.Resource + "]"
			}
			if ev.Decision != "" {
				s += "{" + string(ev.Decision) + "}"
			}
			out = append(out, s)
		}
	}
	return out
}

// Browse uses the browser it holds; browser "b1" is broken.
func Browse(ctx context.Context, url string) (string, error) {
	info := activity.GetInfo(ctx)
	if info.Resource == "b1" {
		return "", activity.NewResourceError("browser %s crashed on %s", info.Resource, url)
	}
	return fmt.Sprintf("%s on %s (label %s, try %d)", url, info.Resource, info.ResourceLabels["id"], info.Attempt), nil
}

func BrowseFlow(ctx workflow.Context, url string) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{RequiredCapabilities: []string{"browser"}})
	var s string
	err := workflow.ExecuteActivity(ctx, Browse, url).Get(ctx, &s)
	return s, err
}

// A step that needs a resource takes a unit of one that offers what it
// needs, sees it in GetInfo, and is switched away from a resource that
// failed it; the failed one stays on its avoid-list.
func TestStepSwitchesAwayFromAFailedResource(t *testing.T) { forEachCache(t, testStepSwitches) }

func testStepSwitches(t *testing.T, cache int) {
	e := open(t)
	svc := service(t, e)
	addResources(t, svc, "browser", 1, "b1", "b2")
	if _, err := svc.AddResource(context.Background(), engine.AddResource{ID: "phone", Capabilities: []string{"sms"}, Capacity: 1}); err != nil {
		t.Fatal(err)
	}
	startWorker(t, e, "res", worker.Options{CacheSize: cache}, func(w worker.Worker) {
		w.RegisterWorkflow(BrowseFlow)
		w.RegisterActivity(Browse)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run, err := client.New(svc).ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "browse", TaskQueue: "res"}, BrowseFlow, "example.org")
	if err != nil {
		t.Fatal(err)
	}
	var got string
	if err := run.Get(ctx, &got); err != nil {
		t.Fatal(err)
	}
	if got != "example.org on b2 (label b2, try 2)" {
		t.Fatalf("result %q", got)
	}
	want := []string{"step_leased@1#1[b1]", "step_started@1#1", "step_resource_failed@1#1[b1]",
		"step_leased@1#2[b2]", "step_started@1#2", "activity_completed@1#2"}
	if got := stepTypes(t, e, "browse"); !slices.Equal(got, want) {
		t.Fatalf("step events\n got %v\nwant %v", got, want)
	}
	steps, err := svc.Steps(ctx, engine.Target{WorkflowID: "browse"})
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 1 || steps[0].State != engine.StepSucceeded || !slices.Equal(steps[0].Avoid, []string{"b1"}) || steps[0].Attempt != 2 {
		t.Fatalf("steps %+v", steps)
	}
	rs, err := svc.Resources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if len(r.Holders) != 0 {
			t.Errorf("resource %s still held by %+v", r.ID, r.Holders)
		}
	}
	verify(t, e)
}

// When every resource that could serve a step is on its avoid-list, the
// step fails for good with an error naming what it needs and what it
// avoids.
func TestStepFailsWhenNoResourceIsLeft(t *testing.T) {
	e := open(t)
	svc := service(t, e)
	addResources(t, svc, "browser", 1, "b1")
	startWorker(t, e, "nores", worker.Options{}, func(w worker.Worker) {
		w.RegisterWorkflow(BrowseFlow)
		w.RegisterActivity(Browse)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run, err := client.New(svc).ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "nores", TaskQueue: "nores"}, BrowseFlow, "x")
	if err != nil {
		t.Fatal(err)
	}
	err = run.Get(ctx, nil)
	var ae *workflow.ApplicationError
	if !errors.As(err, &ae) || ae.Type() != "NoResourceError" || !strings.Contains(err.Error(), "capabilities [browser]") ||
		!strings.Contains(err.Error(), "avoided [b1]") {
		t.Fatalf("error %v", err)
	}
	steps, err := svc.Steps(ctx, engine.Target{WorkflowID: "nores"})
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 1 || steps[0].State != engine.StepFailed {
		t.Fatalf("steps %+v", steps)
	}
	verify(t, e)
}

// holding counts the tries holding each resource at once, and the most
// ever seen.
type holding struct {
	mu   sync.Mutex
	now  map[string]int
	peak map[string]int
}

var held = &holding{now: map[string]int{}, peak: map[string]int{}}

func (h *holding) enter(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.now[id]++
	h.peak[id] = max(h.peak[id], h.now[id])
}

func (h *holding) leave(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.now[id]--
}

// UseGPU holds its GPU for a moment.
func UseGPU(ctx context.Context) (string, error) {
	id := activity.GetInfo(ctx).Resource
	held.enter(id)
	defer held.leave(id)
	time.Sleep(2 * time.Millisecond)
	return id, nil
}

func GPUFlow(ctx workflow.Context) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{RequiredCapabilities: []string{"gpu"},
		LabelSelector: map[string]string{"zone": "eu"}})
	var s string
	err := workflow.ExecuteActivity(ctx, UseGPU).Get(ctx, &s)
	return s, err
}

// Many workflows contend for few resource units: no unit is ever held by
// two tries at once, every workflow gets one, and a resource the selector
// excludes is never used.
func TestResourceExclusivityUnderContention(t *testing.T) {
	e := open(t)
	svc := service(t, e)
	for _, r := range []engine.AddResource{
		{ID: "g1", Capabilities: []string{"gpu"}, Labels: map[string]string{"zone": "eu"}, Capacity: 2},
		{ID: "g2", Capabilities: []string{"gpu"}, Labels: map[string]string{"zone": "eu"}, Capacity: 1},
		{ID: "g3", Capabilities: []string{"gpu"}, Labels: map[string]string{"zone": "us"}, Capacity: 5},
	} {
		if _, err := svc.AddResource(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	held.mu.Lock()
	held.now, held.peak = map[string]int{}, map[string]int{}
	held.mu.Unlock()
	for i := 0; i < 2; i++ {
		startWorker(t, e, "gpu", worker.Options{Identity: fmt.Sprintf("w%d", i)}, func(w worker.Worker) {
			w.RegisterWorkflow(GPUFlow)
			w.RegisterActivity(UseGPU)
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := client.New(svc)
	const n = 24
	runs := make([]client.WorkflowRun, n)
	for i := range runs {
		var err error
		if runs[i], err = c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: fmt.Sprintf("gpu-%d", i), TaskQueue: "gpu"}, GPUFlow); err != nil {
			t.Fatal(err)
		}
	}
	used := map[string]int{}
	for _, run := range runs {
		var id string
		if err := run.Get(ctx, &id); err != nil {
			t.Fatal(err)
		}
		used[id]++
	}
	held.mu.Lock()
	defer held.mu.Unlock()
	if held.peak["g1"] > 2 || held.peak["g2"] > 1 {
		t.Fatalf("capacity exceeded: peak holders %v", held.peak)
	}
	if used["g3"] != 0 || used["g1"]+used["g2"] != n {
		t.Fatalf("resources used %v", used)
	}
	verify(t, e)
}

// critics counts the calls of the test critics, by workflow id.
var critics = struct {
	sync.Mutex
	calls map[string]int
}{calls: map[string]int{}}

// Roll reports its try; the critic judges it.
func Roll(ctx context.Context) (string, error) {
	info := activity.GetInfo(ctx)
	return fmt.Sprintf("try %d on %s answer %s", info.Attempt, info.Resource, info.Answer), nil
}

// stagedCritic retries the first try, switches the resource of the second,
// asks a person after the third and accepts the fourth.
func stagedCritic(ctx context.Context, in worker.CriticInput) (worker.Verdict, error) {
	critics.Lock()
	critics.calls[in.WorkflowID]++
	critics.Unlock()
	switch in.Attempt {
	case 1:
		return worker.Verdict{Decision: worker.Retry, Reason: "blurry"}, nil
	case 2:
		return worker.Verdict{Decision: worker.SwitchResource, Reason: "slow phone"}, nil
	case 3:
		return worker.Verdict{Decision: worker.NeedsUser, Question: []byte(`{"captcha":"7+5"}`)}, nil
	}
	var s string
	if err := in.Result.Get(&s); err != nil || !strings.Contains(s, "answer 12") {
		return worker.Verdict{Decision: worker.Retry, Reason: "no answer seen"}, nil
	}
	return worker.Verdict{Decision: worker.Accept}, nil
}

// replanCritic wants a new plan; bogusCritic answers what is no decision.
func replanCritic(ctx context.Context, in worker.CriticInput) (worker.Verdict, error) {
	return worker.Verdict{Decision: worker.Replan, Reason: "the page moved"}, nil
}

func bogusCritic(ctx context.Context, in worker.CriticInput) (worker.Verdict, error) {
	return worker.Verdict{Decision: "maybe"}, nil
}

func alwaysRetry(ctx context.Context, in worker.CriticInput) (worker.Verdict, error) {
	return worker.Verdict{Decision: worker.Retry, Reason: "not yet"}, nil
}

func CriticFlow(ctx workflow.Context, critic string) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{Critic: critic, RequiredCapabilities: []string{"phone"},
		RetryPolicy: &workflow.RetryPolicy{InitialInterval: time.Millisecond, MaximumAttempts: 6}})
	var s string
	err := workflow.ExecuteActivity(ctx, Roll).Get(ctx, &s)
	if errors.Is(err, workflow.ErrReplan) {
		return "replanned: " + err.Error(), nil
	}
	return s, err
}

func startCriticWorker(t *testing.T, e *embedded.Engine, queue string, cache int) {
	startWorker(t, e, queue, worker.Options{CacheSize: cache}, func(w worker.Worker) {
		w.RegisterWorkflow(CriticFlow)
		w.RegisterActivity(Roll)
		w.RegisterCritic("staged", stagedCritic)
		w.RegisterCritic("replan", replanCritic)
		w.RegisterCritic("bogus", bogusCritic)
		w.RegisterCritic("retry", alwaysRetry)
	})
}

// Each critic decision leads where decide_next_state says, is recorded on
// the step's event, and is asked once per try: a replay (cache -1 replays
// every turn) never asks again.
func TestCriticDecisions(t *testing.T) { forEachCache(t, testCriticDecisions) }

func testCriticDecisions(t *testing.T, cache int) {
	e := open(t)
	svc := service(t, e)
	addResources(t, svc, "phone", 1, "p1", "p2")
	queue := fmt.Sprintf("critic%d", cache)
	startCriticWorker(t, e, queue, cache)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := client.New(svc)
	id := fmt.Sprintf("staged%d", cache)
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue}, CriticFlow, "staged")
	if err != nil {
		t.Fatal(err)
	}
	si := waitStepState(t, svc, id, "1", engine.StepNeedsUser)
	if string(si.Question) != `{"captcha":"7+5"}` || si.Decision != worker.NeedsUser || si.Worker != "" {
		t.Fatalf("the step asking: %+v", si)
	}
	if _, err := c.AnswerStep(ctx, client.StepTarget{WorkflowID: id, Step: "1"}, []byte("12")); err != nil {
		t.Fatal(err)
	}
	var got string
	if err := run.Get(ctx, &got); err != nil {
		t.Fatal(err)
	}
	if got != "try 4 on p2 answer 12" {
		t.Fatalf("result %q", got)
	}
	want := []string{"step_leased@1#1[p1]", "step_started@1#1", "activity_attempt_failed@1#1{retry}",
		"step_leased@1#2[p1]", "step_resource_failed@1#2[p1]{switch_resource}",
		"step_leased@1#3[p2]", "step_started@1#3", "step_needs_user@1#3{needs_user}",
		"step_answered@1#4", "activity_completed@1#4{accept}"}
	if got := stepTypes(t, e, id); !slices.Equal(got, want) {
		t.Fatalf("step events\n got %v\nwant %v", got, want)
	}
	critics.Lock()
	calls := critics.calls[id]
	critics.Unlock()
	if calls != 4 {
		t.Fatalf("the critic was asked %d times for 4 tries", calls)
	}

	for _, tc := range []struct{ critic, want string }{
		{"replan", "replanned: "},
		{"bogus", `decided "maybe", not a decision`},
		{"retry", "RetriesExhausted"},
	} {
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: fmt.Sprintf("%s%d", tc.critic, cache), TaskQueue: queue}, CriticFlow, tc.critic)
		if err != nil {
			t.Fatal(err)
		}
		var s string
		err = run.Get(ctx, &s)
		if msg := fmt.Sprint(s, err); !strings.Contains(msg, tc.want) {
			t.Errorf("critic %s: %q, %v; want %q", tc.critic, s, err, tc.want)
		}
	}
	verify(t, e)
}

// Confirm needs a person on its first try and reports the answer after.
func Confirm(ctx context.Context, order string) (string, error) {
	info := activity.GetInfo(ctx)
	if info.Answer == nil {
		return "", activity.NewNeedsUserError("confirm " + order + "?")
	}
	return fmt.Sprintf("%s confirmed by %s on try %d", order, info.Answer, info.Attempt), nil
}

func ConfirmFlow(ctx workflow.Context, order string, timeout time.Duration) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{NeedsUserTimeout: timeout})
	var s string
	err := workflow.ExecuteActivity(ctx, Confirm, order).Get(ctx, &s)
	return s, err
}

func registerConfirm(w worker.Worker) {
	w.RegisterWorkflow(ConfirmFlow)
	w.RegisterActivity(Confirm)
}

// A step that needs a person waits durably: its job waits holding no
// lease, nothing runs it, and it outlives its worker and (embedded) the
// engine's process; the answer, given after both restarted, reaches the
// activity's next try.
func TestNeedsUserSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	var e *embedded.Engine
	reopen := func() {
		if overCluster() {
			if e == nil {
				e = openCluster(t)
			}
			return
		}
		if e != nil {
			closeOK(t, e)
		}
		var err error
		if e, err = embedded.Open(embedded.Config{Dir: dir}); err != nil {
			t.Fatal(err)
		}
	}
	reopen()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w1 := startWorker(t, e, "confirm", worker.Options{}, registerConfirm)
	if _, err := client.New(service(t, e)).ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "confirm", TaskQueue: "confirm"},
		ConfirmFlow, "order-7", time.Duration(0)); err != nil {
		t.Fatal(err)
	}
	si := waitStepState(t, service(t, e), "confirm", "1", engine.StepNeedsUser)
	if string(si.Question) != `"confirm order-7?"` || si.Worker != "" || si.LeaseExpiryMS != 0 {
		t.Fatalf("the step asking: %+v", si)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		j, err := e.Describe(ctx, engine.Target{WorkflowID: "confirm"})
		if err != nil {
			t.Fatal(err)
		}
		if j.Status == engine.StatusWaiting && j.LeaseOwner == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the job asking a person is %s held by %q, want Waiting with no lease", j.Status, j.LeaseOwner)
		}
	}
	stopOK(t, w1)
	reopen()
	c := client.New(service(t, e))
	if _, err := c.AnswerStep(ctx, client.StepTarget{WorkflowID: "confirm", Step: "1"}, []byte("ana")); err != nil {
		t.Fatal(err)
	}
	w2 := startWorker(t, e, "confirm", worker.Options{}, registerConfirm)
	run := c.GetWorkflow(ctx, "confirm", "")
	var got string
	if err := run.Get(ctx, &got); err != nil {
		t.Fatal(err)
	}
	if got != "order-7 confirmed by ana on try 2" {
		t.Fatalf("result %q", got)
	}
	want := []string{"step_needs_user@1#1", "step_answered@1#2", "activity_completed@1#2"}
	if got := stepTypes(t, e, "confirm"); !slices.Equal(got, want) {
		t.Fatalf("step events\n got %v\nwant %v", got, want)
	}
	verify(t, e)
	stopOK(t, w2)
	if !overCluster() {
		closeOK(t, e)
	}
}

// A person who does not answer within NeedsUserTimeout fails the step
// with a TimeoutError.
func TestNeedsUserTimeout(t *testing.T) {
	e := open(t)
	startWorker(t, e, "confirm-to", worker.Options{}, registerConfirm)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run, err := client.New(service(t, e)).ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: "confirm-to"},
		ConfirmFlow, "order-8", 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	err = run.Get(ctx, nil)
	var ae *workflow.ApplicationError
	if !errors.As(err, &ae) || ae.Type() != "TimeoutError" || !strings.Contains(err.Error(), "nobody answered within 50ms") {
		t.Fatalf("error %v", err)
	}
	verify(t, e)
}

// gate lets a test hold activities until it opens them.
var gates = struct {
	sync.Mutex
	ch map[string]chan struct{}
}{ch: map[string]chan struct{}{}}

func gateOf(key string) chan struct{} {
	gates.Lock()
	defer gates.Unlock()
	if gates.ch[key] == nil {
		gates.ch[key] = make(chan struct{})
	}
	return gates.ch[key]
}

// Gated waits for its gate, then returns its name or fails when asked to.
func Gated(ctx context.Context, key string, fail bool) (string, error) {
	select {
	case <-gateOf(key):
	case <-ctx.Done():
		return "", ctx.Err()
	}
	if fail {
		return "", workflow.NewApplicationError(key+" broke", "Broken", true)
	}
	return key, nil
}

// DepsFlow runs first, and second once first succeeded (DependsOn).
func DepsFlow(ctx workflow.Context, key string, failFirst bool) (string, error) {
	first := workflow.ExecuteActivity(ctx, Gated, key+"/first", failFirst)
	dctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{DependsOn: []workflow.Future{first}})
	second := workflow.ExecuteActivity(dctx, Gated, key+"/second", false)
	var a, b string
	errA := first.Get(ctx, &a)
	errB := second.Get(ctx, &b)
	if errB != nil {
		return "", errB
	}
	return a + "," + b, errA
}

// A step issued before the step it depends on succeeded is WAITING_DEPS,
// and runs once it did; a failed dependency fails it.
func TestStepWaitsForItsDependencies(t *testing.T) {
	e := open(t)
	svc := service(t, e)
	startWorker(t, e, "deps", worker.Options{}, func(w worker.Worker) {
		w.RegisterWorkflow(DepsFlow)
		w.RegisterActivity(Gated)
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := client.New(svc)
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "deps-ok", TaskQueue: "deps"}, DepsFlow, "ok", false)
	if err != nil {
		t.Fatal(err)
	}
	waitStepState(t, svc, "deps-ok", "2", engine.StepWaitingDeps)
	close(gateOf("ok/second")) // open, yet it must not run before first
	time.Sleep(20 * time.Millisecond)
	waitStepState(t, svc, "deps-ok", "2", engine.StepWaitingDeps)
	close(gateOf("ok/first"))
	var got string
	if err := run.Get(ctx, &got); err != nil || got != "ok/first,ok/second" {
		t.Fatalf("result %q, %v", got, err)
	}

	run, err = c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "deps-bad", TaskQueue: "deps"}, DepsFlow, "bad", true)
	if err != nil {
		t.Fatal(err)
	}
	waitStepState(t, svc, "deps-bad", "2", engine.StepWaitingDeps)
	close(gateOf("bad/first"))
	close(gateOf("bad/second"))
	err = run.Get(ctx, nil)
	if err == nil || !strings.Contains(err.Error(), "DependencyFailed") {
		t.Fatalf("error %v", err)
	}
	steps, err := svc.Steps(ctx, engine.Target{WorkflowID: "deps-bad"})
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 2 || steps[0].State != engine.StepFailed || steps[1].State != engine.StepFailed {
		t.Fatalf("steps %+v", steps)
	}
	verify(t, e)
}

// FailsFirstTry fails its first try, holds its second at the gate, then
// succeeds.
func FailsFirstTry(ctx context.Context, key string) (string, error) {
	info := activity.GetInfo(ctx)
	if info.Attempt == 1 {
		return "", errors.New("first try fails")
	}
	activity.RecordHeartbeat(ctx)
	<-gateOf(key)
	return fmt.Sprintf("try %d", info.Attempt), nil
}

func FailsFirstFlow(ctx workflow.Context, key string, explicit bool, delay time.Duration) (string, error) {
	opts := workflow.ActivityOptions{RetryPolicy: &workflow.RetryPolicy{InitialInterval: delay, BackoffCoefficient: 1}}
	if explicit {
		opts.RequiredCapabilities = []string{"cpu"}
	}
	ctx = workflow.WithActivityOptions(ctx, opts)
	var s string
	err := workflow.ExecuteActivity(ctx, FailsFirstTry, key).Get(ctx, &s)
	return s, err
}

// A step is RETRYING while its retry delay runs, on either path and
// whether the worker sleeps the delay or sets a durable timer; the next
// try shows RUNNING, its worker and its last heartbeat.
func TestRetryingIsVisible(t *testing.T) {
	e := open(t)
	svc := service(t, e)
	addResources(t, svc, "cpu", 1, "cpu-1")
	startWorker(t, e, "retrying", worker.Options{Identity: "w-retry", RetryInlineThreshold: 500 * time.Millisecond}, func(w worker.Worker) {
		w.RegisterWorkflow(FailsFirstFlow)
		w.RegisterActivity(FailsFirstTry)
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := client.New(svc)
	for _, tc := range []struct {
		explicit bool
		delay    time.Duration
	}{{false, 300 * time.Millisecond}, {false, time.Second}, {true, 300 * time.Millisecond}, {true, time.Second}} {
		key := fmt.Sprintf("retry-%v-%v", tc.explicit, tc.delay)
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: key, TaskQueue: "retrying"}, FailsFirstFlow, key, tc.explicit, tc.delay)
		if err != nil {
			t.Fatal(err)
		}
		if si := waitStepState(t, svc, key, "1", engine.StepRetrying); si.Attempt != 1 {
			t.Errorf("%s: RETRYING after try %d", key, si.Attempt)
		}
		if tc.explicit {
			si := waitStepState(t, svc, key, "1", engine.StepRunning)
			for si.LastHeartbeatMS == 0 {
				si = waitStepState(t, svc, key, "1", engine.StepRunning)
			}
			if si.Attempt != 2 || si.Worker != "w-retry" || si.Resource != "cpu-1" {
				t.Errorf("%s: running %+v", key, si)
			}
		} else {
			// The straight path's second try writes nothing until it
			// ends, but its heartbeat is noted for describe.
			var si engine.StepInfo
			for deadline := time.Now().Add(30 * time.Second); si.LastHeartbeatMS == 0 && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
				steps, err := svc.Steps(ctx, engine.Target{WorkflowID: key})
				if err != nil {
					t.Fatal(err)
				}
				si = steps[0]
			}
			if si.Attempt != 2 || si.Worker != "w-retry" {
				t.Errorf("%s: running %+v", key, si)
			}
		}
		close(gateOf(key))
		var got string
		if err := run.Get(ctx, &got); err != nil || got != "try 2" {
			t.Fatalf("%s: %q, %v", key, got, err)
		}
	}
	verify(t, e)
}

// StraightFlow runs three activities one after another.
func StraightFlow(ctx workflow.Context) (string, error) {
	var r, c, s string
	if err := workflow.ExecuteActivity(ctx, Reserve, "book").Get(ctx, &r); err != nil {
		return "", err
	}
	if err := workflow.ExecuteActivity(ctx, Charge, 5).Get(ctx, &c); err != nil {
		return "", err
	}
	err := workflow.ExecuteActivity(ctx, Ship, r).Get(ctx, &s)
	return r + c + s, err
}

// A step on the straight path writes no step events of its own: its
// history is what it was before steps had states, and its state is read
// from it.
func TestStraightPathWritesNoStepEvents(t *testing.T) {
	e := open(t)
	startWorker(t, e, "straight", worker.Options{}, func(w worker.Worker) { w.RegisterWorkflow(StraightFlow) })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run, err := client.New(service(t, e)).ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "straight", TaskQueue: "straight"}, StraightFlow)
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Get(ctx, nil); err != nil {
		t.Fatal(err)
	}
	want := []string{"activity_completed@1#1", "activity_completed@2#1", "activity_completed@3#1"}
	if got := stepTypes(t, e, "straight"); !slices.Equal(got, want) {
		t.Fatalf("step events %v, want %v", got, want)
	}
	steps, err := e.Steps(ctx, engine.Target{WorkflowID: "straight"})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range steps {
		if s.State != engine.StepSucceeded || s.Explicit || s.Attempt != 1 {
			t.Errorf("step %+v", s)
		}
	}
}

// A write of a step's older try is refused as stale while the job's own
// lease is live and the newer try runs. (The test reads the job's lease
// token from the worker's claims: without it, the writes are not even the
// job's.)
func TestStaleStepAttemptRefused(t *testing.T) {
	e := open(t)
	svc := service(t, e)
	addResources(t, svc, "cpu", 1, "cpu-1")
	spy := &leaseSpy{Service: svc}
	startWorkerOn(t, spy, "stale", worker.Options{}, func(w worker.Worker) {
		w.RegisterWorkflow(FailsFirstFlow)
		w.RegisterActivity(FailsFirstTry)
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run, err := client.New(svc).ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "stale", TaskQueue: "stale"}, FailsFirstFlow, "stale", true, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	// The first try is RUNNING too, briefly, before it fails: wait for
	// the second.
	si := waitStepState(t, svc, "stale", "1", engine.StepRunning)
	for si.Attempt < 2 && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
		si = waitStepState(t, svc, "stale", "1", engine.StepRunning)
	}
	if si.Attempt != 2 {
		close(gateOf("stale")) // lets the try end, so the worker can stop
		t.Fatalf("running %+v", si)
	}
	j, err := svc.Describe(ctx, engine.Target{WorkflowID: "stale"})
	if err != nil {
		t.Fatal(err)
	}
	if j.Status != engine.StatusRunning {
		t.Fatalf("job %s", j.Status)
	}
	ref := engine.LeaseRef{Job: j.ID, Attempt: j.Attempt}
	if _, err := svc.StepHeartbeat(ctx, engine.StepHeartbeat{LeaseRef: ref, Step: "1", StepAttempt: 2, LeaseMS: 30_000}); !errors.Is(err, engine.ErrStaleAttempt) {
		t.Errorf("a heartbeat of the live try without the job's lease token: %v", err)
	}
	ref = spy.lease(ref)
	_, hbErr := svc.StepHeartbeat(ctx, engine.StepHeartbeat{LeaseRef: ref, Step: "1", StepAttempt: 1, LeaseMS: 30_000})
	_, endErr := svc.EndStepAttempt(ctx, engine.EndStepAttempt{LeaseRef: ref, Step: "1", Name: "FailsFirstTry", StepAttempt: 1, Outcome: engine.OutcomeRetry})
	_, commitErr := svc.CommitStep(ctx, engine.CommitStep{LeaseRef: ref, Step: "1", Name: "FailsFirstTry", Type: "activity_completed",
		Payload: []byte(`"forged"`), StepAttempt: 1})
	for what, err := range map[string]error{"heartbeat": hbErr, "end": endErr, "commit": commitErr} {
		var coded interface{ Code() string }
		if !errors.Is(err, engine.ErrStaleAttempt) || !errors.As(err, &coded) || coded.Code() != engine.StaleStepCode {
			t.Errorf("the stale try's %s: %v", what, err)
		}
	}
	close(gateOf("stale"))
	var got string
	if err := run.Get(ctx, &got); err != nil || got != "try 2" {
		t.Fatalf("%q, %v", got, err)
	}
	verify(t, e)
}

// deaf runs until its gate opens, whatever its context says: a try that
// does not notice it lost its lease.
func Deaf(ctx context.Context, key string) (string, error) {
	info := activity.GetInfo(ctx)
	if info.Attempt == 1 {
		<-gateOf(key)
		return "late", nil
	}
	return fmt.Sprintf("fresh on try %d", info.Attempt), nil
}

func DeafFlow(ctx workflow.Context, key string) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{HeartbeatTimeout: 50 * time.Millisecond,
		RetryPolicy: &workflow.RetryPolicy{InitialInterval: time.Millisecond}})
	var s string
	err := workflow.ExecuteActivity(ctx, Deaf, key).Get(ctx, &s)
	return s, err
}

// A step lease that runs out under a try that goes on anyway
// (step_lease_timeout) cancels the try; the step is leased again with the
// next attempt, and the old try's late result is never committed.
func TestStepLeaseTimeoutRunsTheNextAttempt(t *testing.T) {
	e := open(t)
	svc := service(t, e)
	startWorker(t, e, "deaf", worker.Options{}, func(w worker.Worker) {
		w.RegisterWorkflow(DeafFlow)
		w.RegisterActivity(Deaf)
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run, err := client.New(svc).ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "deaf", TaskQueue: "deaf"}, DeafFlow, "deaf")
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); !slices.Contains(stepTypes(t, e, "deaf"), "step_lease_timeout@1#1"); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no lease timeout: %v", stepTypes(t, e, "deaf"))
		}
	}
	close(gateOf("deaf"))
	var got string
	if err := run.Get(ctx, &got); err != nil || got != "fresh on try 2" {
		t.Fatalf("%q, %v", got, err)
	}
	want := []string{"step_leased@1#1", "step_started@1#1", "step_lease_timeout@1#1", "step_leased@1#2", "activity_completed@1#2"}
	if got := stepTypes(t, e, "deaf"); !slices.Equal(got, want) {
		t.Fatalf("step events\n got %v\nwant %v", got, want)
	}
	verify(t, e)
}

func RemoteWithResource(ctx workflow.Context) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{TaskQueue: "elsewhere", RequiredCapabilities: []string{"gpu"}})
	err := workflow.ExecuteActivity(ctx, UseGPU).Get(ctx, nil)
	return fmt.Sprint(err), nil
}

// Step options are for the workflow's own queue: an activity sent to
// another queue with them fails at once, naming why, rather than running
// without its resource.
func TestStepOptionsRefusedForAnotherQueue(t *testing.T) {
	e := open(t)
	startWorker(t, e, "own", worker.Options{}, func(w worker.Worker) { w.RegisterWorkflow(RemoteWithResource) })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run, err := client.New(service(t, e)).ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: "own"}, RemoteWithResource)
	if err != nil {
		t.Fatal(err)
	}
	var got string
	if err := run.Get(ctx, &got); err != nil || !strings.Contains(got, `are for activities on the workflow's own task queue "own", not "elsewhere"`) {
		t.Fatalf("%q, %v", got, err)
	}
}

// HoldSlot holds the one "slot" unit until its gate opens.
func HoldSlot(ctx context.Context, key string) (string, error) {
	select {
	case <-gateOf(key):
		return activity.GetInfo(ctx).Resource, nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// SlotFlow runs HoldSlot on a unit of "slot"; with cancelAfter it cancels
// the activity that long after asking for it.
func SlotFlow(ctx workflow.Context, key string, cancelAfter time.Duration) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{RequiredCapabilities: []string{"slot"}})
	actx, cancel := workflow.WithCancel(ctx)
	f := workflow.ExecuteActivity(actx, HoldSlot, key)
	if cancelAfter > 0 {
		if err := workflow.Sleep(ctx, cancelAfter); err != nil {
			return "", err
		}
		cancel()
	}
	var s string
	err := f.Get(ctx, &s)
	if errors.Is(err, workflow.ErrCanceled) {
		return "canceled", nil
	}
	return s, err
}

// A step waiting in the queue for a unit that its workflow cancels (and
// then ends) leaves the queue and never takes the unit; the unit goes to
// nobody else's harm when its holder ends.
func TestCancelAStepWaitingForAUnit(t *testing.T) {
	e := open(t)
	svc := service(t, e)
	if _, err := svc.AddResource(context.Background(), engine.AddResource{ID: "slot-1", Capabilities: []string{"slot"}, Capacity: 1}); err != nil {
		t.Fatal(err)
	}
	startWorker(t, e, "slots", worker.Options{}, func(w worker.Worker) {
		w.RegisterWorkflow(SlotFlow)
		w.RegisterActivity(HoldSlot)
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := client.New(svc)
	holder, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "holder", TaskQueue: "slots"}, SlotFlow, "holder", time.Duration(0))
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release := func() { once.Do(func() { close(gateOf("holder")) }) }
	defer release()
	waitStepState(t, svc, "holder", "1", engine.StepRunning)
	waiter, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "waiter", TaskQueue: "slots"}, SlotFlow, "waiter", 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	var got string
	if err := waiter.Get(ctx, &got); err != nil || got != "canceled" {
		t.Fatalf("the waiter: %q, %v", got, err)
	}
	// The run ended with the step cancelled where it waited: it is out of
	// the queue, holding nothing.
	steps, err := svc.Steps(ctx, engine.Target{WorkflowID: "waiter"})
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 1 || steps[0].WaitingForResource || steps[0].Resource != "" || steps[0].State.Terminal() && steps[0].State != engine.StepFailed {
		t.Fatalf("the cancelled step: %+v", steps)
	}
	release()
	if err := holder.Get(ctx, &got); err != nil || got != "slot-1" {
		t.Fatalf("the holder: %q, %v", got, err)
	}
	verify(t, e)
}

// leaseSpy is a worker's service that notes the lease tokens its claims
// return, so that a test can write as the job's holder.
type leaseSpy struct {
	engine.Service
	mu     sync.Mutex
	tokens map[engine.LeaseRef]string
}

func (s *leaseSpy) ClaimWait(ctx context.Context, c engine.Claim) ([]engine.ClaimedJob, error) {
	jobs, err := s.Service.ClaimWait(ctx, c)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tokens == nil {
		s.tokens = map[engine.LeaseRef]string{}
	}
	for _, j := range jobs {
		s.tokens[engine.LeaseRef{Job: j.Job, Attempt: j.Attempt}] = j.LeaseToken
	}
	return jobs, err
}

// lease returns ref with the token the claim of its attempt returned.
func (s *leaseSpy) lease(ref engine.LeaseRef) engine.LeaseRef {
	s.mu.Lock()
	defer s.mu.Unlock()
	ref.Token = s.tokens[engine.LeaseRef{Job: ref.Job, Attempt: ref.Attempt}]
	return ref
}
