package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/heddlewf/heddle/engine"

	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/vmihailenco/msgpack/v5"
)

const testToken = "s3cret"

// badFixture is a store holding one job in each state the bad requests
// need, behind a server with small limits and a token.
type badFixture struct {
	e       *embedded.Engine
	url     string
	queued  engine.JobID    // Queued, workflow id "wf-queued"
	running engine.JobID    // Running at attempt 1, step "s1" committed
	runRef  engine.LeaseRef // its lease, token included
	closed  engine.JobID    // Completed
}

func newBadFixture(t *testing.T) *badFixture {
	e := openEngine(t, engine.Limits{MaxPayloadBytes: 1024})
	_, hs := serve(t, ServerConfig{Service: e, MaxBodyBytes: 4096, AuthToken: testToken})
	ctx := context.Background()
	f := &badFixture{e: e, url: hs.URL}
	create := func(wf, queue string) engine.JobID {
		r, err := e.Create(ctx, engine.CreateJob{WorkflowID: wf, Type: "T", Queue: queue})
		if err != nil {
			t.Fatal(err)
		}
		return r.Job
	}
	claim := func(queue string) engine.ClaimedJob {
		jobs, err := e.Claim(ctx, engine.Claim{Queue: queue, Owner: "w", Max: 1, LeaseMS: 3600_000})
		if err != nil || len(jobs) != 1 {
			t.Fatalf("claim: %v %v", jobs, err)
		}
		return jobs[0]
	}
	f.queued = create("wf-queued", "q-queued")
	f.running = create("wf-running", "q-running")
	run := claim("q-running")
	f.runRef = run.Lease()
	if _, err := e.CommitStep(ctx, engine.CommitStep{LeaseRef: run.Lease(),
		Step: "s1", Type: "activity_completed"}); err != nil {
		t.Fatal(err)
	}
	f.closed = create("wf-closed", "q-closed")
	done := claim("q-closed")
	if _, err := e.Complete(ctx, engine.Complete{LeaseRef: done.Lease()}); err != nil {
		t.Fatal(err)
	}
	return f
}

