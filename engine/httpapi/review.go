package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/heddlewf/heddle/engine"
)

// reviewRoutes registers the review task routes (doc.go lists them). They
// need a Service that also implements engine.ReviewService, as *embedded.Engine
// does; with another the routes answer no_route.
func (s *Server) reviewRoutes() {
	ts, _ := s.cfg.Service.(engine.ReviewService)
	need := func(h func(engine.ReviewService, *call) (any, error)) handler {
		return func(c *call) (any, error) {
			if ts == nil {
				return nil, fmt.Errorf("%w: this server's service has no review tasks", ErrNoRoute)
			}
			return h(ts, c)
		}
	}
	s.handleReview("POST /v1/tasks", reviewClient, need(func(ts engine.ReviewService, c *call) (any, error) {
		var cmd engine.CreateReview
		if err := c.decode(&cmd); err != nil {
			return nil, err
		}
		// Who created the task is the server's to say, as for a decision.
		cmd.By = decidedBy(c.r, cmd.By)
		return ts.CreateReview(c.r.Context(), cmd)
	}))
	for _, op := range engine.ReviewOps() {
		// One route per human command: the path names the command, the
		// body the task, who decides, and why.
		s.handleReview("POST /v1/tasks/"+string(op), reviewClient, need(func(ts engine.ReviewService, c *call) (any, error) {
			var cmd engine.ReviewCommand
			if err := c.decode(&cmd); err != nil {
				return nil, err
			}
			if cmd.Op != "" && cmd.Op != op {
				return nil, fmt.Errorf("%w: the body's op %q is not the path's %q", engine.ErrInvalidCommand, cmd.Op, op)
			}
			cmd.Op = op
			cmd.By = decidedBy(c.r, cmd.By)
			return ts.ReviewCommand(c.r.Context(), cmd)
		}))
	}
	// A Draft job's input, configured before its activation.
	s.handleReview("POST /v1/jobs/configure", reviewClient, func(c *call) (any, error) {
		jc, ok := s.cfg.Service.(interface {
			ConfigureJob(context.Context, engine.ConfigureJob) (*engine.StatusResult, error)
		})
		if !ok {
			return nil, fmt.Errorf("%w: this server's service cannot configure jobs", ErrNoRoute)
		}
		return decodeRun(c, jc.ConfigureJob)
	})
	s.handleReview("POST /v1/tasks/claim", reviewWorker, need(func(ts engine.ReviewService, c *call) (any, error) {
		var cmd engine.ClaimReviews
		if err := c.decode(&cmd); err != nil {
			return nil, err
		}
		cut, _, err := claimParams(c.r.URL.Query(), false)
		if err != nil {
			return nil, err
		}
		if cut {
			return s.cutReviewClaim(cmd)
		}
		wait, err := c.waitParam(0)
		if err != nil {
			return nil, err
		}
		ctx := c.r.Context()
		if _, sharded := s.cfg.Service.(claimRecaller); sharded && wait > 0 && cmd.RequestID != "" {
			// The client of a sharded cluster may end this wait with a cut
			// (cutReviewClaim) rather than by closing its connection.
			var end func()
			ctx, end = s.taskCuts.begin(ctx, cmd.RequestID)
			defer end()
		}
		reviews, err := s.claimReviewsWait(ctx, ts, cmd, wait)
		if reviews == nil {
			reviews = []engine.ClaimedReview{} // JSON readers see [], not null
		}
		return &engine.ClaimReviewsResult{Reviews: reviews}, err
	}))
	s.handleReview("POST /v1/tasks/report", reviewWorker, need(func(ts engine.ReviewService, c *call) (any, error) {
		return decodeRun(c, ts.ReviewReport)
	}))
	s.handleReview("POST /v1/tasks/heartbeat", reviewWorker, need(func(ts engine.ReviewService, c *call) (any, error) {
		return decodeRun(c, ts.ReviewHeartbeat)
	}))
	s.handleReview("GET /v1/tasks", reviewReader, need(func(ts engine.ReviewService, c *call) (any, error) {
		job := c.r.URL.Query().Get("job")
		if job == "" {
			return nil, fmt.Errorf("%w: GET /v1/tasks needs ?job=", engine.ErrInvalidCommand)
		}
		reviews, err := ts.ListReviews(c.r.Context(), job)
		return &ReviewList{Reviews: reviews}, err
	}))
	s.handleReview("GET "+awaitingPath, reviewReader, need(listAwaiting))
	s.handleReview("GET /v1/tasks/{task}", reviewReader, need(func(ts engine.ReviewService, c *call) (any, error) {
		id, err := reviewParam(c)
		if err != nil {
			return nil, err
		}
		return ts.DescribeReview(c.r.Context(), engine.ReviewTarget{ID: id})
	}))
	s.handleReview("GET /v1/tasks/{task}/history", reviewReader, need(func(ts engine.ReviewService, c *call) (any, error) {
		id, err := reviewParam(c)
		if err != nil {
			return nil, err
		}
		evs, err := ts.ReviewHistory(c.r.Context(), id)
		return &ReviewHistory{Events: evs}, err
	}))
	s.handleReview("GET /v1/manifests/{job}", reviewReader, need(func(ts engine.ReviewService, c *call) (any, error) {
		return ts.ReviewManifest(c.r.Context(), c.r.PathValue("job"))
	}))
	s.handleReview("GET /v1/manifests/{job}/phases/{phase}", reviewReader, need(func(ts engine.ReviewService, c *call) (any, error) {
		return ts.DescribeReview(c.r.Context(), engine.ReviewTarget{Job: c.r.PathValue("job"), Phase: c.r.PathValue("phase")})
	}))
}

