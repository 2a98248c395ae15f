package worker_test

import (
	"context"
	"net/http/httptest"
	"os"
	"sync"
	"testing"

	"github.com/heddlewf/heddle/engine"

	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/engine/httpapi"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/converter"
	"github.com/heddlewf/heddle/sdk/worker"
)

// backendEnv chooses how the tests reach their engine: unset, in-process;
// "http", through an HTTP server on 127.0.0.1 and an httpapi.Client, so the
// whole workflow suite also runs over the wire:
//
//	HEDDLE_SDK_BACKEND=http go test ./sdk/worker
//
// "cluster" runs it against a three-node Raft cluster (cluster_backend_test.go).
const backendEnv = "HEDDLE_SDK_BACKEND"

func overHTTP() bool { return os.Getenv(backendEnv) == "http" || overCluster() }

// remotes holds one HTTP client per engine, so every worker and client of
// a test shares one server (and its query broker).
var remotes = struct {
	sync.Mutex
	m map[*embedded.Engine]*httpapi.Client
}{m: map[*embedded.Engine]*httpapi.Client{}}

// service is what the tests give worker.New and client.New: e itself, or,
// over HTTP, a client of a server serving e.
func service(t testing.TB, e *embedded.Engine) engine.Service {
	t.Helper()
	if !overHTTP() {
		return e
	}
	return remote(t, e)
}

// remote returns the HTTP client of e's server, starting the server on
// first use. The server is shut down by a cleanup registered then: cleanups
// run last-in first-out, so workers started afterwards stop before it.
func remote(t testing.TB, e *embedded.Engine) *httpapi.Client {
	t.Helper()
	remotes.Lock()
	defer remotes.Unlock()
	if c := remotes.m[e]; c != nil {
		return c
	}
	s, err := httpapi.NewServer(httpapi.ServerConfig{Service: e})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s) // listens on 127.0.0.1 only
	c, err := httpapi.NewClient(httpapi.ClientConfig{Addrs: []string{hs.URL}})
	if err != nil {
		t.Fatal(err)
	}
	remotes.m[e] = c
	t.Cleanup(func() {
		remotes.Lock()
		delete(remotes.m, e)
		remotes.Unlock()
		s.Close() // ends the long polls still waiting, so Close below does not wait them out
		hs.CloseClientConnections()
		hs.Close()
	})
	return c
}

// querier is the Querier a test's client asks: the worker itself, or, over
// HTTP, the remote client, with the worker answering through the server's
// query broker as a separate worker process would.
func querier(t testing.TB, e *embedded.Engine, queue string, w worker.Worker) client.Querier {
	t.Helper()
	if !overHTTP() {
		return w
	}
	c := remote(t, e)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := c.ServeQueries(ctx, queue, answerWith(w)); err != nil && ctx.Err() == nil {
			t.Errorf("serving queries: %v", err)
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return brokered{c}
}

// brokered asks queries through a node's query broker, whose client carries
// them as bytes (engine.QueryServer).
type brokered struct{ qs engine.QueryServer }

func (b brokered) QueryWorkflow(ctx context.Context, workflowID, runID, queryType string, args ...any) (converter.EncodedValue, error) {
	in, err := converter.Encode(args...)
	if err != nil {
		return nil, err
	}
	out, err := b.qs.Query(ctx, workflowID, runID, queryType, in)
	if err != nil {
		return nil, err
	}
	return converter.NewEncodedValue(out), nil
}

// answerWith answers brokered queries with w's workflow code.
func answerWith(w worker.Worker) engine.QueryFunc {
	return func(ctx context.Context, workflowID, runID, queryType string, args []byte) ([]byte, error) {
		vals, err := converter.RawValues(args)
		if err != nil {
			return nil, err
		}
		in := make([]any, len(vals))
		for i, v := range vals {
			in[i] = v
		}
		out, err := w.QueryWorkflow(ctx, workflowID, runID, queryType, in...)
		return converter.DataOf(out), err
	}
}
