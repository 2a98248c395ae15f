package httpapi

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/heddlewf/heddle/engine"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/json and testdata/msgpack from the values in golden_test.go")

// goldenBody is one body the API sends, as a value with every field set
// (the values show each key; they are not one consistent state).
type goldenBody struct {
	name  string
	value any
	fresh func() any // an empty value of the same type, to decode into
}

func goldenBodies() []goldenBody {
	job := &engine.Job{
		ID: 42, WorkflowID: "order-7", Type: "Order", Queue: "orders", Status: engine.StatusWaiting, Attempt: 2,
		LeaseOwner: "worker-1", LeaseExpiryMS: 1767225660000, LastSeq: 9, ReadyAtMS: 1767225600000,
		ReleaseAtMS: 1767225605000,
		Wait: &engine.WaitSpec{TimerID: "t1", TimerAtMS: 1767229200000, Signals: []string{"approve"},
			Steps: []string{"a3"}, Park: true, Timers: []engine.Timer{{ID: "t2", FireMS: 1767232800000}}, AnySignal: true},
		Timers: []engine.Timer{{ID: "t1", FireMS: 1767229200000}}, Retries: 1, StartDigest: 7046029254386353131,
		ParentID: 40, ParentStep: "c1", DeadlineMS: 1767312000000,
		Retry:      &engine.RetryPolicy{InitialIntervalMS: 1000, BackoffCoefficient: 2, MaximumIntervalMS: 60000, MaximumAttempts: 5},
		RunAttempt: 2, CancelRequested: true, CreatedMS: 1767225600000, UpdatedMS: 1767225630000, ClosedMS: 1767225690000,
	}
	history := &engine.HistoryPage{Events: []engine.Event{
		{Seq: 1, Type: engine.EventJobCreated, AtMS: 1767225600000, Payload: []byte(`["world"]`)},
		{Seq: 2, Type: engine.EventJobLeased, AtMS: 1767225601000, Attempt: 1, Name: "worker-1", LeaseExpiryMS: 1767225631000},
		{Seq: 3, Type: "activity_completed", AtMS: 1767225602000, Attempt: 1, Step: "a1", Name: "Charge", Payload: []byte{0x00, 0xff}, Commit: true},
		{Seq: 4, Type: engine.EventJobWaiting, AtMS: 1767225603000, Attempt: 1,
			Wait: &engine.WaitSpec{Signals: []string{"approve"}, Timers: []engine.Timer{{ID: "t1", FireMS: 1767229200000}}}},
		{Seq: 5, Type: engine.EventJobRequeued, AtMS: 1767225604000, Reason: engine.ReasonRetry, DelayMS: 5000},
	}, Next: 5}
	list := &engine.ListPage{Jobs: []*engine.Job{
		{ID: 1, WorkflowID: "order-1", Type: "Order", Queue: "orders", Status: engine.StatusCompleted, Attempt: 1,
			LastSeq: 6, CreatedMS: 1767225600000, UpdatedMS: 1767225610000, ClosedMS: 1767225610000},
		{ID: 2, WorkflowID: "order-2", Type: "Order", Queue: "orders", Status: engine.StatusQueued,
			LastSeq: 1, ReadyAtMS: 1767225600500, CreatedMS: 1767225600500, UpdatedMS: 1767225600500},
	}, Next: 2}
	_, stale := errorFor(&engine.StaleAttemptError{Job: 42, Attempt: 1, Current: 2, Status: engine.StatusRunning, Command: "Complete"})
	_, notLeader := errorFor(&engine.NotLeaderError{LeaderID: "n2", LeaderHTTP: "10.0.0.2:8080"})
	cluster := &ClusterStatus{ID: "n1", State: "Follower", Term: 3, LeaderID: "n2", LeaderHTTP: "10.0.0.2:8080",
		CommitIndex: 120, AppliedIndex: 118, LastIndex: 121, Members: []engine.ClusterMember{
			{ID: "n1", RaftAddr: "10.0.0.1:7000", HTTPAddr: "10.0.0.1:8080", Voter: true},
			{ID: "n2", RaftAddr: "10.0.0.2:7000", HTTPAddr: "10.0.0.2:8080", Voter: true, Leader: true},
		}}
	return []goldenBody{
		{"job", job, func() any { return new(engine.Job) }},
		{"history_page", history, func() any { return new(engine.HistoryPage) }},
		{"list_page", list, func() any { return new(engine.ListPage) }},
		{"list_page_empty", &engine.ListPage{}, func() any { return new(engine.ListPage) }},
		{"create_result", &engine.CreateResult{Job: 42, WorkflowID: "order-7", Existing: true}, func() any { return new(engine.CreateResult) }},
		{"claim_result_empty", &engine.ClaimResult{}, func() any { return new(engine.ClaimResult) }},
		{"status_result", &engine.StatusResult{Job: 42, Status: engine.StatusCancelled, Seq: 10}, func() any { return new(engine.StatusResult) }},
		{"error_stale_attempt", &stale, func() any { return new(ErrorBody) }},
		{"error_not_leader", &notLeader, func() any { return new(ErrorBody) }},
		{"cluster_status", cluster, func() any { return new(ClusterStatus) }},
	}
}

