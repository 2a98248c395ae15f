package httpapi

import (
	"context"
	"fmt"
	"net/url"
	"strconv"

	"github.com/heddlewf/heddle/engine"
)

// batchRoutes registers the batch operation routes (Temporal's
// StartBatchOperation, StopBatchOperation, DescribeBatchOperation and
// ListBatchOperations). Starting and stopping a batch acts on many runs at
// once, so it needs an admin, as a reset does; reading batches a reader.
// A Service that does not implement engine.BatchService answers them
// ErrNoRoute.
func (s *Server) batchRoutes() {
	bs, ok := s.cfg.Service.(engine.BatchService)
	if !ok {
		return
	}
	s.handle("POST /v1/batches", RoleAdmin, command(bs.StartBatch))
	s.handle("POST /v1/batches/stop", RoleAdmin, command(bs.StopBatch))
	s.handle("GET /v1/batches", RoleReader, func(c *call) (any, error) {
		limit, err := c.limitParam()
		if err != nil {
			return nil, err
		}
		return bs.ListBatches(c.r.Context(), engine.BatchListQuery{After: c.r.URL.Query().Get("after"), Limit: limit})
	})
	s.handle("GET /v1/batches/{batch}", RoleReader, func(c *call) (any, error) {
		id := c.r.PathValue("batch")
		if id == "" {
			return nil, fieldMissing("describing a batch", "an id")
		}
		return bs.DescribeBatch(c.r.Context(), id)
	})
}

var _ engine.BatchService = (*Client)(nil)

// StartBatch implements engine.BatchService. A batch without an id gets
// one here, so that a retry of the request starts the same batch.
func (c *Client) StartBatch(ctx context.Context, cmd engine.StartBatch) (*engine.BatchResult, error) {
	if cmd.ID == "" {
		cmd.ID = randomID("batch-")
	}
	return send[engine.BatchResult](ctx, c, "/v1/batches", &cmd, &cmd.Header)
}

// StopBatch implements engine.BatchService.
func (c *Client) StopBatch(ctx context.Context, cmd engine.StopBatch) (*engine.BatchResult, error) {
	return send[engine.BatchResult](ctx, c, "/v1/batches/stop", &cmd, &cmd.Header)
}

// DescribeBatch implements engine.BatchService.
func (c *Client) DescribeBatch(ctx context.Context, id string) (*engine.Batch, error) {
	if id == "" {
		return nil, fmt.Errorf("%w: a batch id is required", engine.ErrInvalidCommand)
	}
	return read[engine.Batch](ctx, c, "/v1/batches/"+url.PathEscape(id), nil)
}

// ListBatches implements engine.BatchService.
func (c *Client) ListBatches(ctx context.Context, lq engine.BatchListQuery) (*engine.BatchListPage, error) {
	q := url.Values{}
	if lq.After != "" {
		q.Set("after", lq.After)
	}
	if lq.Limit != 0 {
		q.Set("limit", strconv.Itoa(lq.Limit))
	}
	return read[engine.BatchListPage](ctx, c, "/v1/batches", q)
}
