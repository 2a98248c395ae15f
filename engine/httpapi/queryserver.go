package httpapi

import (
	"context"
	"fmt"
	"strconv"

	"github.com/heddlewf/heddle/engine"
)

// query resolves the run a QueryRequest names, hands the query to a worker
// of the run's task queue and answers with what the worker said.
func (s *Server) query(c *call) (any, error) {
	var q QueryRequest
	if err := c.decode(&q); err != nil {
		return nil, err
	}
	if q.QueryType == "" || (q.WorkflowID == "" && q.RunID == "") {
		return nil, fieldMissing("QueryRequest", "query_type and a workflow_id or run_id")
	}
	if err := s.leaderElsewhere(c.r.Context()); err != nil {
		return nil, err
	}
	wait, err := c.waitParam(s.cfg.MaxWait)
	if err != nil {
		return nil, err
	}
	j, err := s.describeRun(c.r.Context(), runTarget(q.WorkflowID, q.RunID))
	if err != nil {
		return nil, err
	}
	pq := PendingQuery{ID: randomID("q-"), WorkflowID: j.WorkflowID, RunID: strconv.FormatUint(uint64(j.ID), 10),
		QueryType: q.QueryType, Args: q.Args, TimeoutMS: wait.Milliseconds()}
	ctx, cancel := s.pollContext(c.r.Context(), wait)
	defer cancel()
	ctx, left, stop := s.followLeader(ctx)
	defer stop()
	a, ok := s.broker.ask(ctx, j.Queue, pq)
	if !ok {
		if err := left(); err != nil {
			// Another node leads now, and the workers poll there: the
			// query is asked again there (forwarded, or by the client).
			return nil, err
		}
		if err := s.pollEnded(); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w: no worker of task queue %q answered query %q of workflow %q run %d within %v",
			ErrQueryTimeout, j.Queue, q.QueryType, j.WorkflowID, j.ID, wait)
	}
	if a.Error != nil {
		// The worker's error is relayed by name and message. A leader hint
		// in it is about the worker's view, not this request: dropping it
		// keeps this node from forwarding the query.
		body := *a.Error
		body.LeaderID, body.LeaderHTTP = "", ""
		return nil, &RemoteError{Body: body}
	}
	return &QueryResult{Result: a.Result}, nil
}

// describeRun resolves the run a query names. The broker lives on the
// leader of the cluster (of a sharded cluster, its metadata group), which
// need not lead the run's shard: there the run is read at its shard's
// leader.
func (s *Server) describeRun(ctx context.Context, t engine.Target) (*engine.Job, error) {
	if sr, ok := s.cfg.Service.(*ShardRouter); ok {
		return sr.describeAtLeader(ctx, t)
	}
	return s.cfg.Service.Describe(ctx, t)
}

// runTarget names a run as sdk/client does: by a decimal run id when one is
// given, else by workflow id.
func runTarget(workflowID, runID string) engine.Target {
	if id, err := strconv.ParseUint(runID, 10, 64); err == nil && id > 0 {
		return engine.Target{Job: engine.JobID(id)}
	}
	return engine.Target{WorkflowID: workflowID}
}

// queryPoll hands a worker the queries of its queue, waiting for one.
func (s *Server) queryPoll(c *call) (any, error) {
	var p QueryPoll
	if err := c.decode(&p); err != nil {
		return nil, err
	}
	if p.Queue == "" {
		return nil, fieldMissing("QueryPoll", "a queue")
	}
	if p.Max < 0 || p.Max > maxQueryPoll {
		return nil, fmt.Errorf("%w: QueryPoll.Max %d is not in [0, %d]", engine.ErrInvalidCommand, p.Max, maxQueryPoll)
	}
	if err := s.leaderElsewhere(c.r.Context()); err != nil {
		return nil, err
	}
	wait, err := c.waitParam(0)
	if err != nil {
		return nil, err
	}
	ctx, cancel := s.pollContext(c.r.Context(), wait)
	defer cancel()
	ctx, left, stop := s.followLeader(ctx)
	defer stop()
	qs := s.broker.poll(ctx, p.Queue, max(p.Max, 1))
	if len(qs) == 0 {
		if err := left(); err != nil {
			// Another node leads now, and queries are asked there: the
			// poll goes there (forwarded, or by the client).
			return nil, err
		}
		if err := s.pollEnded(); err != nil {
			return nil, err
		}
		qs = []PendingQuery{}
	}
	return &QueryPollResult{Queries: qs}, nil
}

// queryAnswer passes a worker's answer to the client waiting for it.
func (s *Server) queryAnswer(c *call) (any, error) {
	var a QueryAnswer
	if err := c.decode(&a); err != nil {
		return nil, err
	}
	if a.ID == "" {
		return nil, fieldMissing("QueryAnswer", "an id")
	}
	if err := s.leaderElsewhere(c.r.Context()); err != nil {
		return nil, err
	}
	return &QueryAnswerResult{Delivered: s.broker.answer(a)}, nil
}
