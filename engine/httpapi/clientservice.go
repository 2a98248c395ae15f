package httpapi

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/internal/backoff"
)

var _ engine.Service = (*Client)(nil)

// send sends cmd to path, giving it a request id first when it has none.
func send[R any](ctx context.Context, c *Client, path string, cmd any, h *engine.Header) (*R, error) {
	if h.RequestID == "" {
		h.RequestID = randomID("http-")
	}
	var q url.Values
	if k, ok := pinnedShard(ctx); ok {
		// A sharded node's router sending one shard's part of a command
		// that goes to every shard (a batch) to that shard's leader.
		q = url.Values{"shard": {strconv.Itoa(k)}}
	}
	r := new(R)
	if err := c.do(ctx, request{method: http.MethodPost, path: path, query: q, body: cmd, out: r, command: true}); err != nil {
		return nil, err
	}
	return r, nil
}

// read GETs path into a new R.
func read[R any](ctx context.Context, c *Client, path string, q url.Values) (*R, error) {
	if engine.IsStaleRead(ctx) {
		if q == nil {
			q = url.Values{}
		}
		q.Set("stale", "1")
	}
	if k, ok := pinnedShard(ctx); ok {
		if q == nil {
			q = url.Values{}
		}
		q.Set("shard", strconv.Itoa(k))
	}
	r := new(R)
	if err := c.do(ctx, request{method: http.MethodGet, path: path, query: q, out: r}); err != nil {
		return nil, err
	}
	return r, nil
}

// Create implements engine.Service.
func (c *Client) Create(ctx context.Context, cmd engine.CreateJob) (*engine.CreateResult, error) {
	return send[engine.CreateResult](ctx, c, "/v1/jobs", &cmd, &cmd.Header)
}

// Claim implements engine.Service. Like every command a claim carries a
// request id, so a retry after a lost answer gets the jobs the first try
// claimed instead of leaving them leased to nobody. The engine uses up a
// request id only when the command wrote something, so an empty claim's id
// stays good for the next try.
func (c *Client) Claim(ctx context.Context, cmd engine.Claim) ([]engine.ClaimedJob, error) {
	if cmd.RequestID == "" {
		cmd.RequestID = randomID("http-")
	}
	if view := c.shardView(ctx); view != nil {
		return c.claimAcross(ctx, view, cmd, false, nil) // each node claims from the shards it leads
	}
	var r engine.ClaimResult
	err := c.do(ctx, request{method: http.MethodPost, path: "/v1/jobs/claim", body: &cmd, out: &r, command: true})
	return r.Jobs, err
}

