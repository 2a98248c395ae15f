package httpapi

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/heddlewf/heddle/engine"

	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/storage"
)

// The tokens of the hostile fixture, one per role.
const (
	readerToken = "hdl_reader-token"
	clientToken = "hdl_client-token"
	workerToken = "hdl_worker-token"
	adminToken  = "hdl_admin-token"
)

// recordingCluster is a Cluster that leads and records every change it is
// asked to make, so a test can see that a refused request changed nothing.
type recordingCluster struct {
	mu      sync.Mutex
	changes []string
}

func (c *recordingCluster) Status(context.Context) (ClusterStatus, error) {
	return ClusterStatus{ID: "n1", State: "Leader", Term: 3, LeaderID: "n1", LeaderHTTP: "127.0.0.1:1",
		AppliedIndex: 42, Members: []ClusterMember{{ID: "n1", RaftAddr: "127.0.0.1:2", Voter: true, Leader: true}}}, nil
}

func (c *recordingCluster) note(s string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.changes = append(c.changes, s)
	return nil
}

func (c *recordingCluster) Join(_ context.Context, id, raftAddr, httpAddr string) error {
	return c.note("join " + id + " " + raftAddr + " " + httpAddr)
}
func (c *recordingCluster) Remove(_ context.Context, id string) error { return c.note("remove " + id) }
func (c *recordingCluster) TransferLeader(context.Context) error      { return c.note("transfer") }

func (c *recordingCluster) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.changes)
}

func testTokens(t testing.TB) *Tokens {
	t.Helper()
	tk := &Tokens{}
	for _, g := range []struct {
		name  string
		role  Role
		token string
	}{{"rita", RoleReader, readerToken}, {"carl", RoleClient, clientToken}, {"wendy", RoleWorker, workerToken}, {"ada", RoleAdmin, adminToken}} {
		if err := tk.Add(g.name, g.role, g.token); err != nil {
			t.Fatal(err)
		}
	}
	return tk
}

// hostileFixture is badFixture's store behind a server with a token per
// role and a cluster that records changes.
type hostileFixture struct {
	*badFixture
	cluster *recordingCluster
	runRef  engine.LeaseRef // the running job's current attempt
}

func newHostileFixture(t *testing.T) *hostileFixture {
	e := openEngine(t, engine.Limits{MaxPayloadBytes: 1024})
	cl := &recordingCluster{}
	_, hs := serve(t, ServerConfig{Service: e, Cluster: cl, MaxBodyBytes: 4096, Tokens: testTokens(t)})
	f := &hostileFixture{badFixture: &badFixture{e: e, url: hs.URL}, cluster: cl}
	ctx := context.Background()
	create := func(wf string) engine.JobID {
		r, err := e.Create(ctx, engine.CreateJob{Header: engine.Header{RequestID: "rq-" + wf}, WorkflowID: wf, Type: "T", Queue: "q-" + wf})
		if err != nil {
			t.Fatal(err)
		}
		return r.Job
	}
	f.queued = create("wf-queued")
	f.running = create("wf-running")
	jobs, err := e.Claim(ctx, engine.Claim{Queue: "q-wf-running", Owner: "w", Max: 1, LeaseMS: 3600_000})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claim: %v %v", jobs, err)
	}
	f.runRef = jobs[0].Lease()
	if _, err := e.Signal(ctx, engine.Signal{Header: engine.Header{RequestID: "rq-signal"}, Target: engine.Target{WorkflowID: "wf-queued"}, Name: "go"}); err != nil {
		t.Fatal(err)
	}
	return f
}

// msgpackNaN is a msgpack CreateJob whose retry coefficient is the float64
// bits given: what a hand-written client can send, and JSON cannot.
func msgpackCreateWithCoefficient(t *testing.T, bits uint64) []byte {
	b := mustMsgpack(t, map[string]any{"ty": "T", "qu": "q", "rt": map[string]any{"ii": 1, "bc": 1.5}})
	// 1.5 is 0xcb 3f f8 00 00 00 00 00 00; put the bits in its place.
	i := strings.Index(string(b), "\xcb\x3f\xf8\x00\x00\x00\x00\x00\x00")
	if i < 0 {
		t.Fatal("no float64 1.5 in the encoding")
	}
	for k := range 8 {
		b[i+1+k] = byte(bits >> (56 - 8*k))
	}
	return b
}

