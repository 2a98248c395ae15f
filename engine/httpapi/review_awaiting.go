package httpapi

import (
	"context"
	"net/url"
	"strconv"

	"github.com/heddlewf/heddle/engine"
)

// awaitingPath lists the tasks of every job that await a person.
const awaitingPath = "/v1/tasks/awaiting"

// listAwaiting answers GET /v1/tasks/awaiting: ?state= (a name such as
// APPROVAL_REQUIRED), ?queue=, ?type=, ?after= and ?limit=, which the
// engine checks.
func listAwaiting(ts engine.ReviewService, c *call) (any, error) {
	q := c.r.URL.Query()
	aq := engine.AwaitingQuery{Queue: q.Get("queue"), Type: q.Get("type")}
	if st := q.Get("state"); st != "" {
		var err error
		if aq.State, err = engine.ParseReviewState(st); err != nil {
			return nil, err
		}
	}
	after, err := c.uintParam("after")
	if err != nil {
		return nil, err
	}
	aq.After = engine.ReviewID(after)
	if aq.Limit, err = c.limitParam(); err != nil {
		return nil, err
	}
	return ts.ListAwaitingReviews(c.r.Context(), aq)
}

// ListAwaitingReviews implements engine.ReviewService.
func (c *Client) ListAwaitingReviews(ctx context.Context, aq engine.AwaitingQuery) (*engine.AwaitingPage, error) {
	q := url.Values{}
	if aq.State != engine.ReviewNone {
		q.Set("state", aq.State.String())
	}
	if aq.Queue != "" {
		q.Set("queue", aq.Queue)
	}
	if aq.Type != "" {
		q.Set("type", aq.Type)
	}
	if aq.After != 0 {
		q.Set("after", strconv.FormatUint(uint64(aq.After), 10))
	}
	if aq.Limit != 0 {
		q.Set("limit", strconv.Itoa(aq.Limit))
	}
	return read[engine.AwaitingPage](ctx, c, awaitingPath, q)
}