func mustMsgpack(t *testing.T, v any) []byte {
	b, err := msgpack.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Every malformed or refused request is answered with the right status, an
// error body whose name and message say what was wrong, and no write.
func TestMalformedRequestsAreRefusedWithoutWrites(t *testing.T) {
	f := newBadFixture(t)
	ref := func(id engine.JobID, attempt uint64) engine.LeaseRef {
		return engine.LeaseRef{Job: id, Attempt: attempt}
	}
	bigInput := bytes.Repeat([]byte{'x'}, 2000)
	deep := append(bytes.Repeat([]byte{0x91}, 1000), 0xc0)
	cases := []struct {
		name        string
		method      string
		path        string
		contentType string // "" means JSON, "-" none
		auth        string // "" means the right token; "-" means none
		body        []byte
		status      int
		errName     string
		message     string // a substring the message must contain
	}{
		{"bad JSON", "POST", "/v1/jobs", "", "", []byte(`{"type": "T", `), 400, "invalid_command", "not a valid JSON CreateJob"},
		{"misspelt JSON field", "POST", "/v1/jobs", "", "", []byte(`{"typ": "T", "queue": "q"}`), 400, "invalid_command", `unknown field "typ"`},
		{"Go field name as JSON key", "POST", "/v1/jobs", "", "", []byte(`{"WorkflowID": "w", "type": "T", "queue": "q"}`), 400, "invalid_command", `unknown field "WorkflowID"`},
		{"unknown reuse policy", "POST", "/v1/jobs", "", "", []byte(`{"type": "T", "queue": "q", "reuse_policy": "sometimes"}`), 400, "invalid_command", `unknown workflow-id reuse policy "sometimes"`},
		{"two JSON values", "POST", "/v1/jobs", "", "", []byte(`{"type":"T","queue":"q"} {}`), 400, "invalid_command", "more than one JSON CreateJob"},
		{"wrong JSON type", "POST", "/v1/jobs/claim", "", "", []byte(`{"queue": "q", "max": "many"}`), 400, "invalid_command", "Claim.max"},
		{"bad msgpack", "POST", "/v1/jobs", contentMsgpack, "", []byte{0xc1}, 400, "invalid_command", "not a valid msgpack CreateJob"},
		{"truncated msgpack", "POST", "/v1/jobs", contentMsgpack, "", mustMsgpack(t, engine.CreateJob{Type: "T", Queue: "q"})[:12], 400, "invalid_command", "not a valid msgpack CreateJob"},
		{"msgpack length bomb", "POST", "/v1/jobs/append", contentMsgpack, "", []byte{0x81, 0xa2, 'e', 'v', 0xdd, 0xff, 0xff, 0xff, 0xff}, 400, "invalid_command", "4294967295 more values are declared"},
		{"msgpack nesting", "POST", "/v1/jobs", contentMsgpack, "", deep, 400, "invalid_command", "nested deeper"},
		{"msgpack wrong type", "POST", "/v1/jobs", contentMsgpack, "", mustMsgpack(t, map[string]any{"ty": 7}), 400, "invalid_command", "not a valid msgpack CreateJob"},
		{"unknown content type", "POST", "/v1/jobs", "text/plain", "", []byte("Type=T"), 415, "unsupported_media_type", `Content-Type "text/plain" is neither application/json nor application/msgpack`},
		// A browser sends a form, or a fetch of text or of a Blob without
		// a type, to another site without asking it first (no CORS
		// preflight): such a body must not be read as JSON.
		{"JSON without a content type", "POST", "/v1/jobs", "-", "", mustJSON(t, engine.CreateJob{Type: "T", Queue: "q"}), 415, "unsupported_media_type", "the request body has no Content-Type"},
		{"JSON as text", "POST", "/v1/jobs", "text/plain;charset=UTF-8", "", mustJSON(t, engine.CreateJob{Type: "T", Queue: "q"}), 415, "unsupported_media_type", `Content-Type "text/plain;charset=UTF-8"`},
		{"JSON as a form", "POST", "/v1/jobs/terminate", "application/x-www-form-urlencoded", "", mustJSON(t, engine.Terminate{Target: engine.Target{Job: f.queued}}), 415, "unsupported_media_type", "application/x-www-form-urlencoded"},
		{"multipart", "POST", "/v1/resources", "multipart/form-data; boundary=x", "", []byte("--x--"), 415, "unsupported_media_type", "multipart/form-data"},
		{"empty body without a content type", "POST", "/v1/jobs/signal", "-", "", nil, 400, "invalid_command", "body is empty; want a Signal"},
		{"empty body", "POST", "/v1/jobs/signal", "", "", nil, 400, "invalid_command", "body is empty; want a Signal"},
		{"missing type", "POST", "/v1/jobs", "", "", []byte(`{"queue": "q"}`), 400, "invalid_command", "CreateJob.Type is required"},
		{"missing queue (msgpack)", "POST", "/v1/jobs/claim", contentMsgpack, "", mustMsgpack(t, engine.Claim{Owner: "w", Max: 1, LeaseMS: 1000}), 400, "invalid_command", "Claim.Queue is required"},
		{"missing target", "POST", "/v1/jobs/cancel", "", "", []byte(`{"reason": "x"}`), 400, "invalid_command", "Target"},
		{"bad wait", "POST", "/v1/jobs/claim?wait=soon", "", "", mustJSON(t, engine.Claim{Queue: "q", Owner: "w", Max: 1, LeaseMS: 1000}), 400, "invalid_command", `wait="soon"`},
		{"bad job id", "GET", "/v1/jobs/abc", "", "", nil, 400, "invalid_command", `job id "abc"`},
		{"bad limit", "GET", "/v1/jobs?limit=lots", "", "", nil, 400, "invalid_command", `limit="lots"`},
		{"limit out of range", "GET", "/v1/jobs?limit=5000", "", "", nil, 400, "invalid_command", "list limit 5000"},
		{"bad status", "GET", "/v1/jobs?status=Sleeping", "", "", nil, 400, "invalid_command", `"Sleeping" is not a status: want one of Running, Completed`},
		{"bad status number", "GET", "/v1/jobs?status=99", "", "", nil, 400, "invalid_command", `status 99 is not a known status number`},
		{"two statuses", "GET", "/v1/jobs?status=Running&execution_status=Failed", "", "", nil, 400, "invalid_command", `name the status once`},
		{"bad query", "GET", "/v1/jobs?query=WorkflowTyp%3D%22X%22", "", "", nil, 400, "invalid_command", `column 1, at "WorkflowTyp": unknown field "WorkflowTyp"`},
		{"bad order", "GET", "/v1/jobs?order=newest", "", "", nil, 400, "invalid_command", `unknown list order "newest"`},
		{"bad page token", "GET", "/v1/jobs?page_token=abc", "", "", nil, 400, "invalid_command", `the page token is not one List gave`},
		{"bad count query", "GET", "/v1/jobs/count?query=(", "", "", nil, 400, "invalid_command", `column 2, at the end: expected a comparison`},
		{"bad after", "GET", "/v1/jobs/1/history?after=-1", "", "", nil, 400, "invalid_command", `after="-1"`},
		{"unknown job (signal)", "POST", "/v1/jobs/signal", "", "", mustJSON(t, engine.Signal{Target: engine.Target{Job: 999}, Name: "go"}), 404, "unknown_job", "999"},
		{"unknown job (describe)", "GET", "/v1/jobs/999", "", "", nil, 404, "unknown_job", "999"},
		{"unknown workflow", "GET", "/v1/workflows/nope%2Fnothing", "", "", nil, 404, "unknown_job", `"nope/nothing"`},
		{"unknown job (history)", "GET", "/v1/jobs/999/history", "", "", nil, 404, "unknown_job", "999"},
		{"illegal transition", "POST", "/v1/jobs/resume", "", "", mustJSON(t, engine.Resume{Target: engine.Target{Job: f.queued}}), 409, "illegal_transition", "in status Queued"},
		{"stale attempt", "POST", "/v1/jobs/complete", "", "", mustJSON(t, engine.Complete{LeaseRef: ref(f.running, 7)}), 409, "stale_attempt", "by attempt 7"},
		{"job closed", "POST", "/v1/jobs/signal", "", "", mustJSON(t, engine.Signal{Target: engine.Target{Job: f.closed}, Name: "go"}), 409, "job_closed", "Completed"},
		{"workflow exists", "POST", "/v1/jobs", "", "", mustJSON(t, engine.CreateJob{WorkflowID: "wf-queued", Type: "T", Queue: "q", ReusePolicy: engine.IDReuseRejectDuplicate}), 409, "workflow_exists", "wf-queued"},
		{"step committed", "POST", "/v1/jobs/commit-step", "", "", mustJSON(t, engine.CommitStep{LeaseRef: f.runRef, Step: "s1", Type: "activity_completed"}), 409, "step_committed", "s1"},
		{"no lease token", "POST", "/v1/jobs/commit-step", "", "", mustJSON(t, engine.CommitStep{LeaseRef: ref(f.running, 1), Step: "s2", Type: "activity_completed"}), 409, "stale_attempt", "without the lease token"},
		{"payload over the engine limit", "POST", "/v1/jobs", "", "", mustJSON(t, engine.CreateJob{Type: "T", Queue: "q", Input: bigInput}), 413, "payload_too_large", "CreateJob.Input is 2000, over the limit of 1024"},
		{"body over MaxBodyBytes", "POST", "/v1/jobs", "", "", mustJSON(t, engine.CreateJob{Type: "T", Queue: "q", Input: bytes.Repeat([]byte{'x'}, 5000)}), 413, "payload_too_large", "over the limit of 4096 bytes (ServerConfig.MaxBodyBytes)"},
		{"unknown route", "GET", "/v1/nothing", "", "", nil, 404, "no_route", "GET /v1/nothing"},
		{"wrong method", "POST", "/v1/jobs/42", "", "", []byte(`{}`), 404, "no_route", "POST /v1/jobs/42"},
		{"no cluster", "GET", "/v1/cluster", "", "", nil, 501, "no_cluster", "ServerConfig.Cluster is nil"},
		{"no token", "POST", "/v1/jobs", "", "-", mustJSON(t, engine.CreateJob{Type: "T", Queue: "q"}), 401, "unauthorized", "Bearer"},
		{"wrong token", "GET", "/v1/jobs", "", "Bearer guess", nil, 401, "unauthorized", "Bearer"},
		{"token without Bearer", "GET", "/v1/jobs", "", testToken, nil, 401, "unauthorized", "Bearer"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := keyspaceHash(t, f.e)
			h := map[string]string{"Content-Type": tc.contentType, "Authorization": "Bearer " + testToken}
			switch tc.contentType {
			case "":
				h["Content-Type"] = contentJSON
			case "-":
				h["Content-Type"] = ""
			}
			switch tc.auth {
			case "-":
				h["Authorization"] = ""
			case "":
			default:
				h["Authorization"] = tc.auth
			}
			r := doRaw(t, tc.method, f.url+tc.path, tc.body, h)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			b := errorBodyOf(t, r)
			if b.Name != tc.errName || !strings.Contains(b.Message, tc.message) {
				t.Fatalf("error %q %q, want %q containing %q", b.Name, b.Message, tc.errName, tc.message)
			}
			if after := keyspaceHash(t, f.e); after != before {
				t.Fatal("a refused request changed the store")
			}
		})
	}
	// The hash does see writes: an accepted request changes it.
	before := keyspaceHash(t, f.e)
	r := doRaw(t, "POST", f.url+"/v1/jobs", []byte(`{"Type": "T", "Queue": "q"}`), map[string]string{"Authorization": "Bearer " + testToken, "Content-Type": contentJSON})
	if r.status != http.StatusOK || keyspaceHash(t, f.e) == before {
		t.Fatalf("a valid create answered %d %s and left the hash as it was", r.status, r.body)
	}
}

