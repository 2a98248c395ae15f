package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
)

// fakeQuerier answers "sum" with the sum of its arguments, and records
// what it was asked. Queries travel as bytes: the arguments and the answer
// are JSON lists, as the SDK's converter writes them.
type fakeQuerier struct {
	mu    sync.Mutex
	asked []string
}

func (q *fakeQuerier) answer(_ context.Context, workflowID, runID, queryType string, args []byte) ([]byte, error) {
	q.mu.Lock()
	q.asked = append(q.asked, fmt.Sprintf("%s/%s/%s", workflowID, runID, queryType))
	q.mu.Unlock()
	switch queryType {
	case "sum":
		var ab []int
		if err := json.Unmarshal(args, &ab); err != nil || len(ab) != 2 {
			return nil, fmt.Errorf("sum of %q: %v", args, err)
		}
		return json.Marshal([]int{ab[0] + ab[1]})
	case "broken":
		return nil, errors.New("the handler fell over")
	}
	return nil, fmt.Errorf("%w: %q", engine.ErrUnknownQuery, queryType)
}

// Queries go from a client through the server's broker to the worker
// process serving the run's queue, and back, errors included.
func TestQueriesAreBrokeredToWorkers(t *testing.T) {
	e := openEngine(t, engine.Limits{})
	_, hs := serve(t, ServerConfig{Service: e})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	created, err := e.Create(ctx, engine.CreateJob{WorkflowID: "qwf", Type: "T", Queue: "qq"})
	if err != nil {
		t.Fatal(err)
	}
	worker := newClient(t, ClientConfig{Addrs: []string{hs.URL}})
	q := &fakeQuerier{}
	served := make(chan error, 1)
	sctx, stop := context.WithCancel(ctx)
	go func() { served <- worker.ServeQueries(sctx, "qq", q.answer) }()

	c := newClient(t, ClientConfig{Addrs: []string{hs.URL}})
	got, err := c.Query(ctx, "qwf", "", "sum", []byte("[2,40]"))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "[42]" {
		t.Fatalf("sum = %s", got)
	}
	if _, err := c.Query(ctx, "qwf", "", "nope", nil); !errors.Is(err, engine.ErrUnknownQuery) {
		t.Fatalf("unknown query: %v", err)
	}
	if _, err := c.Query(ctx, "qwf", "", "broken", nil); !errors.Is(err, ErrQueryFailed) || err.Error() != "the handler fell over" {
		t.Fatalf("failing handler: %v", err)
	}
	if _, err := c.Query(ctx, "nobody", "", "sum", nil); !errors.Is(err, engine.ErrUnknownJob) {
		t.Fatalf("query of an unknown workflow: %v", err)
	}
	stop()
	if err := <-served; !errors.Is(err, context.Canceled) {
		t.Fatalf("ServeQueries returned %v", err)
	}
	want := fmt.Sprintf("qwf/%d/sum", created.Job) // the server resolved the run
	if len(q.asked) != 3 || q.asked[0] != want {
		t.Fatalf("the worker was asked %q, want %q first", q.asked, want)
	}
}

// A query no worker answers times out with query_timeout.
func TestQueryWithoutWorkerTimesOut(t *testing.T) {
	e := openEngine(t, engine.Limits{})
	_, hs := serve(t, ServerConfig{Service: e})
	if _, err := e.Create(context.Background(), engine.CreateJob{WorkflowID: "alone", Type: "T", Queue: "unserved"}); err != nil {
		t.Fatal(err)
	}
	r := postJSON(t, hs.URL+"/v1/query?wait=20ms", QueryRequest{WorkflowID: "alone", QueryType: "sum"}, nil)
	if body := errorBodyOf(t, r); r.status != http.StatusGatewayTimeout || body.Name != "query_timeout" {
		t.Fatalf("%d %+v, want 504 query_timeout", r.status, body)
	}
	// The broker forgot the query: a poll of the queue finds nothing.
	var res QueryPollResult
	if r := postJSON(t, hs.URL+"/v1/query/poll?wait=1ms", QueryPoll{Queue: "unserved"}, &res); r.status != 200 || len(res.Queries) != 0 {
		t.Fatalf("poll after the timeout: %d %s", r.status, r.body)
	}
	// An answer for it is not delivered, and that is no error.
	var ans QueryAnswerResult
	if r := postJSON(t, hs.URL+"/v1/query/answer", QueryAnswer{ID: "q-gone"}, &ans); r.status != 200 || ans.Delivered {
		t.Fatalf("late answer: %d %s", r.status, r.body)
	}
}

// A client's query that no worker answers waits for the caller's
// deadline, past the server's wait (here PollWait), and fails with an
// error that is both ErrQueryTimeout and context.DeadlineExceeded, as
// Temporal's query fails with the deadline.
func TestQueryWithoutWorkerWaitsForTheDeadline(t *testing.T) {
	e := openEngine(t, engine.Limits{})
	_, hs := serve(t, ServerConfig{Service: e})
	if _, err := e.Create(context.Background(), engine.CreateJob{WorkflowID: "alone", Type: "T", Queue: "unserved"}); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, ClientConfig{Addrs: []string{hs.URL}, PollWait: 20 * time.Millisecond})
	const wait = 200 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	start := time.Now()
	_, err := c.Query(ctx, "alone", "", "sum", nil)
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrQueryTimeout) {
		t.Fatalf("a query nobody answers: %v, want ErrQueryTimeout and context.DeadlineExceeded", err)
	}
	if took := time.Since(start); took < wait-20*time.Millisecond {
		t.Fatalf("it failed after %v, before the caller's deadline of %v", took, wait)
	}
	// Without a deadline, the client's wait is the query's.
	if _, err := c.Query(context.Background(), "alone", "", "sum", nil); !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrQueryTimeout) {
		t.Fatalf("a query nobody answers, without a deadline: %v", err)
	}
}

// The broker drops a task queue's entry once nobody uses it.
func TestBrokerForgetsIdleQueues(t *testing.T) {
	b := newBroker()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	b.poll(ctx, "a", 1)
	b.ask(ctx, "b", PendingQuery{ID: "x"})
	if len(b.queues) != 0 || len(b.taken) != 0 {
		t.Fatalf("queues %v, taken %v after the polls ended", b.queues, b.taken)
	}
}
