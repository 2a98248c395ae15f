package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/httpapi"
)

// TestCutClaimEndsALongPoll: POST /v1/jobs/claim?cut=1 with a claim's
// request id ends that node's long poll under the id, which answers empty
// over its own connection (docs/sharding.md, "Claims"); a cut that comes
// before its poll ends that poll once it arrives; a cut without a request
// id is refused. POST /v1/tasks/claim?cut=1 does the same for task claims.
func TestCutClaimEndsALongPoll(t *testing.T) {
	const shards = 4
	c := newShardedCluster(t, 3, shards)
	c.awaitLeaders(c.desired)
	hc := &http.Client{Timeout: 30 * time.Second} // a poll the cut missed waits a minute: fail first
	for _, route := range []struct{ path, items string }{{"/v1/jobs/claim", "jobs"}, {"/v1/tasks/claim", "tasks"}} {
		t.Run(route.items, func(t *testing.T) {
			// post answers the status and how many items the answer holds.
			post := func(query, body string) (int, int) {
				t.Helper()
				resp, err := hc.Post("http://"+c.httpOf("n2")+route.path+query, "application/json", strings.NewReader(body))
				if err != nil {
					t.Error(err)
					return 0, 0
				}
				defer func() { _ = resp.Body.Close() }()
				var r map[string][]json.RawMessage
				if resp.StatusCode == http.StatusOK {
					if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
						t.Error(err)
					}
				}
				return resp.StatusCode, len(r[route.items])
			}
			claim := func(id string) string {
				return fmt.Sprintf(`{"queue":"cut","owner":"w","max":1,"lease_ms":60000,"request_id":%q}`, id)
			}
			type answer struct{ code, items int }
			polled := make(chan answer, 1)
			go func() {
				code, n := post("?wait=60s", claim(route.items+"-poll-1"))
				polled <- answer{code, n}
			}()
			// Cut until the poll has answered: a cut before the poll
			// reached the node is kept for it, one after ends its wait.
			for answered := false; !answered; {
				if code, n := post("?cut=1", claim(route.items+"-poll-1")); code != http.StatusOK || n != 0 {
					t.Fatalf("cut: %d, %d %s; want 200 and nothing claimed", code, n, route.items)
				}
				select {
				case a := <-polled:
					if a.code != http.StatusOK || a.items != 0 {
						t.Fatalf("the cut poll answered %d, %d %s; want 200, empty", a.code, a.items, route.items)
					}
					answered = true
				case <-time.After(100 * time.Millisecond):
				}
			}
			// A cut first: the poll under its id ends at once.
			if code, _ := post("?cut=1", claim(route.items+"-poll-2")); code != http.StatusOK {
				t.Fatalf("cut: %d", code)
			}
			if code, n := post("?wait=60s", claim(route.items+"-poll-2")); code != http.StatusOK || n != 0 {
				t.Fatalf("a poll after its cut answered %d, %d %s; want 200, empty", code, n, route.items)
			}
			if code, _ := post("?cut=1", `{"queue":"cut","owner":"w","max":1,"lease_ms":60000}`); code != http.StatusBadRequest && code != http.StatusUnprocessableEntity {
				t.Fatalf("cut without a request id: %d, want it refused", code)
			}
		})
	}
}

// dialCountingClient returns a Client of the three nodes n1, n2 and n3
// that long-polls for a minute, and the count of the connections it
// opened. It keeps up to idlePerNode connections a node idle for reuse.
func (c *shardedCluster) dialCountingClient(idlePerNode int) (*httpapi.Client, *atomic.Int64) {
	c.t.Helper()
	dials := new(atomic.Int64)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = idlePerNode
	var d net.Dialer
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return d.DialContext(ctx, network, addr)
	}
	cl, err := httpapi.NewClient(httpapi.ClientConfig{Addrs: []string{c.httpOf("n1"), c.httpOf("n2"), c.httpOf("n3")},
		HTTPClient: &http.Client{Transport: tr}, PollWait: time.Minute})
	if err != nil {
		c.t.Fatal(err)
	}
	return cl, dials
}

