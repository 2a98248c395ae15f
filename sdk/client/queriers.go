package client

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"sync"

	"github.com/heddlewf/heddle/engine"

	"github.com/heddlewf/heddle/engine/httpapi"
	"github.com/heddlewf/heddle/internal/sdkhook"
	"github.com/heddlewf/heddle/sdk/converter"
)

// DefaultQueryWait bounds how long a query (or an update's validation)
// waits for a worker to answer when its context has no deadline: Temporal
// waits for the caller's deadline, and a call without one gets this one,
// the same as a long poll of a node's (httpapi.DefaultPollWait).
const DefaultQueryWait = httpapi.DefaultPollWait

// queriers holds the workers of this process that answer queries, by the
// service they reach heddle through and by task queue: any client of the
// same service (an embedded engine, say) finds them, not only the client a
// worker was made from, as any Temporal client reaches any worker. changed
// is closed (and replaced) whenever a worker comes or goes, so that a
// query waiting for one looks again.
var queriers = struct {
	sync.Mutex
	m       map[querierKey][]Querier
	changed chan struct{}
}{m: map[querierKey][]Querier{}, changed: make(chan struct{})}

type querierKey struct {
	service any
	queue   string
}

// serviceKey is what a client's workers are registered under: the service
// itself when it can be a map key (an *embedded.Engine or an
// *httpapi.Client are pointers), else the client, whose own workers only
// then answer its queries.
func (c *workflowClient) serviceKey() any {
	if c.e != nil && reflect.TypeOf(c.e).Comparable() {
		return c.e
	}
	return c
}

// AddQuerier registers a worker of queue (sdkhook.ClientBackend); the
// function returned removes it.
func (c *workflowClient) AddQuerier(queue string, q sdkhook.Querier) func() {
	k := querierKey{c.serviceKey(), queue}
	queriers.Lock()
	defer queriers.Unlock()
	queriers.m[k] = append(queriers.m[k], q)
	close(queriers.changed)
	queriers.changed = make(chan struct{})
	return func() {
		queriers.Lock()
		defer queriers.Unlock()
		queriers.m[k] = slices.DeleteFunc(queriers.m[k], func(x Querier) bool { return x == q })
		if len(queriers.m[k]) == 0 {
			delete(queriers.m, k)
		}
		close(queriers.changed)
		queriers.changed = make(chan struct{})
	}
}

// localQueriers returns the workers of queue in this process, and a channel
// closed when that changes.
func (c *workflowClient) localQueriers(queue string) ([]Querier, <-chan struct{}) {
	queriers.Lock()
	defer queriers.Unlock()
	return slices.Clone(queriers.m[querierKey{c.serviceKey(), queue}]), queriers.changed
}

// askWorkers asks a worker with the code of run j to answer a query: a
// worker of j's queue in this process (reaching heddle through the same
// service), else, through a service that brokers queries (over HTTP, the
// node, which asks the workers that serve its queries). With none to ask, it waits for one until ctx's deadline
// (DefaultQueryWait when ctx has none), as Temporal does, and then fails
// with an error that matches both ErrNoQuerier and
// context.DeadlineExceeded.
func (c *workflowClient) askWorkers(ctx context.Context, j *engine.Job, queryType string, args ...any) (converter.EncodedValue, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultQueryWait)
		defer cancel()
	}
	runID := strconv.FormatUint(uint64(j.ID), 10)
	for {
		local, changed := c.localQueriers(j.Queue)
		var errs []error
		for _, q := range local {
			v, err := q.QueryWorkflow(ctx, j.WorkflowID, runID, queryType, args...)
			if err == nil || !errors.Is(err, sdkhook.ErrTypeNotRegistered) {
				return v, err
			}
			errs = append(errs, err)
		}
		if qs, ok := c.e.(engine.QueryServer); ok {
			return askRemote(ctx, qs, j.WorkflowID, runID, queryType, args)
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, errors.Join(fmt.Errorf("%w: no worker of queue %q with workflow type %q runs in this process (make one with worker.New from a client of the same engine, or set Options.Querier): %w",
				ErrNoQuerier, j.Queue, j.Type, ctx.Err()), errors.Join(errs...))
		}
	}
}

// askRemote asks a query through a service that brokers queries to worker
// processes (engine.QueryServer), which carries the arguments and the
// answer as bytes.
func askRemote(ctx context.Context, qs engine.QueryServer, workflowID, runID, queryType string, args []any) (converter.EncodedValue, error) {
	input, err := converter.Encode(args...)
	if err != nil {
		// The words of the HTTP client, which encoded the arguments before.
		return nil, fmt.Errorf("httpapi: query arguments: %w", err)
	}
	out, err := qs.Query(ctx, workflowID, runID, queryType, input)
	if err != nil {
		return nil, err
	}
	return converter.NewEncodedValue(out), nil
}