// Every request of the table is hostile: no credentials, a role below the
// route's, a forged engine event, a reused request id, a float that is not
// a number, a body that names its own caller, a cluster change without the
// admin role. Each is answered with the status and error the table gives,
// a message saying what was wrong, and nothing written: the store's hash
// and the cluster's changes stay as they were.
func TestHostileRequestsAreRefused(t *testing.T) {
	f := newHostileFixture(t)
	ref := f.runRef
	signal := mustJSON(t, engine.Signal{Target: engine.Target{WorkflowID: "wf-queued"}, Name: "go"})
	create := mustJSON(t, engine.CreateJob{Type: "T", Queue: "q"})
	claim := mustJSON(t, engine.Claim{Queue: "q-wf-queued", Owner: "w", Max: 1, LeaseMS: 1000})
	appendEv := func(typ engine.EventType) []byte {
		return mustJSON(t, engine.AppendEvents{LeaseRef: ref, Events: []engine.NewEvent{{Type: typ, Name: "go"}}})
	}
	join := mustJSON(t, ClusterMember{ID: "phantom", RaftAddr: "10.9.9.9:7281", HTTPAddr: "10.9.9.9:7280"})
	target := mustJSON(t, engine.Cancel{Target: engine.Target{WorkflowID: "wf-queued"}})
	type tc struct {
		name    string
		token   string // "" none; "raw:..." an Authorization header as written
		method  string
		path    string
		ctype   string // "" JSON
		body    []byte
		status  int
		errName string
		message string
	}
	var cases []tc
	// No credentials, or credentials the server does not know, on every
	// kind of route.
	for _, r := range []struct{ method, path string }{
		{"POST", "/v1/jobs"}, {"POST", "/v1/jobs/claim"}, {"POST", "/v1/jobs/signal"}, {"POST", "/v1/jobs/terminate"},
		{"GET", "/v1/jobs"}, {"GET", "/v1/jobs/1/history?wait=1s"}, {"GET", "/v1/workflows/wf-queued/closed?wait=1s"},
		{"GET", "/v1/cluster"}, {"POST", "/v1/cluster/members"}, {"DELETE", "/v1/cluster/members/n1"},
		{"POST", "/v1/cluster/leader/transfer"}, {"POST", "/v1/query"}, {"GET", "/v1/nothing"},
	} {
		cases = append(cases, tc{"no token " + r.method + " " + r.path, "", r.method, r.path, "", signal, 401, "unauthorized", "needs \"Authorization: Bearer <token>\""})
	}
	for _, a := range []struct{ name, header string }{
		{"unknown token", "raw:Bearer hdl_guess"}, {"token without Bearer", "raw:" + adminToken},
		{"lower-case scheme", "raw:bearer " + adminToken}, {"basic auth", "raw:Basic YWRtaW46YWRtaW4="},
		{"empty bearer", "raw:Bearer "}, {"token with a suffix", "raw:Bearer " + adminToken + "x"},
		{"token's digest as the token", "raw:Bearer " + TokenDigest(adminToken)},
	} {
		cases = append(cases, tc{a.name, a.header, "POST", "/v1/cluster/leader/transfer", "", nil, 401, "unauthorized", "Authorization"})
	}
	// Each role below a route's is refused, before the body is read.
	forbidden := func(token, role string, routes ...struct{ method, path string }) {
		for _, r := range routes {
			cases = append(cases, tc{role + " " + r.method + " " + r.path, token, r.method, r.path, "", signal, 403, "forbidden", "has the " + role + " role"})
		}
	}
	type route = struct{ method, path string }
	writes := []route{{"POST", "/v1/jobs"}, {"POST", "/v1/jobs/signal"}, {"POST", "/v1/jobs/cancel"}, {"POST", "/v1/jobs/request-cancel"},
		{"POST", "/v1/jobs/suspend"}, {"POST", "/v1/jobs/resume"}, {"POST", "/v1/jobs/activate"}, {"POST", "/v1/query"},
		{"POST", "/v1/jobs/pause"}, {"POST", "/v1/jobs/unpause"}, {"POST", "/v1/jobs/pause-activity"}, {"POST", "/v1/jobs/unpause-activity"},
		{"POST", "/v1/jobs/reset-activity"}, {"POST", "/v1/jobs/update-activity-options"}}
	work := []route{{"POST", "/v1/jobs/claim"}, {"POST", "/v1/jobs/heartbeat"}, {"POST", "/v1/jobs/append"}, {"POST", "/v1/jobs/commit-step"},
		{"POST", "/v1/jobs/wait"}, {"POST", "/v1/jobs/complete"}, {"POST", "/v1/jobs/fail"}, {"POST", "/v1/jobs/requeue"},
		{"POST", "/v1/jobs/continue-as-new"}, {"POST", "/v1/query/poll"}, {"POST", "/v1/query/answer"}}
	admin := []route{{"POST", "/v1/cluster/members"}, {"DELETE", "/v1/cluster/members/n1"}, {"POST", "/v1/cluster/leader/transfer"}, {"POST", "/v1/jobs/reset"},
		{"POST", "/v1/cluster/shards/0/hold"}, {"POST", "/v1/cluster/shards/0/hold/release"}, {"GET", "/v1/cluster/shards/0/copy"}}
	// Terminate is a worker's route, for its own run's children; the
	// worker's other terminations are refused below.
	terminate := route{"POST", "/v1/jobs/terminate"}
	forbidden(readerToken, "reader", append(append(append([]route{terminate}, writes...), work...), admin...)...)
	forbidden(clientToken, "client", append(append([]route{terminate}, work...), admin...)...)
	forbidden(workerToken, "worker", admin...)
	// A worker cannot write what only the engine writes.
	for _, typ := range []engine.EventType{engine.EventSignalReceived, engine.EventCancelRequested, engine.EventTimerFired, engine.EventStepCommitted, engine.EventEffectRecorded, engine.EventWorkflowReset, engine.EventJobCompleted,
		engine.EventWorkflowPaused, engine.EventWorkflowUnpaused, engine.EventActivityPaused, engine.EventActivityReset, engine.EventActivityOptionsUpdated} {
		cases = append(cases, tc{"forged " + string(typ), workerToken, "POST", "/v1/jobs/append", "", appendEv(typ), 400, "invalid_command", string(typ)})
	}
	cases = append(cases,
		tc{"forged commit type", workerToken, "POST", "/v1/jobs/commit-step", "", mustJSON(t, engine.CommitStep{LeaseRef: ref, Step: "s", Type: engine.EventTimerFired}), 400, "invalid_command", "timer_fired"},
		tc{"forged event in a wait", workerToken, "POST", "/v1/jobs/wait", "", mustJSON(t, engine.Wait{LeaseRef: ref, Spec: engine.WaitSpec{Signals: []string{"x"}}, Events: []engine.NewEvent{{Type: engine.EventCancelRequested}}}), 400, "invalid_command", "cancel_requested"},
		// A request id names one command.
		tc{"start of B under A's request id", clientToken, "POST", "/v1/jobs", "", mustJSON(t, engine.CreateJob{Header: engine.Header{RequestID: "rq-wf-queued"}, WorkflowID: "B", Type: "T", Queue: "q-wf-queued"}), 409, "request_conflict", `"rq-wf-queued" was already used by a CreateJob command with another body`},
		tc{"signal to another workflow under a used id", clientToken, "POST", "/v1/jobs/signal", "", mustJSON(t, engine.Signal{Header: engine.Header{RequestID: "rq-signal"}, Target: engine.Target{WorkflowID: "wf-running"}, Name: "go"}), 409, "request_conflict", `"rq-signal"`},
		tc{"cancel under a start's request id", clientToken, "POST", "/v1/jobs/cancel", "", mustJSON(t, engine.Cancel{Header: engine.Header{RequestID: "rq-wf-running"}, Target: engine.Target{WorkflowID: "wf-queued"}}), 409, "request_conflict", "already used by a CreateJob command"},
		// Floats that are not numbers.
		tc{"NaN coefficient (msgpack)", clientToken, "POST", "/v1/jobs", contentMsgpack, msgpackCreateWithCoefficient(t, 0x7ff8000000000001), 400, "invalid_command", "Retry.BackoffCoefficient is NaN"},
		tc{"+Inf coefficient (msgpack)", clientToken, "POST", "/v1/jobs", contentMsgpack, msgpackCreateWithCoefficient(t, 0x7ff0000000000000), 400, "invalid_command", "Retry.BackoffCoefficient is +Inf"},
		tc{"-Inf coefficient (msgpack)", clientToken, "POST", "/v1/jobs", contentMsgpack, msgpackCreateWithCoefficient(t, 0xfff0000000000000), 400, "invalid_command", "Retry.BackoffCoefficient is -Inf"},
		tc{"NaN coefficient (JSON)", clientToken, "POST", "/v1/jobs", "", []byte(`{"type":"T","queue":"q","retry":{"initial_interval_ms":1,"backoff_coefficient":NaN}}`), 400, "invalid_command", "not a valid JSON CreateJob"},
		tc{"overflowing coefficient (JSON)", clientToken, "POST", "/v1/jobs", "", []byte(`{"type":"T","queue":"q","retry":{"initial_interval_ms":1,"backoff_coefficient":1e999}}`), 400, "invalid_command", "backoff_coefficient"},
		// The caller's identity is the server's to say.
		tc{"caller named in the body", clientToken, "POST", "/v1/jobs/signal", "", []byte(`{"workflow_id":"wf-queued","name":"go","by":"mallory"}`), 400, "invalid_command", `unknown field "by"`},
		// The cluster's members are the admin's to change, and a change
		// still has to be well formed.
		tc{"join without an id", adminToken, "POST", "/v1/cluster/members", "", []byte(`{"raft_addr":"10.0.0.1:7281"}`), 400, "invalid_command", "id and raft_addr"},
		tc{"join as a worker", workerToken, "POST", "/v1/cluster/members", "", join, 403, "forbidden", "needs the admin role"},
		tc{"terminate as a client", clientToken, "POST", "/v1/jobs/terminate", "", target, 403, "forbidden", "needs the admin role (a worker's may terminate only its own run's children); token \"carl\" has the client role"},
		// A worker terminates only its own run's children, with its lease.
		tc{"terminate as a worker", workerToken, "POST", "/v1/jobs/terminate", "", target, 403, "forbidden", "needs the admin role; token \"wendy\" has the worker role"},
		tc{"terminate a stranger as its parent", workerToken, "POST", "/v1/jobs/terminate", "", mustJSON(t, engine.Terminate{Target: engine.Target{WorkflowID: "wf-queued"}, ByParent: &ref}), 404, "unknown_job", "is not a child of job"},
		tc{"terminate as a parent without its lease", workerToken, "POST", "/v1/jobs/terminate", "", mustJSON(t, engine.Terminate{Target: engine.Target{WorkflowID: "wf-queued"}, ByParent: &engine.LeaseRef{Job: ref.Job, Attempt: ref.Attempt + 1}}), 409, "stale_attempt", "stale attempt"},
		// The attempt is public; a write needs the lease's token, and a
		// child or activity of a run needs that run's lease.
		tc{"complete with the public attempt", workerToken, "POST", "/v1/jobs/complete", "", mustJSON(t, engine.Complete{LeaseRef: engine.LeaseRef{Job: ref.Job, Attempt: ref.Attempt}}), 409, "stale_attempt", "without the lease token"},
		tc{"complete with a guessed token", workerToken, "POST", "/v1/jobs/complete", "", mustJSON(t, engine.Complete{LeaseRef: engine.LeaseRef{Job: ref.Job, Attempt: ref.Attempt, Token: "00000000000000000000000000000000"}}), 409, "stale_attempt", "without the lease token"},
		tc{"child of a run not held", clientToken, "POST", "/v1/jobs", "", mustJSON(t, engine.CreateJob{Type: "T", Queue: "q", ParentID: ref.Job, ParentStep: "1"}), 400, "invalid_command", "ParentLease is required"},
		tc{"child of a run by its public attempt", clientToken, "POST", "/v1/jobs", "", mustJSON(t, engine.CreateJob{Type: "T", Queue: "q", ParentID: ref.Job, ParentStep: "1", ParentLease: &engine.LeaseRef{Job: ref.Job, Attempt: ref.Attempt}}), 409, "stale_attempt", "without the lease token"},
		tc{"id that is not UTF-8 (JSON)", clientToken, "POST", "/v1/jobs", "", []byte("{\"workflow_id\":\"run-\xff\",\"type\":\"T\",\"queue\":\"q\"}"), 400, "invalid_command", "not valid UTF-8 (at byte 20)"},
		tc{"id that is not UTF-8 (msgpack)", clientToken, "POST", "/v1/jobs", contentMsgpack, mustMsgpack(t, map[string]any{"wf": "run-\xff", "ty": "T", "qu": "q"}), 400, "invalid_command", "WorkflowID is not valid UTF-8"},
		// Reads that would wrap or run away.
		tc{"cursor past the largest id", readerToken, "GET", "/v1/jobs?after=18446744073709551616", "", nil, 400, "invalid_command", "after="},
		tc{"negative wait", readerToken, "GET", "/v1/jobs/1/history?wait=-1s", "", nil, 400, "invalid_command", "wait="},
		tc{"stale=maybe", readerToken, "GET", "/v1/jobs?stale=maybe", "", nil, 400, "invalid_command", "stale="},
		tc{"paused=maybe", readerToken, "GET", "/v1/jobs?paused=maybe", "", nil, 400, "invalid_command", "paused="},
		// The activity commands name their activities one way, and
		// update-options changes something.
		tc{"activity pause naming nothing", clientToken, "POST", "/v1/jobs/pause-activity", "", []byte(`{"workflow_id":"wf-queued"}`), 400, "invalid_command", "exactly one of ActivityID, ActivityType and MatchAll"},
		tc{"activity pause naming two ways", clientToken, "POST", "/v1/jobs/pause-activity", "", []byte(`{"workflow_id":"wf-queued","activity_id":"1","match_all":true}`), 400, "invalid_command", "exactly one of"},
		tc{"update-options changing nothing", clientToken, "POST", "/v1/jobs/update-activity-options", "", []byte(`{"workflow_id":"wf-queued","match_all":true,"options":{}}`), 400, "invalid_command", "changes nothing"},
		tc{"update-options with a backoff below 1", clientToken, "POST", "/v1/jobs/update-activity-options", "", []byte(`{"workflow_id":"wf-queued","match_all":true,"options":{"retry_policy":{"initial_interval_ms":0,"backoff_coefficient":0.5}}}`), 400, "invalid_command", "at least 1"},
		tc{"activity pause of a run with no activity", clientToken, "POST", "/v1/jobs/pause-activity", "", []byte(`{"workflow_id":"wf-queued","match_all":true}`), 404, "unknown_activity", "has no pending activities"},
		tc{"claim with a client token", clientToken, "POST", "/v1/jobs/claim", "", claim, 403, "forbidden", "needs the worker role"},
		tc{"create with a reader token", readerToken, "POST", "/v1/jobs", "", create, 403, "forbidden", "needs the client role"},
	)
	if len(cases) < 60 {
		t.Fatalf("only %d hostile requests", len(cases))
	}
	for i, c := range cases {
		t.Run(fmt.Sprintf("%02d %s", i, c.name), func(t *testing.T) {
			before, changes := keyspaceHash(t, f.e), f.cluster.count()
			h := map[string]string{"Content-Type": c.ctype}
			if c.ctype == "" {
				h["Content-Type"] = contentJSON
			}
			switch {
			case strings.HasPrefix(c.token, "raw:"):
				h["Authorization"] = strings.TrimPrefix(c.token, "raw:")
			case c.token != "":
				h["Authorization"] = "Bearer " + c.token
			}
			r := doRaw(t, c.method, f.url+c.path, c.body, h)
			if r.status != c.status {
				t.Fatalf("status %d, want %d: %s", r.status, c.status, r.body)
			}
			b := errorBodyOf(t, r)
			if b.Name != c.errName || !strings.Contains(b.Message, c.message) {
				t.Fatalf("error %q %q, want %q containing %q", b.Name, b.Message, c.errName, c.message)
			}
			if c.status == http.StatusUnauthorized && r.header.Get("WWW-Authenticate") == "" {
				t.Error("a 401 without WWW-Authenticate")
			}
			if keyspaceHash(t, f.e) != before || f.cluster.count() != changes {
				t.Fatal("a refused request changed the store or the cluster")
			}
		})
	}
	t.Logf("%d hostile requests refused", len(cases))

	// The same routes with the roles that may call them do get through:
	// the table refuses for the reasons it gives, not for any reason.
	before := keyspaceHash(t, f.e)
	ok := []struct{ token, method, path string }{
		{readerToken, "GET", "/v1/jobs"}, {readerToken, "GET", "/v1/cluster"}, {clientToken, "POST", "/v1/jobs/signal"},
		{workerToken, "POST", "/v1/jobs/signal"}, {adminToken, "POST", "/v1/cluster/leader/transfer"},
	}
	for _, o := range ok {
		body := signal
		if o.method == "GET" {
			body = nil
		}
		if r := doRaw(t, o.method, f.url+o.path, body, map[string]string{"Authorization": "Bearer " + o.token, "Content-Type": contentJSON}); r.status != http.StatusOK {
			t.Errorf("%s %s with its role: %d %s", o.method, o.path, r.status, r.body)
		}
	}
	if keyspaceHash(t, f.e) == before || f.cluster.count() != 1 {
		t.Fatal("the allowed requests wrote nothing")
	}
}

