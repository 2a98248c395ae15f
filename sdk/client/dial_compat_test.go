package client_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/temporal"
)

// closedAddr returns a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// NewClient checks the node as Dial does; NewLazyClient does not, and its
// first call is what fails; DialContext gives up when its context ends.
func TestDialVariants(t *testing.T) {
	addr := closedAddr(t)
	if _, err := client.NewClient(client.Options{HostPort: addr}); err == nil || !strings.Contains(err.Error(), "does not answer") {
		t.Fatalf("NewClient of a closed port: %v", err)
	}
	lazy, err := client.NewLazyClient(client.Options{HostPort: addr})
	if err != nil {
		t.Fatalf("NewLazyClient of a closed port: %v (it must not connect yet)", err)
	}
	defer lazy.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := lazy.SignalWorkflow(ctx, "w", "", "s", nil); err == nil {
		t.Fatal("the lazy client's first call to a closed port succeeded")
	}

	done, stop := context.WithCancel(context.Background())
	stop()
	if _, err := client.DialContext(done, client.Options{HostPort: addr}); err == nil {
		t.Fatal("DialContext with an ended context succeeded")
	}
	c, err := client.DialContext(context.Background(), client.Options{HostPort: serve(t, openEngine(t))})
	if err != nil {
		t.Fatalf("DialContext of a live node: %v", err)
	}
	c.Close()
}

// A start refused because the id is taken is recognised by
// temporal.IsWorkflowExecutionAlreadyStartedError, in process and over
// HTTP; other errors are not.
func TestIsWorkflowExecutionAlreadyStartedError(t *testing.T) {
	e := openEngine(t)
	for _, tc := range []struct {
		name string
		opts client.Options
	}{
		{"embedded", client.Options{Service: e}},
		{"over HTTP", client.Options{HostPort: serve(t, e)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := client.Dial(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			id := "taken-" + strings.ReplaceAll(tc.name, " ", "-")
			opts := client.StartWorkflowOptions{ID: id, TaskQueue: "nobody", WorkflowExecutionErrorWhenAlreadyStarted: true}
			if _, err := c.ExecuteWorkflow(ctx, opts, Waits); err != nil {
				t.Fatal(err)
			}
			_, err = c.ExecuteWorkflow(ctx, opts, Waits)
			if err == nil || !temporal.IsWorkflowExecutionAlreadyStartedError(err) {
				t.Fatalf("second start: %v; want an already-started error", err)
			}
			if temporal.IsWorkflowExecutionAlreadyStartedError(temporal.NewApplicationError("x", "T")) {
				t.Fatal("an application error read as already started")
			}
		})
	}
	if !temporal.IsWorkflowExecutionAlreadyStartedError(&temporal.ChildWorkflowExecutionAlreadyStartedError{}) {
		t.Fatal("the child's already-started error is not recognised")
	}
}