// reviewClaimWaiter is implemented by *embedded.Engine: a task claim that
// waits for commits instead of polling.
type reviewClaimWaiter interface {
	ClaimReviewsWait(context.Context, engine.ClaimReviews) ([]engine.ClaimedReview, error)
}

// claimReviewsWait claims tasks; with a wait it is a long poll that answers
// as soon as it claimed something, or empty when the wait is over.
func (s *Server) claimReviewsWait(ctx context.Context, ts engine.ReviewService, cmd engine.ClaimReviews, wait time.Duration) ([]engine.ClaimedReview, error) {
	w, ok := ts.(reviewClaimWaiter)
	if wait <= 0 || !ok {
		return ts.ClaimReviews(context.WithoutCancel(ctx), cmd)
	}
	pctx, cancel := s.pollContext(ctx, wait)
	defer cancel()
	reviews, err := w.ClaimReviewsWait(pctx, cmd)
	if err != nil && pctx.Err() != nil && isContextError(err) {
		return nil, s.pollEnded()
	}
	return reviews, err
}

// cutReviewClaim answers POST /v1/tasks/claim?cut=1: it ends this node's
// task long polls waiting under cmd's request id, as cutClaim does for
// jobs' (pollcut.go). It claims nothing and answers an empty claim result.
func (s *Server) cutReviewClaim(cmd engine.ClaimReviews) (any, error) {
	if _, ok := s.cfg.Service.(claimRecaller); !ok {
		return nil, fmt.Errorf("%w: cut=1 is asked of a node of a sharded cluster only", engine.ErrInvalidCommand)
	}
	if err := checkCutID("ClaimTasks", cmd.RequestID); err != nil {
		return nil, err
	}
	s.taskCuts.cut(cmd.RequestID)
	return &engine.ClaimReviewsResult{Reviews: []engine.ClaimedReview{}}, nil
}

// reviewAccess says who may call a task route: a person steering tasks (or
// a program creating them), a worker or reviewer holding them, or anyone
// who may read.
type reviewAccess uint8

const (
	reviewClient reviewAccess = iota
	reviewWorker
	reviewReader
)

// handleReview registers a task route. Every task route goes through here,
// so that where tokens carry roles one line maps reviewClient, reviewWorker
// and reviewReader to the client, worker and reader roles.
func (s *Server) handleReview(pattern string, a reviewAccess, h handler) {
	s.handle(pattern, [...]Role{reviewClient: RoleClient, reviewWorker: RoleWorker, reviewReader: RoleReader}[a], h)
}

