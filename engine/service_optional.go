package engine

import (
	"context"
	"fmt"
)

// The optional interfaces of a Service. A Service implements those that fit
// it, and the SDK finds them by type assertion, as database/sql finds a
// driver's Pinger: a Service that implements none of them (a test double,
// a decorator) still works, with the behaviour each one describes for its
// absence. A decorator that wraps a Service should forward the ones its
// inner Service implements.

// QueryServer is implemented by a Service whose workflows' queries reach
// workflow code only through worker processes that serve them:
// engine/httpapi's Client, whose node brokers each query to a worker of the
// run's task queue. A client of such a service sends a query with Query when
// no worker of the run's queue runs in its own process, and a worker made
// from one serves its queue's queries with ServeQueries for as long as it
// runs. The embedded *Engine does not implement it: the workers of its own
// process answer its queries (sdk/client finds them).
//
// Queries travel as bytes: a query's arguments and its answer are the SDK's
// encoded value lists (sdk/converter's Encode), which the service carries
// without reading them.
//
// Both methods may run concurrently with each other and with every method of
// the Service, from any goroutine.
type QueryServer interface {
	// Query asks a worker of the run's task queue to answer queryType with
	// args, and returns its answer. runID "" is the workflow id's latest
	// run. It waits up to ctx's deadline for a worker to answer (without
	// one, the implementation's own wait). Errors: ErrUnknownJob for an
	// unknown run, ErrUnknownQuery when the workflow has no handler for
	// queryType, an error matching context.DeadlineExceeded when no worker
	// answered in time, and otherwise the handler's own error.
	Query(ctx context.Context, workflowID, runID, queryType string, args []byte) ([]byte, error)
	// ServeQueries answers the queries of queue's runs with answer until
	// ctx ends, and then returns ctx's error; it returns earlier only with
	// an error that retrying cannot fix (refused credentials, a server
	// without queries). It calls answer from several goroutines at once, a
	// bounded number of them, each with a context that ends when the
	// query's asker stops waiting.
	ServeQueries(ctx context.Context, queue string, answer QueryFunc) error
}

// QueryFunc answers one query with workflow code: a worker's answer to
// QueryServer.ServeQueries. args and the answer are the SDK's encoded value
// lists. An error matching ErrUnknownQuery says the workflow has no handler
// for queryType; any other error is the handler's, and goes back to the
// asker as the query's failure.
type QueryFunc func(ctx context.Context, workflowID, runID, queryType string, args []byte) ([]byte, error)

// CancelSafeClaimer is implemented by a Service whose ClaimWait never loses
// a claim to its context: *Engine (embedded, or a cluster node's in its own
// process), whose ClaimWait returns the jobs it claimed even when its
// context ends while the claim is applied. A
// worker of any other Service assumes that a claim cut short by its context
// may still have been applied, its answer lost (a node applies a claim
// whose request was cut while it was being applied), so it gives each claim
// a request id and gives back what a cut claim took.
type CancelSafeClaimer interface {
	// CancelSafeClaims reports whether ClaimWait is cancel-safe in that
	// way. It may be called from any goroutine.
	CancelSafeClaims() bool
}

// KeptClaimReleaser is a Service that may hold jobs claimed for a worker
// between the worker's long polls (the HTTP client of a sharded cluster
// keeps what a cut long poll took, for the next one). The Service owns
// those jobs until a ClaimWait of the same claimer returns them.
type KeptClaimReleaser interface {
	// ReleaseKept gives back every job held for claims of queue by owner,
	// fenced by its lease, and gives back at once whatever would be held
	// for them later, until their next ClaimWait. A worker calls it once
	// its pollers have ended, so that nothing claimed for it waits out a
	// lease. It may be called from any goroutine.
	ReleaseKept(ctx context.Context, queue, owner string)
}

// ClosingWaiter is implemented by a Service that answers a run's end in
// one call: its record and the event that closed it, which says how it
// ended (its result or failure, and a reason such as continued-as-new).
// *Engine, the ShardRouter of a sharded node and engine/httpapi's Client
// implement it; against any other Service the SDK waits with WaitClosed
// and reads the closing event with History, two calls (two requests and
// two linearizable reads against a cluster), as Temporal's client reads a
// result with one long poll of the history's closing event.
//
// WaitClosing may run concurrently with every method of the Service.
type ClosingWaiter interface {
	// WaitClosing blocks until the run t names is terminal, or until ctx
	// ends, and returns it: the same record WaitClosed returns, and the
	// event whose sequence is the record's LastSeq.
	WaitClosing(ctx context.Context, t Target) (*Closing, error)
}

// Closing is a run that ended: its record, and the event that closed it.
type Closing struct {
	Job   Job   `json:"job" msgpack:"job"`
	Event Event `json:"event" msgpack:"event"`
}

// WaitClosing is s's WaitClosing when s is a ClosingWaiter, else WaitClosed
// followed by a History read of the closing event.
func WaitClosing(ctx context.Context, s Service, t Target) (*Closing, error) {
	if cw, ok := s.(ClosingWaiter); ok {
		return cw.WaitClosing(ctx, t)
	}
	j, err := s.WaitClosed(ctx, t)
	if err != nil {
		return nil, err
	}
	return ClosingOf(ctx, s, j)
}

// ClosingOf reads, with s's History, the event that closed the run whose
// terminal record is j.
func ClosingOf(ctx context.Context, s Service, j *Job) (*Closing, error) {
	page, err := s.History(ctx, j.ID, j.LastSeq-1, 1)
	if err != nil {
		return nil, err
	}
	if len(page.Events) != 1 || page.Events[0].Seq != j.LastSeq {
		return nil, fmt.Errorf("%w: run %d has no event %d, the last its record names", ErrCorrupt, j.ID, j.LastSeq)
	}
	return &Closing{Job: *j, Event: page.Events[0]}, nil
}
