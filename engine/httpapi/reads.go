package httpapi

import (
	"fmt"
	"math"
	"strconv"

	"github.com/heddlewf/heddle/engine"
)

func (s *Server) describe(c *call) (any, error) {
	t, err := c.target()
	if err != nil {
		return nil, err
	}
	return s.cfg.Service.Describe(c.r.Context(), t)
}

// steps answers a job's steps: all of them, or the one step names, with
// the questions longer than max_question_bytes left out.
func (s *Server) steps(c *call) (any, error) {
	t, err := c.target()
	if err != nil {
		return nil, err
	}
	q := engine.StepsQuery{Target: t, Step: c.r.URL.Query().Get("step")}
	if q.MaxQuestionBytes, err = c.bytesParam("max_question_bytes"); err != nil {
		return nil, err
	}
	var steps []engine.StepInfo
	if q.Step == "" && q.MaxQuestionBytes == 0 {
		steps, err = s.cfg.Service.Steps(c.r.Context(), t)
	} else {
		br, ok := s.cfg.Service.(engine.BoundedReader)
		if !ok {
			return nil, fmt.Errorf("%w: this server's service reads no step alone and no bounded question", ErrNoRoute)
		}
		steps, err = br.QuerySteps(c.r.Context(), q)
	}
	if err != nil {
		return nil, err
	}
	return engine.StepsPage{Steps: steps}, nil
}

// bytesParam parses an optional byte count: 0 when absent.
func (c *call) bytesParam(name string) (int, error) {
	n, err := c.uintParam(name)
	if err != nil {
		return 0, err
	}
	if n > math.MaxInt32 {
		return 0, fmt.Errorf("%w: query parameter %s=%d is more than %d bytes", engine.ErrInvalidCommand, name, n, math.MaxInt32)
	}
	return int(n), nil
}

func (s *Server) resources(c *call) (any, error) {
	rs, err := s.cfg.Service.Resources(c.r.Context())
	if err != nil {
		return nil, err
	}
	return engine.ResourcesPage{Resources: rs}, nil
}

// resourceWaiters answers the resource waiter queue. It needs a Service
// that also implements engine.ResourceWaiterReader, as *embedded.Engine
// does; with another it answers no_route.
func (s *Server) resourceWaiters(c *call) (any, error) {
	wr, ok := s.cfg.Service.(engine.ResourceWaiterReader)
	if !ok {
		return nil, fmt.Errorf("%w: this server's service has no resource waiter list", ErrNoRoute)
	}
	limit, err := c.limitParam()
	if err != nil {
		return nil, err
	}
	ws, err := wr.ResourceWaiters(c.r.Context(), limit)
	if err != nil {
		return nil, err
	}
	return engine.ResourceWaitersPage{Waiters: ws}, nil
}

func (s *Server) history(c *call) (any, error) {
	id, err := c.jobParam()
	if err != nil {
		return nil, err
	}
	after, err := c.uintParam("after")
	if err != nil {
		return nil, err
	}
	limit, err := c.limitParam()
	if err != nil {
		return nil, err
	}
	maxPayload, err := c.bytesParam("max_payload_bytes")
	if err != nil {
		return nil, err
	}
	wait, err := c.waitParam(0)
	if err != nil {
		return nil, err
	}
	if maxPayload > 0 {
		// A view's read; a worker's long poll needs every payload.
		if wait > 0 {
			return nil, fmt.Errorf("%w: query parameter max_payload_bytes is not taken with wait", engine.ErrInvalidCommand)
		}
		br, ok := s.cfg.Service.(engine.BoundedReader)
		if !ok {
			return nil, fmt.Errorf("%w: this server's service reads no history with payloads left out", ErrNoRoute)
		}
		return br.QueryHistory(c.r.Context(), engine.HistoryQuery{Job: id, AfterSeq: after, Limit: limit, MaxPayloadBytes: maxPayload})
	}
	if wait > 0 {
		if !engine.IsStaleRead(c.r.Context()) {
			s.markStale(c.w.Header()) // a history long poll is served from this node's state
		}
		return s.watchHistory(c, id, after, limit, wait)
	}
	return s.cfg.Service.History(c.r.Context(), id, after, limit)
}