// decidedBy is who created a task or made a human decision on it: the
// caller's identity where tokens or certificates name callers, else the
// request's by (the CLI's --by). A server without tokens names no caller,
// so there the body's by stands: anyone who reaches such a server may do
// anything, as anyone.
func decidedBy(r *http.Request, by string) string {
	if id := identityOf(r); id.Name != "" {
		return id.Name
	}
	return by
}

// ReviewList is the answer of GET /v1/tasks.
type ReviewList struct {
	Reviews []engine.Review `json:"tasks" msgpack:"tasks"`
}

// ReviewHistory is the answer of GET /v1/tasks/{task}/history.
type ReviewHistory struct {
	Events []engine.ReviewEvent `json:"events" msgpack:"events"`
}

func decodeRun[C, R any](c *call, run func(context.Context, C) (R, error)) (any, error) {
	var cmd C
	if err := c.decode(&cmd); err != nil {
		return nil, err
	}
	return run(c.r.Context(), cmd)
}

func reviewParam(c *call) (engine.ReviewID, error) {
	s := c.r.PathValue("task")
	id, err := strconv.ParseUint(s, 10, 64)
	if err != nil || id == 0 {
		return 0, fmt.Errorf("%w: task id %q in the path is not a positive integer", engine.ErrInvalidCommand, s)
	}
	return engine.ReviewID(id), nil
}

// reviewStateDetail adds the task's state and the commands legal in it to
// the body of an illegal task command, so a 409 says what may be done.
func reviewStateDetail(err error, body *ErrorBody) {
	var se *engine.ReviewStateError
	if errors.As(err, &se) {
		body.ReviewState = se.State.String()
		body.LegalCommands = make([]string, len(se.Legal))
		for i, op := range se.Legal {
			body.LegalCommands[i] = string(op)
		}
		if len(body.LegalCommands) == 0 {
			body.LegalCommands = nil
		}
	}
}

// reviewStateError rebuilds the *engine.ReviewStateError of an illegal task
// command's answer, or returns nil for any other.
func (e *RemoteError) reviewStateError() error {
	if e.Body.Name != "illegal_task_command" {
		return nil
	}
	st, _ := engine.ParseReviewState(e.Body.ReviewState)
	se := &engine.ReviewStateError{State: st, Command: e.Body.Message}
	for _, op := range e.Body.LegalCommands {
		se.Legal = append(se.Legal, engine.ReviewOp(op))
	}
	return se
}

var _ engine.ReviewService = (*Client)(nil)

// CreateReview implements engine.ReviewService.
func (c *Client) CreateReview(ctx context.Context, cmd engine.CreateReview) (*engine.ReviewResult, error) {
	return send[engine.ReviewResult](ctx, c, "/v1/tasks", &cmd, &cmd.Header)
}

// ReviewCommand implements engine.ReviewService.
func (c *Client) ReviewCommand(ctx context.Context, cmd engine.ReviewCommand) (*engine.ReviewResult, error) {
	if cmd.Op == "" {
		return nil, fmt.Errorf("%w: a task command needs an op", engine.ErrInvalidCommand)
	}
	return send[engine.ReviewResult](ctx, c, "/v1/tasks/"+url.PathEscape(string(cmd.Op)), &cmd, &cmd.Header)
}

// ClaimReviews implements engine.ReviewService.
func (c *Client) ClaimReviews(ctx context.Context, cmd engine.ClaimReviews) ([]engine.ClaimedReview, error) {
	if view := c.shardView(ctx); view != nil {
		if cmd.RequestID == "" {
			cmd.RequestID = randomID("http-")
		}
		return c.claimReviewsAcross(ctx, view, cmd, false, nil)
	}
	r, err := send[engine.ClaimReviewsResult](ctx, c, "/v1/tasks/claim", &cmd, &cmd.Header)
	if err != nil {
		return nil, err
	}
	return r.Reviews, nil
}