// TestClaimFanOutKeepsConnections: a client's long polls of a sharded
// cluster, cut after another node answered, leave their connections open
// for the next claims: claim after claim opens no new connections, where
// cancelling the cut polls closed two a claim. Every claim gets its job.
func TestClaimFanOutKeepsConnections(t *testing.T) {
	const shards, claims = 4, 15
	c := newShardedCluster(t, 3, shards)
	c.awaitLeaders(c.desired)
	ctx := context.Background()
	cl, dials := c.dialCountingClient(2)
	creator := c.client("n2")
	seen := map[engine.JobID]bool{}
	for i := range claims {
		// Shard 1 is led by n2: the polls of n1 and n3 are cut.
		if _, err := creator.Create(ctx, engine.CreateJob{WorkflowID: wfOn(fmt.Sprintf("keep-%d-", i), 1, shards), Type: "t", Queue: "keep"}); err != nil {
			t.Fatal(err)
		}
		pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		jobs, err := cl.ClaimWait(pctx, engine.Claim{Queue: "keep", Owner: "w", Max: 1, LeaseMS: 60_000})
		cancel()
		if err != nil || len(jobs) != 1 || seen[jobs[0].Job] {
			t.Fatalf("claim %d: %+v, %v; want one new job", i, jobs, err)
		}
		seen[jobs[0].Job] = true
	}
	// Three nodes, a connection or two each; the polls still ending when
	// the next claim starts may add one.
	if n := dials.Load(); n > 2*3+3 {
		t.Fatalf("%d connections opened for %d claims of 3 nodes; want the cut polls' connections reused", n, claims)
	}
	if left, err := cl.Claim(ctx, engine.Claim{Queue: "keep", Owner: "w", Max: 10, LeaseMS: 60_000}); err != nil || len(left) != 0 {
		t.Fatalf("after the claims: %+v, %v; want nothing left", left, err)
	}
}

// TestCutRefusesAnOverlongRequestID: a cut (of a job or a task claim)
// whose request id is longer than any claim's is refused with 413 naming
// the field, not kept: a node keeps up to 4,096 early cuts, and ids of
// megabytes each would hold gigabytes.
func TestCutRefusesAnOverlongRequestID(t *testing.T) {
	c := newShardedCluster(t, 1, 2)
	c.awaitLeaders(c.desired)
	long := strings.Repeat("x", 4097)
	for _, path := range []string{"/v1/jobs/claim", "/v1/tasks/claim"} {
		body := fmt.Sprintf(`{"queue":"cut","owner":"w","max":1,"lease_ms":60000,"request_id":%q}`, long)
		resp, err := http.Post("http://"+c.httpOf("n1")+path+"?cut=1", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		var eb httpapi.ErrorBody
		err = json.NewDecoder(resp.Body).Decode(&eb)
		_ = resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(eb.Message, ".RequestID is 4097 bytes") {
			t.Errorf("%s?cut=1 with a request id of 4097 bytes: %d %+v; want 413 naming RequestID", path, resp.StatusCode, eb)
		}
	}
}

// TestClaimRefusesAnUnknownCutOrRecall: a claim's cut and recall
// parameters are 1 (or 0, or absent); another value, both at once, or a
// recall of task claims (not served) is refused naming the parameter. It
// was read as a plain claim, which took the job a caller meaning a cut or
// a recall (which claim nothing) did not know it held.
func TestClaimRefusesAnUnknownCutOrRecall(t *testing.T) {
	c := newShardedCluster(t, 1, 2)
	c.awaitLeaders(c.desired)
	base := "http://" + c.httpOf("n1")
	post := func(path, body string) (int, string) {
		t.Helper()
		resp, err := http.Post(base+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		var b strings.Builder
		if _, err := io.Copy(&b, resp.Body); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, b.String()
	}
	for k := range 2 { // a job on each shard
		if code, body := post("/v1/jobs", fmt.Sprintf(`{"workflow_id":"cut-%d","type":"t","queue":"cutq"}`, k)); code != http.StatusOK {
			t.Fatalf("create: %d %s", code, body)
		}
	}
	claim := `{"queue":"cutq","owner":"w","max":10,"lease_ms":60000,"request_id":"r1"}`
	for _, tc := range []struct{ path, want string }{
		{"/v1/jobs/claim?cut=true", `cut=\"true\"`},
		{"/v1/jobs/claim?recall=yes", `recall=\"yes\"`},
		{"/v1/jobs/claim?cut=1&recall=1", "not both"},
		{"/v1/tasks/claim?recall=1", "job claims"},
		{"/v1/tasks/claim?cut=2", `cut=\"2\"`},
	} {
		code, body := post(tc.path, claim)
		if code != http.StatusBadRequest || !strings.Contains(body, tc.want) {
			t.Errorf("POST %s: %d %s; want 400 naming %s", tc.path, code, body, tc.want)
		}
	}
	// Nothing was claimed: a plain claim takes both jobs.
	code, body := post("/v1/jobs/claim", `{"queue":"cutq","owner":"w","max":10,"lease_ms":60000,"request_id":"r2"}`)
	var r engine.ClaimResult
	if err := json.Unmarshal([]byte(body), &r); code != http.StatusOK || err != nil || len(r.Jobs) != 2 {
		t.Fatalf("claim after the refused ones: %d %s (%v); want both jobs", code, body, err)
	}
}