// A job stored before floats were checked, with a retry coefficient JSON
// cannot hold, still reads as JSON (the coefficient is null), alone and in
// a list: one bad record no longer turns every read that includes it into
// a 500.
func TestStoredNonFiniteFloatStillReads(t *testing.T) {
	e := openEngine(t, engine.Limits{})
	_, hs := serve(t, ServerConfig{Service: e})
	ctx := context.Background()
	r, err := e.Create(ctx, engine.CreateJob{Type: "T", Queue: "q", Retry: &engine.RetryPolicy{InitialIntervalMS: 1, BackoffCoefficient: 2}})
	if err != nil {
		t.Fatal(err)
	}
	j, err := e.Describe(ctx, engine.Target{Job: r.Job})
	if err != nil {
		t.Fatal(err)
	}
	j.Retry.BackoffCoefficient = math.NaN()
	b := e.DB().NewBatch()
	tx := b.Begin()
	tx.Set(storage.JobKey(uint64(j.ID)), machine.EncodeJob(j))
	if err := b.Add(tx); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{fmt.Sprintf("/v1/jobs/%d", j.ID), "/v1/jobs"} {
		resp := doRaw(t, "GET", hs.URL+path, nil, nil)
		if resp.status != http.StatusOK || !strings.Contains(string(resp.body), `"backoff_coefficient":null`) {
			t.Fatalf("GET %s: %d %s", path, resp.status, resp.body)
		}
	}
}
