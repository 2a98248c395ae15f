package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/internal/backoff"
)

var _ engine.QueryServer = (*Client)(nil)

// Query implements engine.QueryServer: it asks the workers of the run's
// task queue, through the server, to answer a query. args and the answer
// are the SDK's encoded value lists, carried as they are. Some worker
// process must serve the queue's queries (ServeQueries; a worker made from
// a client of this one does). As in Temporal, a query nobody answers waits
// for ctx's deadline, asking the server again each time one of its waits
// (at most PollWait, and the server's MaxWait) ends; then it fails with an
// error that matches both ErrQueryTimeout and context.DeadlineExceeded.
// Without a deadline, one wait is the query's.
func (c *Client) Query(ctx context.Context, workflowID, runID, queryType string, args []byte) ([]byte, error) {
	_, hasDeadline := ctx.Deadline()
	for {
		wait := c.pollWait(ctx)
		if wait == 0 {
			<-ctx.Done()
			return nil, ctx.Err()
		}
		var r QueryResult
		err := c.do(ctx, request{method: http.MethodPost, path: "/v1/query", query: waitQuery(wait), wait: wait,
			body: &QueryRequest{WorkflowID: workflowID, RunID: runID, QueryType: queryType, Args: args}, out: &r})
		switch {
		case err == nil:
			return r.Result, nil
		case errors.Is(err, ErrQueryTimeout) && hasDeadline && c.pollWait(ctx) > 0:
			continue // the deadline is further than the server's wait: ask again
		case errors.Is(err, ErrQueryTimeout):
			return nil, fmt.Errorf("%w: %w", err, context.DeadlineExceeded)
		case errors.Is(ctx.Err(), context.DeadlineExceeded) && isContextError(err):
			// The deadline ended the last wait before the server's answer.
			return nil, fmt.Errorf("%w: no worker answered query %q of workflow %q before the deadline: %w", ErrQueryTimeout, queryType, workflowID, err)
		}
		return nil, err
	}
}

// maxConcurrentQueries bounds the queries one ServeQueries answers at once;
// each replays a history, so an unbounded number could starve the worker.
const maxConcurrentQueries = 16

// ServeQueries implements engine.QueryServer: it answers the queries for
// the runs of queue with answer (the code of the process's worker, which
// has the workflow code) until ctx ends; it returns ctx's error then, or an
// error that retrying cannot fix (a bad token, a server without the
// route). It answers at most 16 queries at once. A worker made from a
// client of c runs it for its queue.
func (c *Client) ServeQueries(ctx context.Context, queue string, answer engine.QueryFunc) error {
	if c == nil || answer == nil || queue == "" {
		return fmt.Errorf("%w: ServeQueries needs a client, a queue and a function that answers", ErrInvalidConfig)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	slots := make(chan struct{}, maxConcurrentQueries)
	bo := newBackoff()
	for {
		qs, err := c.pollQueries(ctx, queue)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			if errors.Is(err, ErrUnauthorized) || errors.Is(err, ErrNoRoute) || errors.Is(err, engine.ErrInvalidCommand) {
				return err
			}
			// The servers are unreachable for longer than the client's
			// RetryTimeout: keep trying, slowly, as a worker does.
			if err := backoff.Sleep(ctx, bo.Next()); err != nil {
				return err
			}
			continue
		}
		bo.Reset()
		for _, pq := range qs {
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				return ctx.Err()
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-slots }()
				c.answerQuery(ctx, answer, pq)
			}()
		}
	}
}

// pollQueries long-polls the server for queries of queue.
func (c *Client) pollQueries(ctx context.Context, queue string) ([]PendingQuery, error) {
	wait := c.pollWait(ctx)
	if wait == 0 {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	var r QueryPollResult
	err := c.do(ctx, request{method: http.MethodPost, path: "/v1/query/poll", query: waitQuery(wait), wait: wait,
		body: &QueryPoll{Queue: queue, Max: maxConcurrentQueries}, out: &r})
	return r.Queries, err
}

// answerQuery runs one query and sends its answer. A lost answer needs no
// retry beyond the client's own: the asker times out and may ask again.
func (c *Client) answerQuery(ctx context.Context, answer engine.QueryFunc, pq PendingQuery) {
	timeout := time.Duration(pq.TimeoutMS) * time.Millisecond
	if timeout <= 0 {
		timeout = c.cfg.PollWait
	}
	qctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	a := QueryAnswer{ID: pq.ID}
	var err error
	a.Result, err = answer(qctx, pq.WorkflowID, pq.RunID, pq.QueryType, pq.Args)
	if err != nil {
		a.Error = queryError(err)
	}
	_ = c.do(qctx, request{method: http.MethodPost, path: "/v1/query/answer", body: &a})
}

// queryError is the ErrorBody of a failed query. An error that matches no
// sentinel is the query handler's own: it is named query_failed, not
// internal, for the server did nothing wrong.
func queryError(err error) *ErrorBody {
	_, body := errorFor(err)
	if body.Name == nameInternal {
		body.Name = "query_failed"
	}
	return &body
}