// effect answers the step's effect, or null when none is recorded: a
// missing effect is an ordinary answer, not an error.
func (s *Server) effect(c *call) (any, error) {
	id, err := c.jobParam()
	if err != nil {
		return nil, err
	}
	step := c.r.PathValue("step")
	if step == "" {
		return nil, fieldMissing("effect", "a step in the path")
	}
	return s.cfg.Service.Effect(c.r.Context(), id, step)
}

func (s *Server) list(c *call) (any, error) {
	lq, err := c.listQuery()
	if err != nil {
		return nil, err
	}
	return s.cfg.Service.List(c.r.Context(), lq)
}

// count answers GET /v1/jobs/count, with list's filters; the route is
// there when the Service counts (engine.WorkflowCounter).
func count(wc engine.WorkflowCounter) handler {
	return func(c *call) (any, error) {
		lq, err := c.listQuery()
		if err != nil {
			return nil, err
		}
		return wc.Count(c.r.Context(), lq)
	}
}

// listQuery reads the parameters of a list (and a count). status takes a
// number (heddle's exact status, as Client.List sends it) or a name in the
// list's vocabulary, where Running means every open run as in Temporal
// (engine.ListQuery.ExecutionStatus).
func (c *call) listQuery() (engine.ListQuery, error) {
	q := c.r.URL.Query()
	lq := engine.ListQuery{Type: q.Get("type"), Queue: q.Get("queue"), WorkflowID: q.Get("workflow_id"),
		Query: q.Get("query"), PageToken: q.Get("page_token"), ExecutionStatus: q.Get("execution_status")}
	switch p := q.Get("paused"); p {
	case "", "0", "false":
	case "1", "true":
		lq.Paused = true
	default:
		return lq, fmt.Errorf("%w: paused=%q: want true or false", engine.ErrInvalidCommand, p)
	}
	switch p := q.Get("places"); p {
	case "", "0", "false":
	case "1", "true":
		lq.Places = true
	default:
		return lq, fmt.Errorf("%w: places=%q: want true or false", engine.ErrInvalidCommand, p)
	}
	if st := q.Get("status"); st != "" {
		if _, err := strconv.ParseUint(st, 10, 8); err == nil {
			var err error
			if lq.Status, err = parseStatus(st); err != nil {
				return lq, err
			}
		} else if lq.ExecutionStatus == "" {
			lq.ExecutionStatus = st
		} else {
			return lq, fmt.Errorf("%w: status=%q and execution_status=%q: name the status once", engine.ErrInvalidCommand, st, lq.ExecutionStatus)
		}
	}
	if o := q.Get("order"); o != "" {
		var err error
		if lq.Order, err = engine.ParseListOrder(o); err != nil {
			return lq, err
		}
	}
	after, err := c.uintParam("after")
	if err != nil {
		return lq, err
	}
	lq.After = engine.JobID(after)
	for _, p := range []struct {
		name string
		to   *int64
	}{{"created_from_ms", &lq.CreatedFromMS}, {"created_before_ms", &lq.CreatedBeforeMS}, {"now_ms", &lq.NowMS}} {
		if *p.to, err = c.msParam(p.name); err != nil {
			return lq, err
		}
	}
	if lq.Limit, err = c.limitParam(); err != nil {
		return lq, err
	}
	return lq, nil
}

// parseStatus reads a status by name ("Running") or by number ("2").
func parseStatus(s string) (engine.Status, error) {
	if n, err := strconv.ParseUint(s, 10, 8); err == nil {
		for _, st := range engine.Statuses() {
			if uint64(st) == n {
				return st, nil
			}
		}
		return engine.StatusNone, fmt.Errorf("%w: status %s is not a known status number", engine.ErrInvalidCommand, s)
	}
	return engine.ParseStatus(s)
}