// checkGolden compares got with the file at path, or rewrites the file
// under -update.
func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *updateGolden {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./engine/httpapi -run Golden -update to write it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s changed:\n got: %s\nwant: %s", path, got, want)
	}
}

// The JSON bodies, key for key: snake_case keys, statuses and reuse
// policies by name, byte payloads in base64, lists as [] when empty. Each
// golden also decodes back, through the strict request decoder, into the
// value it came from: what the API writes, it reads.
func TestJSONGolden(t *testing.T) {
	for _, g := range goldenBodies() {
		t.Run(g.name, func(t *testing.T) {
			b, err := encodeBody(formatJSON, g.value)
			if err != nil {
				t.Fatal(err)
			}
			var pretty bytes.Buffer
			if err := json.Indent(&pretty, b, "", "  "); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, filepath.Join("testdata", "json", g.name+".json"), pretty.Bytes())
			back := g.fresh()
			if err := decodeBody(formatJSON, pretty.Bytes(), back); err != nil {
				t.Fatalf("the golden does not decode: %v", err)
			}
			if !reflect.DeepEqual(normalizeEmpty(back), normalizeEmpty(g.value)) {
				t.Fatalf("decoded %+v, want %+v", back, g.value)
			}
		})
	}
}

// normalizeEmpty maps the [] a page or claim writes for "none" back to the
// nil slice the value held, and drops what JSON leaves out (a job's start
// digest), for the comparison.
func normalizeEmpty(v any) any {
	switch p := v.(type) {
	case *engine.Job:
		j := *p
		j.StartDigest = 0
		return &j
	case *engine.ListPage:
		if len(p.Jobs) == 0 {
			return &engine.ListPage{Next: p.Next}
		}
	case *engine.HistoryPage:
		if len(p.Events) == 0 {
			return &engine.HistoryPage{Next: p.Next}
		}
	case *engine.ClaimResult:
		if len(p.Jobs) == 0 {
			return &engine.ClaimResult{}
		}
	}
	return v
}

// The msgpack bodies, byte for byte: the SDK's wire, which the JSON
// convention must leave exactly as it was.
func TestMsgpackGolden(t *testing.T) {
	for _, g := range goldenBodies() {
		t.Run(g.name, func(t *testing.T) {
			b, err := encodeBody(formatMsgpack, g.value)
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, filepath.Join("testdata", "msgpack", g.name+".hex"), []byte(hex.EncodeToString(b)+"\n"))
			back := g.fresh()
			if err := msgpack.Unmarshal(b, back); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back, g.value) {
				t.Fatalf("decoded %+v, want %+v", back, g.value)
			}
		})
	}
}

// GET /v1/jobs?after= the largest id answers an empty last page, not the
// first page again (after+1 used to wrap around to 0); so does a history
// after the largest seq.
func TestCursorAtTheTopOfTheRange(t *testing.T) {
	e := openEngine(t, engine.Limits{})
	_, hs := serve(t, ServerConfig{Service: e})
	for range 3 {
		if _, err := e.Create(t.Context(), engine.CreateJob{Type: "T", Queue: "q"}); err != nil {
			t.Fatal(err)
		}
	}
	for path, want := range map[string]string{
		"/v1/jobs?after=18446744073709551615":           `{"jobs":[],"next":0,"order":"start_asc"}` + "\n",
		"/v1/jobs?after=18446744073709551615&status=1":  `{"jobs":[],"next":0,"order":"start_asc"}` + "\n",
		"/v1/jobs/1/history?after=18446744073709551615": `{"events":[],"next":0}` + "\n",
	} {
		r := doRaw(t, "GET", hs.URL+path, nil, nil)
		if r.status != http.StatusOK || string(r.body) != want {
			t.Errorf("GET %s: %d %s, want 200 %s", path, r.status, r.body, want)
		}
	}
	r := doRaw(t, "GET", hs.URL+"/v1/jobs?after=18446744073709551616", nil, nil)
	if r.status != http.StatusBadRequest {
		t.Errorf("after= one past the largest id: %d %s, want 400", r.status, r.body)
	}
}
