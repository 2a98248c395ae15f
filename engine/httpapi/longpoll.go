package httpapi

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/heddlewf/heddle/engine"
)

// committer is a Service that can say when something was committed
// (*embedded.Engine is one). A long poll over it re-checks only then, never
// on a timer.
type committer interface {
	Committed() <-chan struct{}
}

// pollContext bounds a long poll by wait, by the request, and by Close.
func (s *Server) pollContext(parent context.Context, wait time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(parent, wait)
	stop := context.AfterFunc(s.closing, cancel)
	return ctx, func() { stop(); cancel() }
}

// pollEnded is what a long poll answers when its wait ran out: nothing to
// report, or, when the Server is closing, ErrClosed, so that clients go to
// another node rather than ask this one again at once.
func (s *Server) pollEnded() error {
	if s.closing.Err() != nil {
		return fmt.Errorf("%w: the server is shutting down", engine.ErrClosed)
	}
	return nil
}

// claim serves a claim; with a wait it is a long poll that answers as soon
// as it claimed something, or empty when the wait is over.
func (s *Server) claim(c *call) (any, error) {
	var cmd engine.Claim
	if err := c.decode(&cmd); err != nil {
		return nil, err
	}
	cut, recall, err := claimParams(c.r.URL.Query(), true)
	switch {
	case err != nil:
		return nil, err
	case recall:
		return s.recallClaim(c, cmd)
	case cut:
		return s.cutClaim(cmd)
	}
	// The poll is this node's to record, also while it waits here
	// without proposing (a follower's poll reaches the leader only when
	// there is work): see taskqueues.go.
	defer s.beginPoll(cmd)()
	wait, err := c.waitParam(0)
	if err != nil {
		return nil, err
	}
	ctx := c.r.Context()
	if _, sharded := s.cfg.Service.(claimRecaller); sharded && wait > 0 && cmd.RequestID != "" {
		// The client of a sharded cluster may end this wait with a cut
		// (cutClaim) rather than by closing its connection.
		var end func()
		ctx, end = s.cuts.begin(ctx, cmd.RequestID)
		defer end()
	}
	jobs, err := s.claimWait(ctx, cmd, wait)
	if err != nil {
		return nil, err
	}
	if len(jobs) > 0 && c.r.Context().Err() != nil {
		// The caller went away while its claim was applied (a worker
		// stopping cuts its long poll): nobody will receive these jobs.
		s.releaseClaimed(c.r.Context(), jobs)
		return nil, c.r.Context().Err()
	}
	if jobs == nil {
		jobs = []engine.ClaimedJob{} // JSON readers see [], not null
	}
	return &engine.ClaimResult{Jobs: jobs}, nil
}

// claimRecaller is a sharded node's Service (*ShardRouter): it says what
// a claim under a request id took on the shards this node holds.
type claimRecaller interface {
	RecallClaim(requestID string) ([]engine.ClaimedJob, error)
}

// recallClaim answers POST /v1/jobs/claim?recall=1: the jobs the claims
// under cmd's request id took on this node, claiming nothing. A client
// that cut this node's long poll (it polls every node of a sharded cluster
// and keeps the first answer) asks it, since a claim applied just before
// the cut may have been answered into a closed connection; the client
// gives such jobs back at once instead of leaving them to their leases.
func (s *Server) recallClaim(c *call, cmd engine.Claim) (any, error) {
	rc, ok := s.cfg.Service.(claimRecaller)
	if !ok {
		return nil, fmt.Errorf("%w: recall=1 is asked of a node of a sharded cluster only", engine.ErrInvalidCommand)
	}
	if cmd.RequestID == "" {
		return nil, fmt.Errorf("%w: recall=1 needs the claim's request id", engine.ErrInvalidCommand)
	}
	jobs, err := rc.RecallClaim(cmd.RequestID)
	if err != nil {
		return nil, err
	}
	if jobs == nil {
		jobs = []engine.ClaimedJob{}
	}
	return &engine.ClaimResult{Jobs: jobs}, nil
}

// releaseTimeout bounds how long the server tries to give back the jobs of
// a claim whose caller went away.
const releaseTimeout = 10 * time.Second

// releaseClaimed gives back the jobs of a claim nobody will receive: each
// is requeued at once, fenced by the lease the claim took
// (engine.ReasonReleased), instead of sitting Running, leased to nobody,
// until its lease runs out. A job whose lease moved on already (its
// claimer learned of it by retrying the claim's request id, and gave it
// back or drives it) is left alone: the fence refuses the requeue.
func (s *Server) releaseClaimed(ctx context.Context, jobs []engine.ClaimedJob) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	for _, j := range jobs {
		_, err := s.cfg.Service.Requeue(ctx, engine.Requeue{LeaseRef: j.Lease(), Reason: engine.ReasonReleased})
		if err != nil && !errors.Is(err, engine.ErrStaleAttempt) && s.cfg.Logger != nil {
			s.cfg.Logger.Warn("httpapi: could not give back a job whose claimer went away; it is left to its lease",
				"job", j.Job, "error", err)
		}
	}
}