// The error body has the documented JSON keys, and comes as msgpack when
// the request asks for it.
func TestErrorBodyFormats(t *testing.T) {
	f := newBadFixture(t)
	auth := "Bearer " + testToken
	body := mustJSON(t, engine.Complete{LeaseRef: engine.LeaseRef{Job: f.running, Attempt: 9}})
	r := doRaw(t, "POST", f.url+"/v1/jobs/complete", body, map[string]string{"Authorization": auth, "Content-Type": contentJSON})
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatal(err)
	}
	if m["code"] != engine.StaleAttemptCode || m["error"] != "stale_attempt" || !strings.Contains(m["message"].(string), "stale attempt") {
		t.Fatalf("JSON error body %v", m)
	}
	r = doRaw(t, "POST", f.url+"/v1/jobs/complete", body, map[string]string{"Authorization": auth, "Accept": contentMsgpack, "Content-Type": contentJSON})
	if ct := r.header.Get("Content-Type"); ct != contentMsgpack {
		t.Fatalf("Content-Type %q, want msgpack", ct)
	}
	var eb ErrorBody
	if err := msgpack.Unmarshal(r.body, &eb); err != nil || eb.Name != "stale_attempt" {
		t.Fatalf("msgpack error body %+v, %v", eb, err)
	}
	// A msgpack request without Accept is answered in msgpack too.
	r = doRaw(t, "POST", f.url+"/v1/jobs/complete", mustMsgpack(t, engine.Complete{LeaseRef: engine.LeaseRef{Job: f.running, Attempt: 9}}),
		map[string]string{"Authorization": auth, "Content-Type": contentMsgpack})
	if ct := r.header.Get("Content-Type"); ct != contentMsgpack || r.status != http.StatusConflict {
		t.Fatalf("%d %q, want 409 in msgpack", r.status, ct)
	}
}