// ClaimWait implements engine.Service with long polls: each waits on the
// server until a job is claimed or the poll's wait ends, and the next one
// follows at once until ctx ends.
func (c *Client) ClaimWait(ctx context.Context, cmd engine.Claim) ([]engine.ClaimedJob, error) {
	if cmd.RequestID == "" {
		// One id for every poll of a round: until a poll claims
		// something the id is unused, and once one has, a retry of that
		// poll returns its jobs.
		cmd.RequestID = randomID("http-")
	}
	c.probeShards(ctx)
	var rounds claimRounds[claimedLease]
	for {
		view := c.shardView(ctx)
		if view == nil {
			break
		}
		round := cmd
		round.RequestID = rounds.next(cmd.RequestID)
		jobs, err := c.claimAcross(ctx, view, round, true, rounds.seen) // a long poll of every node at once
		if err != nil || len(jobs) > 0 {
			if len(jobs) == 0 && ctx.Err() != nil && rounds.n > 1 {
				// A claim cut short may have been applied, its answer
				// lost: the caller knows the first round's request id
				// only, so this round's own are recalled here.
				c.recallLater(view.nodes, round, rounds.seen)
			}
			return jobs, err
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		// Nothing and no error: a node named a newer placement, and the
		// polls ended so that the nodes that joined, or lead a shard
		// now, are polled too (fanOut).
		if err := rounds.pause(ctx, c, view); err != nil {
			return nil, err
		}
	}
	return longPoll(ctx, c, "/v1/jobs/claim", &cmd, func(r *engine.ClaimResult) []engine.ClaimedJob { return r.Jobs })
}

// claimRounds are the rounds of one long poll's call on a sharded cluster
// (ClaimWait, ClaimReviewsWait): a round ends when one poll answers, or
// when the placement moved under the polls, and the next round polls over
// the new map.
type claimRounds[L comparable] struct {
	n    int
	seen *leaseSet[L] // the leases answered by every round, kept or given back
	bo   backoff.Backoff
}

// next returns the request id of the next round: the call's own for the
// first, and one of its own, derived from it, for each later one. A node
// answers a claim under an id it applied as a retry, with the same
// leases: a later round under the first's id would get again what an
// earlier round's cut poll answered, which may be kept for the next claim
// or given back by then, and, dropped as a lease handed on already, it
// would end its round empty, at once, round after round. The derived id
// is short whatever the call's, so it passes every node's name limit.
func (r *claimRounds[L]) next(callID string) string {
	r.n++
	if r.seen == nil {
		r.seen = newLeaseSet[L]()
	}
	if r.n == 1 {
		return callID
	}
	sum := sha256.Sum256([]byte(callID))
	return fmt.Sprintf("round%d-%x", r.n, sum[:12])
}

// pause waits before the next round when the last one ended empty while
// the client's map did not move past view's (a round ends empty only when
// the placement moved, so it should have): a backoff, so that nothing can
// make the rounds spin.
func (r *claimRounds[L]) pause(ctx context.Context, c *Client, view *shardView) error {
	if now, _, stale := c.shards.current(); stale || (now != nil && now.version > view.version) {
		r.bo.Reset()
		return nil
	}
	if r.bo.Initial == 0 {
		r.bo = backoff.Backoff{Initial: minBackoff, Max: maxBackoff}
	}
	return backoff.Sleep(ctx, r.bo.Next())
}

// longPoll posts body to path as long polls until one answers with items
// (what items finds in its result R), fails, or ctx ends: each poll waits on
// the server until something is claimed or its wait ends, and the next one
// follows at once.
func longPoll[R, T any](ctx context.Context, c *Client, path string, body any, items func(*R) []T) ([]T, error) {
	for {
		wait := c.pollWait(ctx)
		if wait == 0 {
			<-ctx.Done()
			return nil, ctx.Err()
		}
		var r R
		err := c.do(ctx, request{method: http.MethodPost, path: path, query: waitQuery(wait),
			body: body, out: &r, wait: wait, command: true})
		if got := items(&r); err != nil || len(got) > 0 {
			return got, err
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
}

// Heartbeat implements engine.Service.
func (c *Client) Heartbeat(ctx context.Context, cmd engine.Heartbeat) (*engine.HeartbeatResult, error) {
	if view := c.shardView(ctx); view != nil {
		if _, route := engine.ShardOfCommand(&cmd, view.count); route == engine.RouteSplit {
			return c.splitHeartbeat(ctx, cmd)
		}
	}
	return send[engine.HeartbeatResult](ctx, c, "/v1/jobs/heartbeat", &cmd, &cmd.Header)
}

// Append implements engine.Service.
func (c *Client) Append(ctx context.Context, cmd engine.AppendEvents) (*engine.AppendResult, error) {
	return send[engine.AppendResult](ctx, c, "/v1/jobs/append", &cmd, &cmd.Header)
}

// CommitStep implements engine.Service.
func (c *Client) CommitStep(ctx context.Context, cmd engine.CommitStep) (*engine.AppendResult, error) {
	return send[engine.AppendResult](ctx, c, "/v1/jobs/commit-step", &cmd, &cmd.Header)
}

// Wait implements engine.Service.
func (c *Client) Wait(ctx context.Context, cmd engine.Wait) (*engine.WaitResult, error) {
	return send[engine.WaitResult](ctx, c, "/v1/jobs/wait", &cmd, &cmd.Header)
}

// Signal implements engine.Service.
func (c *Client) Signal(ctx context.Context, cmd engine.Signal) (*engine.SignalResult, error) {
	return send[engine.SignalResult](ctx, c, "/v1/jobs/signal", &cmd, &cmd.Header)
}

// Cancel implements engine.Service.
func (c *Client) Cancel(ctx context.Context, cmd engine.Cancel) (*engine.StatusResult, error) {
	return send[engine.StatusResult](ctx, c, "/v1/jobs/cancel", &cmd, &cmd.Header)
}

// Activate implements engine.Service.
func (c *Client) Activate(ctx context.Context, cmd engine.Activate) (*engine.StatusResult, error) {
	return send[engine.StatusResult](ctx, c, "/v1/jobs/activate", &cmd, &cmd.Header)
}

// Suspend implements engine.Service.
func (c *Client) Suspend(ctx context.Context, cmd engine.Suspend) (*engine.StatusResult, error) {
	return send[engine.StatusResult](ctx, c, "/v1/jobs/suspend", &cmd, &cmd.Header)
}

// Resume implements engine.Service.
func (c *Client) Resume(ctx context.Context, cmd engine.Resume) (*engine.StatusResult, error) {
	return send[engine.StatusResult](ctx, c, "/v1/jobs/resume", &cmd, &cmd.Header)
}

// Pause implements engine.Service.
func (c *Client) Pause(ctx context.Context, cmd engine.Pause) (*engine.StatusResult, error) {
	return send[engine.StatusResult](ctx, c, "/v1/jobs/pause", &cmd, &cmd.Header)
}

// Unpause implements engine.Service.
func (c *Client) Unpause(ctx context.Context, cmd engine.Unpause) (*engine.StatusResult, error) {
	return send[engine.StatusResult](ctx, c, "/v1/jobs/unpause", &cmd, &cmd.Header)
}

// PauseActivity implements engine.Service.
func (c *Client) PauseActivity(ctx context.Context, cmd engine.PauseActivity) (*engine.ActivityResult, error) {
	return send[engine.ActivityResult](ctx, c, "/v1/jobs/pause-activity", &cmd, &cmd.Header)
}

// UnpauseActivity implements engine.Service.
func (c *Client) UnpauseActivity(ctx context.Context, cmd engine.UnpauseActivity) (*engine.ActivityResult, error) {
	return send[engine.ActivityResult](ctx, c, "/v1/jobs/unpause-activity", &cmd, &cmd.Header)
}

// ResetActivity implements engine.Service.
func (c *Client) ResetActivity(ctx context.Context, cmd engine.ResetActivity) (*engine.ActivityResult, error) {
	return send[engine.ActivityResult](ctx, c, "/v1/jobs/reset-activity", &cmd, &cmd.Header)
}

// UpdateActivityOptions implements engine.Service.
func (c *Client) UpdateActivityOptions(ctx context.Context, cmd engine.UpdateActivityOptions) (*engine.ActivityResult, error) {
	return send[engine.ActivityResult](ctx, c, "/v1/jobs/update-activity-options", &cmd, &cmd.Header)
}

// Complete implements engine.Service.
func (c *Client) Complete(ctx context.Context, cmd engine.Complete) (*engine.StatusResult, error) {
	return send[engine.StatusResult](ctx, c, "/v1/jobs/complete", &cmd, &cmd.Header)
}

// Fail implements engine.Service.
func (c *Client) Fail(ctx context.Context, cmd engine.Fail) (*engine.StatusResult, error) {
	return send[engine.StatusResult](ctx, c, "/v1/jobs/fail", &cmd, &cmd.Header)
}

// Requeue implements engine.Service.
func (c *Client) Requeue(ctx context.Context, cmd engine.Requeue) (*engine.StatusResult, error) {
	return send[engine.StatusResult](ctx, c, "/v1/jobs/requeue", &cmd, &cmd.Header)
}

// RequestCancel implements engine.Service.
func (c *Client) RequestCancel(ctx context.Context, cmd engine.RequestCancel) (*engine.StatusResult, error) {
	return send[engine.StatusResult](ctx, c, "/v1/jobs/request-cancel", &cmd, &cmd.Header)
}

// Terminate implements engine.Service.
func (c *Client) Terminate(ctx context.Context, cmd engine.Terminate) (*engine.StatusResult, error) {
	return send[engine.StatusResult](ctx, c, "/v1/jobs/terminate", &cmd, &cmd.Header)
}

// Reset implements engine.Service.
func (c *Client) Reset(ctx context.Context, cmd engine.ResetJob) (*engine.ResetResult, error) {
	return send[engine.ResetResult](ctx, c, "/v1/jobs/reset", &cmd, &cmd.Header)
}

// ContinueAsNew implements engine.Service.
func (c *Client) ContinueAsNew(ctx context.Context, cmd engine.ContinueAsNew) (*engine.CreateResult, error) {
	return send[engine.CreateResult](ctx, c, "/v1/jobs/continue-as-new", &cmd, &cmd.Header)
}

// LeaseStep implements engine.Service.
func (c *Client) LeaseStep(ctx context.Context, cmd engine.LeaseStep) (*engine.StepResult, error) {
	return send[engine.StepResult](ctx, c, "/v1/jobs/lease-step", &cmd, &cmd.Header)
}

// StepHeartbeat implements engine.Service.
func (c *Client) StepHeartbeat(ctx context.Context, cmd engine.StepHeartbeat) (*engine.StepResult, error) {
	return send[engine.StepResult](ctx, c, "/v1/jobs/step-heartbeat", &cmd, &cmd.Header)
}

// EndStepAttempt implements engine.Service.
func (c *Client) EndStepAttempt(ctx context.Context, cmd engine.EndStepAttempt) (*engine.StepResult, error) {
	return send[engine.StepResult](ctx, c, "/v1/jobs/end-step-attempt", &cmd, &cmd.Header)
}

// AnswerStep implements engine.Service.
func (c *Client) AnswerStep(ctx context.Context, cmd engine.AnswerStep) (*engine.StepResult, error) {
	return send[engine.StepResult](ctx, c, "/v1/jobs/answer-step", &cmd, &cmd.Header)
}

// AddResource implements engine.Service.
func (c *Client) AddResource(ctx context.Context, cmd engine.AddResource) (*engine.ResourceResult, error) {
	return send[engine.ResourceResult](ctx, c, "/v1/resources", &cmd, &cmd.Header)
}

// DrainResource implements engine.Service.
func (c *Client) DrainResource(ctx context.Context, cmd engine.DrainResource) (*engine.ResourceResult, error) {
	return send[engine.ResourceResult](ctx, c, "/v1/resources/drain", &cmd, &cmd.Header)
}

// RemoveResource implements engine.Service.
func (c *Client) RemoveResource(ctx context.Context, cmd engine.RemoveResource) (*engine.ResourceResult, error) {
	return send[engine.ResourceResult](ctx, c, "/v1/resources/remove", &cmd, &cmd.Header)
}

// Steps implements engine.Service.
func (c *Client) Steps(ctx context.Context, t engine.Target) ([]engine.StepInfo, error) {
	p, err := targetPath(t)
	if err != nil {
		return nil, err
	}
	page, err := read[engine.StepsPage](ctx, c, p+"/steps", nil)
	if err != nil {
		return nil, err
	}
	return page.Steps, nil
}

var _ engine.BoundedReader = (*Client)(nil)

// QueryHistory implements engine.BoundedReader with the history route's
// max_payload_bytes. A server older than that parameter ignores it and
// answers every payload whole.
func (c *Client) QueryHistory(ctx context.Context, hq engine.HistoryQuery) (*engine.HistoryPage, error) {
	if hq.MaxPayloadBytes < 0 {
		return nil, fmt.Errorf("%w: max payload bytes %d is negative", engine.ErrInvalidCommand, hq.MaxPayloadBytes)
	}
	q := url.Values{"after": {strconv.FormatUint(hq.AfterSeq, 10)}, "limit": {strconv.Itoa(hq.Limit)}}
	if hq.MaxPayloadBytes > 0 {
		q.Set("max_payload_bytes", strconv.Itoa(hq.MaxPayloadBytes))
	}
	return read[engine.HistoryPage](ctx, c, jobPath(hq.Job)+"/history", q)
}

// QuerySteps implements engine.BoundedReader with the steps route's step
// and max_question_bytes. A server older than them ignores them: it
// answers every step, each question whole.
func (c *Client) QuerySteps(ctx context.Context, sq engine.StepsQuery) ([]engine.StepInfo, error) {
	if sq.MaxQuestionBytes < 0 {
		return nil, fmt.Errorf("%w: max question bytes %d is negative", engine.ErrInvalidCommand, sq.MaxQuestionBytes)
	}
	p, err := targetPath(sq.Target)
	if err != nil {
		return nil, err
	}
	q := url.Values{}
	if sq.Step != "" {
		q.Set("step", sq.Step)
	}
	if sq.MaxQuestionBytes > 0 {
		q.Set("max_question_bytes", strconv.Itoa(sq.MaxQuestionBytes))
	}
	page, err := read[engine.StepsPage](ctx, c, p+"/steps", q)
	if err != nil {
		return nil, err
	}
	return page.Steps, nil
}

// Resources implements engine.Service.
func (c *Client) Resources(ctx context.Context) ([]*engine.Resource, error) {
	page, err := read[engine.ResourcesPage](ctx, c, "/v1/resources", nil)
	if err != nil {
		return nil, err
	}
	return page.Resources, nil
}

var _ engine.ResourceWaiterReader = (*Client)(nil)

// ResourceWaiters implements engine.ResourceWaiterReader. A server whose
// service has no waiter list answers an error matching ErrNoRoute.
func (c *Client) ResourceWaiters(ctx context.Context, limit int) ([]engine.ResourceWaiter, error) {
	q := url.Values{}
	if limit != 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	page, err := read[engine.ResourceWaitersPage](ctx, c, "/v1/resources/waiters", q)
	if err != nil {
		return nil, err
	}
	return page.Waiters, nil
}

// Describe implements engine.Service.
func (c *Client) Describe(ctx context.Context, t engine.Target) (*engine.Job, error) {
	p, err := targetPath(t)
	if err != nil {
		return nil, err
	}
	return read[engine.Job](ctx, c, p, nil)
}

// History implements engine.Service.
func (c *Client) History(ctx context.Context, id engine.JobID, afterSeq uint64, limit int) (*engine.HistoryPage, error) {
	q := url.Values{"after": {strconv.FormatUint(afterSeq, 10)}, "limit": {strconv.Itoa(limit)}}
	return read[engine.HistoryPage](ctx, c, jobPath(id)+"/history", q)
}

// WatchHistory implements engine.Service with long polls on the history
// route, asking again while the answer is empty. The polls are stale reads:
// any node serves them from its own state.
func (c *Client) WatchHistory(ctx context.Context, id engine.JobID, afterSeq uint64, limit int) (*engine.HistoryPage, error) {
	q := url.Values{"after": {strconv.FormatUint(afterSeq, 10)}, "limit": {strconv.Itoa(limit)}, "stale": {"1"}}
	for {
		wait := c.pollWait(ctx)
		if wait == 0 {
			<-ctx.Done()
			return nil, ctx.Err()
		}
		q.Set("wait", wait.String())
		var page engine.HistoryPage
		if err := c.do(ctx, request{method: http.MethodGet, path: jobPath(id) + "/history", query: q, out: &page, wait: wait}); err != nil {
			return nil, err
		}
		if len(page.Events) > 0 {
			return &page, nil
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
}

// Effect implements engine.Service.
func (c *Client) Effect(ctx context.Context, id engine.JobID, step string) (*engine.Effect, error) {
	var eff *engine.Effect // stays nil when the server answers null
	err := c.do(ctx, request{method: http.MethodGet, path: jobPath(id) + "/effects/" + escapeSegment(step), out: &eff})
	return eff, err
}

// List implements engine.Service.
func (c *Client) List(ctx context.Context, lq engine.ListQuery) (*engine.ListPage, error) {
	return read[engine.ListPage](ctx, c, "/v1/jobs", listValues(lq))
}

var _ engine.WorkflowCounter = (*Client)(nil)

// Count implements engine.WorkflowCounter.
func (c *Client) Count(ctx context.Context, lq engine.ListQuery) (*engine.CountResult, error) {
	lq.Order, lq.PageToken, lq.After, lq.Limit = engine.ListOrderDefault, "", 0, 0
	return read[engine.CountResult](ctx, c, "/v1/jobs/count", listValues(lq))
}

// listValues are the URL parameters of a list query. Status goes by
// number: by name, the server reads Running as every open run.
func listValues(lq engine.ListQuery) url.Values {
	q := url.Values{}
	if lq.Status != engine.StatusNone {
		q.Set("status", strconv.Itoa(int(lq.Status)))
	}
	for k, v := range map[string]string{"type": lq.Type, "queue": lq.Queue, "workflow_id": lq.WorkflowID,
		"query": lq.Query, "page_token": lq.PageToken} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if lq.ExecutionStatus != "" {
		q.Set("execution_status", lq.ExecutionStatus)
	}
	if lq.Paused {
		q.Set("paused", "true")
	}
	if lq.Order != engine.ListOrderDefault {
		q.Set("order", lq.Order.String())
	}
	for k, v := range map[string]int64{"created_from_ms": lq.CreatedFromMS, "created_before_ms": lq.CreatedBeforeMS, "now_ms": lq.NowMS} {
		if v != 0 {
			q.Set(k, strconv.FormatInt(v, 10))
		}
	}
	if lq.After != 0 {
		q.Set("after", strconv.FormatUint(uint64(lq.After), 10))
	}
	if lq.Limit != 0 {
		q.Set("limit", strconv.Itoa(lq.Limit))
	}
	if lq.Places {
		q.Set("places", "true")
	}
	return q
}

// WaitClosed implements engine.Service with long polls, asking again while
// the job the server answers with is still open.
func (c *Client) WaitClosed(ctx context.Context, t engine.Target) (*engine.Job, error) {
	p, err := targetPath(t)
	if err != nil {
		return nil, err
	}
	return waitTerminal(ctx, c, p+"/closed", func(j *engine.Job) *engine.Job { return j })
}

// WaitClosing implements engine.ClosingWaiter with long polls of the run's
// end (GET .../closing), each answering its record and closing event in
// one request. Against a node of an earlier version, which has no such
// route, it waits with WaitClosed and reads the event with History.
func (c *Client) WaitClosing(ctx context.Context, t engine.Target) (*engine.Closing, error) {
	p, err := targetPath(t)
	if err != nil {
		return nil, err
	}
	cl, err := waitTerminal(ctx, c, p+"/closing", func(cl *engine.Closing) *engine.Job { return &cl.Job })
	if errors.Is(err, ErrNoRoute) {
		j, err := c.WaitClosed(ctx, t)
		if err != nil {
			return nil, err
		}
		return engine.ClosingOf(ctx, c, j)
	}
	return cl, err
}

// waitTerminal long-polls path, asking again while the job its answer (T)
// holds is still open, until it is terminal or ctx ends.
func waitTerminal[T any](ctx context.Context, c *Client, path string, job func(*T) *engine.Job) (*T, error) {
	for {
		wait := c.pollWait(ctx)
		if wait == 0 {
			<-ctx.Done()
			return nil, ctx.Err()
		}
		var v T
		if err := c.do(ctx, request{method: http.MethodGet, path: path, query: waitQuery(wait), out: &v, wait: wait}); err != nil {
			return nil, err
		}
		if job(&v).Status.Terminal() {
			return &v, nil
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
}

func jobPath(id engine.JobID) string { return "/v1/jobs/" + strconv.FormatUint(uint64(id), 10) }

// targetPath is the path of the job or workflow t names.
func targetPath(t engine.Target) (string, error) {
	switch {
	case t.Job != 0:
		return jobPath(t.Job), nil
	case t.WorkflowID != "":
		return "/v1/workflows/" + escapeSegment(t.WorkflowID), nil
	}
	return "", fmt.Errorf("%w: a target needs a Job or a WorkflowID", engine.ErrInvalidCommand)
}

// escapeSegment escapes s as one path segment. "." and ".." are escaped
// too, or the server's router would read them as path steps.
func escapeSegment(s string) string {
	e := url.PathEscape(s)
	if e == "." || e == ".." {
		e = strings.ReplaceAll(e, ".", "%2E")
	}
	return e
}

var _ engine.ClosingWaiter = (*Client)(nil)