// readyChecker is implemented by *embedded.Engine: it says from local state
// whether a claim could find anything.
type readyChecker interface {
	MayHaveReady(queue string) (bool, error)
}

// claimWait claims, and while nothing was claimed waits for the next commit
// and tries again, until wait is over. The claim itself is proposed without
// the request's cancellation: a claim the log applies after its caller went
// away leaves jobs leased to nobody until their leases expire, so it is
// never abandoned half-way; only the waiting between claims is bounded.
func (s *Server) claimWait(ctx context.Context, cmd engine.Claim, wait time.Duration) ([]engine.ClaimedJob, error) {
	svc := s.cfg.Service
	claim := func() ([]engine.ClaimedJob, error) { return svc.Claim(context.WithoutCancel(ctx), cmd) }
	if wait <= 0 {
		return claim()
	}
	pctx, cancel := s.pollContext(ctx, wait)
	defer cancel()
	cm, ok := svc.(committer)
	if !ok {
		// The Service cannot say when to look again, so it waits itself.
		jobs, err := svc.ClaimWait(pctx, cmd)
		if err != nil && pctx.Err() != nil && isContextError(err) {
			return nil, s.pollEnded() // the wait is over: answer empty, the client asks again
		}
		return jobs, err
	}
	rc, canLook := svc.(readyChecker)
	for {
		changed := cm.Committed() // before the claim, so no commit is missed
		ready := true
		if canLook {
			// An idle queue costs no proposal (in a cluster, no Raft entry
			// per poll); the commit that makes a job ready wakes this loop.
			var err error
			if ready, err = rc.MayHaveReady(cmd.Queue); err != nil {
				return nil, err
			}
		}
		if ready {
			jobs, err := claim()
			if err != nil || len(jobs) > 0 {
				return jobs, err
			}
		}
		select {
		case <-changed:
		case <-pctx.Done():
			return nil, s.pollEnded()
		}
	}
}

// waitClosed answers the job's record once it is terminal; with a wait
// that ends first it answers the record as it is then, and the client
// sees it still open and asks again.
func (s *Server) waitClosed(c *call) (any, error) {
	t, err := c.target()
	if err != nil {
		return nil, err
	}
	wait, err := c.waitParam(0)
	if err != nil {
		return nil, err
	}
	if wait > 0 {
		pctx, cancel := s.pollContext(c.r.Context(), wait)
		defer cancel()
		j, err := s.cfg.Service.WaitClosed(pctx, t)
		if err == nil || pctx.Err() == nil || c.r.Context().Err() != nil || !isContextError(err) {
			return j, err
		}
		if err := s.pollEnded(); err != nil {
			return nil, err
		}
	}
	return s.cfg.Service.Describe(c.r.Context(), t)
}

// waitClosing answers the run's record and the event that closed it once
// it is terminal; with a wait that ends first it answers the record as it
// is then, with no event, and the client sees it still open and asks
// again.
func (s *Server) waitClosing(c *call) (any, error) {
	t, err := c.target()
	if err != nil {
		return nil, err
	}
	wait, err := c.waitParam(0)
	if err != nil {
		return nil, err
	}
	ctx := c.r.Context()
	if wait > 0 {
		pctx, cancel := s.pollContext(ctx, wait)
		defer cancel()
		cl, err := engine.WaitClosing(pctx, s.cfg.Service, t)
		if err == nil || pctx.Err() == nil || ctx.Err() != nil || !isContextError(err) {
			return cl, err
		}
		if err := s.pollEnded(); err != nil {
			return nil, err
		}
	}
	j, err := s.cfg.Service.Describe(ctx, t)
	if err != nil {
		return nil, err
	}
	if !j.Status.Terminal() {
		return &engine.Closing{Job: *j}, nil
	}
	return engine.ClosingOf(ctx, s.cfg.Service, j)
}

// watchHistory is a history read with a wait: a long poll that answers as
// soon as the job has events after after, or an empty page when the wait is
// over. It is served from this node's own state (Service.WatchHistory), so
// a follower answers it without asking the leader.
func (s *Server) watchHistory(c *call, id engine.JobID, after uint64, limit int, wait time.Duration) (any, error) {
	pctx, cancel := s.pollContext(c.r.Context(), wait)
	defer cancel()
	page, err := s.cfg.Service.WatchHistory(pctx, id, after, limit)
	if err == nil || pctx.Err() == nil || c.r.Context().Err() != nil || !isContextError(err) {
		return page, err
	}
	if err := s.pollEnded(); err != nil {
		return nil, err
	}
	return &engine.HistoryPage{Events: []engine.Event{}}, nil
}