// ClaimReviewsWait claims with long polls: each waits on the server until a
// task is claimed or the poll's wait ends, and the next one follows at once
// until ctx ends. One request id serves every poll of a round, as in
// ClaimWait: it is used up only by a poll that claimed something, whose
// retry then gets those tasks back.
func (c *Client) ClaimReviewsWait(ctx context.Context, cmd engine.ClaimReviews) ([]engine.ClaimedReview, error) {
	if cmd.RequestID == "" {
		cmd.RequestID = randomID("http-")
	}
	c.probeShards(ctx)
	var rounds claimRounds[reviewLease]
	for {
		view := c.shardView(ctx)
		if view == nil {
			break
		}
		round := cmd
		round.RequestID = rounds.next(cmd.RequestID)
		tasks, err := c.claimReviewsAcross(ctx, view, round, true, rounds.seen)
		if err != nil || len(tasks) > 0 {
			return tasks, err
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		// Nothing and no error: the placement changed under the polls
		// (fanOut); poll again over the new map.
		if err := rounds.pause(ctx, c, view); err != nil {
			return nil, err
		}
	}
	return longPoll(ctx, c, "/v1/tasks/claim", &cmd, func(r *engine.ClaimReviewsResult) []engine.ClaimedReview { return r.Reviews })
}

// ConfigureJob changes the input of a Draft job before its activation.
func (c *Client) ConfigureJob(ctx context.Context, cmd engine.ConfigureJob) (*engine.StatusResult, error) {
	return send[engine.StatusResult](ctx, c, "/v1/jobs/configure", &cmd, &cmd.Header)
}

// ReviewReport implements engine.ReviewService.
func (c *Client) ReviewReport(ctx context.Context, cmd engine.ReviewReport) (*engine.ReviewResult, error) {
	return send[engine.ReviewResult](ctx, c, "/v1/tasks/report", &cmd, &cmd.Header)
}

// ReviewHeartbeat implements engine.ReviewService.
func (c *Client) ReviewHeartbeat(ctx context.Context, cmd engine.ReviewHeartbeat) (*engine.ReviewHeartbeatResult, error) {
	if view := c.shardView(ctx); view != nil {
		if _, route := engine.ShardOfCommand(&cmd, view.count); route == engine.RouteSplit {
			return c.splitReviewHeartbeat(ctx, cmd)
		}
	}
	return send[engine.ReviewHeartbeatResult](ctx, c, "/v1/tasks/heartbeat", &cmd, &cmd.Header)
}

// DescribeReview implements engine.ReviewService.
func (c *Client) DescribeReview(ctx context.Context, t engine.ReviewTarget) (*engine.Review, error) {
	if t.ID != 0 {
		return read[engine.Review](ctx, c, "/v1/tasks/"+strconv.FormatUint(uint64(t.ID), 10), nil)
	}
	return read[engine.Review](ctx, c, "/v1/manifests/"+url.PathEscape(t.Job)+"/phases/"+url.PathEscape(t.Phase), nil)
}

// ReviewHistory implements engine.ReviewService.
func (c *Client) ReviewHistory(ctx context.Context, id engine.ReviewID) ([]engine.ReviewEvent, error) {
	r, err := read[ReviewHistory](ctx, c, "/v1/tasks/"+strconv.FormatUint(uint64(id), 10)+"/history", nil)
	if err != nil {
		return nil, err
	}
	return r.Events, nil
}

// ListReviews implements engine.ReviewService.
func (c *Client) ListReviews(ctx context.Context, job string) ([]engine.Review, error) {
	r, err := read[ReviewList](ctx, c, "/v1/tasks", url.Values{"job": {job}})
	if err != nil {
		return nil, err
	}
	return r.Reviews, nil
}

// ReviewManifest implements engine.ReviewService.
func (c *Client) ReviewManifest(ctx context.Context, job string) (*engine.Manifest, error) {
	return read[engine.Manifest](ctx, c, "/v1/manifests/"+url.PathEscape(job), nil)
}
