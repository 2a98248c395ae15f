package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/internal/backoff"
)

// request is one call the Client makes, tried as often as needed.
type request struct {
	method string
	path   string // escaped
	query  url.Values
	body   any // nil: no body
	out    any // decoded from a 200 answer; nil: ignore it
	// wait is the long poll's wait, which the try's timeout must allow for.
	wait time.Duration
	// command marks a write: when a try breaks off, the write may or may
	// not have been applied.
	command bool
	// noRoute sends the request to the node the client prefers even on
	// a sharded cluster (the shard map's own fetch, a poll of one node);
	// routed says do sent it to its shard's leader by the map.
	noRoute, routed bool
}

// transportError is a try that got no answer: no connection, a broken one,
// or a timeout. The call is tried again.
type transportError struct {
	addr string
	err  error
}

func (e *transportError) Error() string { return fmt.Sprintf("httpapi: %s: %v", e.addr, e.err) }
func (e *transportError) Unwrap() error { return e.err }

// retryable reports whether another node, or the same one later, may answer
// differently: no answer at all, or 503 (no leader, outcome unknown, closed).
// A 502 or 504 without a heddle error body comes from a proxy in between.
func retryable(err error) bool {
	var te *transportError
	if errors.As(err, &te) {
		return true
	}
	var re *RemoteError
	if errors.As(err, &re) {
		return re.Status == http.StatusServiceUnavailable ||
			((re.Status == http.StatusBadGateway || re.Status == http.StatusGatewayTimeout) && re.Body.Name == "")
	}
	return false
}

// do makes the call, retrying as the Client's doc describes.
func (c *Client) do(ctx context.Context, rq request) error {
	payload, err := encodeRequestBody(rq.body)
	if err != nil {
		return err
	}
	base := c.preferred()
	if leader, _ := c.routeOf(ctx, rq); leader != "" {
		// On a sharded cluster the shard's leader, by the map; a stale map
		// costs one forward.
		base, rq.routed = leader, true
	}
	var giveUpAt time.Time
	bo := newBackoff()
	// mayHaveLanded: some try failed after its request may have left (a
	// broken or timed-out exchange, an answer that the outcome is
	// unknown), not before it (a connection refused).
	mayHaveLanded := false
	for {
		hint, err := c.try(ctx, base, rq, payload)
		if err == nil || !retryable(err) {
			if rq.routed || c.pinned {
				// The preferred node is the one unrouted requests go to;
				// a shard's leader answering says nothing of it. A node's
				// reader of one shard starts every read at the leader it
				// was made for: a follower that answered once, while the
				// leader was away, would answer its pinned reads from its
				// own replica after the leader came back.
			} else if err == nil || errors.As(err, new(*RemoteError)) {
				c.setPreferred(base) // it answered: ask it first next time
			}
			return err
		}
		if !notSent(err) {
			mayHaveLanded = true
		}
		if rq.routed {
			c.shards.markStale() // the map led to a node that did not answer
			rq.routed = false
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if c.cfg.OnRetry != nil {
			if stop := c.cfg.OnRetry(base, err); stop != nil {
				return stop
			}
		}
		now := time.Now()
		if giveUpAt.IsZero() {
			giveUpAt = now.Add(c.cfg.RetryTimeout)
		}
		if !now.Before(giveUpAt) {
			return giveUp(rq, err, mayHaveLanded)
		}
		if hint != "" {
			base = hint
		} else {
			base = c.after(base)
		}
		if err := backoff.Sleep(ctx, min(bo.Next(), giveUpAt.Sub(now))); err != nil {
			return err
		}
	}
}

// encodeRequestBody returns a request body's msgpack bytes, nil for no body.
func encodeRequestBody(body any) ([]byte, error) {
	if body == nil {
		return nil, nil
	}
	b, err := msgpack.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("httpapi: encoding %s: %w", typeName(body), err)
	}
	return b, nil
}

// giveUp is the error of a call whose every try failed: the last answer,
// or, when the last try got none, ErrUnknownOutcome for a command that
// some try may have delivered (mayHaveLanded), and the transport error
// for a read or for a command that never left (every node refused the
// connection: nothing was applied, and sending it again is safe).
func giveUp(rq request, err error, mayHaveLanded bool) error {
	var te *transportError
	if rq.command && mayHaveLanded && errors.As(err, &te) {
		return fmt.Errorf("%w: %s %s: %w", engine.ErrUnknownOutcome, rq.method, rq.path, err)
	}
	return err
}

// notSent reports whether a try's request was certainly not applied: it
// failed before it could leave (the connection was never made: refused,
// no route, an unknown host), or a node answered that it does not lead
// (a forwarded request is not forwarded again, so whatever node answered
// not-leader applied nothing). Anything else, a TLS handshake that failed
// included, counts as possibly applied.
func notSent(err error) bool {
	var te *transportError
	if errors.As(err, &te) {
		return dialFailed(te.err)
	}
	var re *RemoteError
	return errors.As(err, &re) && errors.Is(re, engine.ErrNotLeader)
}

// try makes one attempt at base. It returns the leader a node named, if any.
func (c *Client) try(ctx context.Context, base string, rq request, payload []byte) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.RequestTimeout+rq.wait)
	defer cancel()
	u := base + rq.path
	if len(rq.query) > 0 {
		u += "?" + rq.query.Encode()
	}
	var body io.Reader
	if payload != nil {
		body = bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(ctx, rq.method, u, body)
	if err != nil {
		return "", fmt.Errorf("httpapi: %w", err)
	}
	if payload != nil {
		req.Header.Set("Content-Type", contentMsgpack)
	}
	req.Header.Set("Accept", contentMsgpack)
	injectTrace(ctx, req.Header)
	if c.cfg.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.Token)
	}
	if c.cfg.Headers != nil {
		hs, err := c.cfg.Headers(ctx)
		if err != nil {
			return "", fmt.Errorf("httpapi: the headers of %s %s: %w", rq.method, rq.path, err)
		}
		for k, v := range hs {
			req.Header.Set(k, v)
		}
	}
	resp, err := c.cfg.HTTPClient.Do(req)
	if err != nil {
		return "", &transportError{addr: base, err: err}
	}
	// The body is read to its end or to the limit below; a failure to close
	// it only costs the connection, which the transport then drops.
	defer func() { _ = resp.Body.Close() }()
	c.shards.noteHeaders(resp.Header, rq.routed)
	b, err := io.ReadAll(io.LimitReader(resp.Body, c.cfg.MaxResponseBytes+1))
	if err != nil {
		return "", &transportError{addr: base, err: err}
	}
	if int64(len(b)) > c.cfg.MaxResponseBytes {
		return "", fmt.Errorf("httpapi: the answer of %s %s is over ClientConfig.MaxResponseBytes (%d)", rq.method, rq.path, c.cfg.MaxResponseBytes)
	}
	if resp.StatusCode != http.StatusOK {
		re := decodeError(resp.StatusCode, resp.Header.Get("Content-Type"), b)
		if re.Body.LeaderHTTP != "" {
			return hintURL(base, re.Body.LeaderHTTP), re
		}
		return "", re
	}
	noteReadInfo(ctx, resp.Header)
	if rq.out == nil {
		return "", nil
	}
	f, _ := parseFormat(resp.Header.Get("Content-Type"))
	if err := decodeAnswer(f, b, rq.out); err != nil {
		return "", fmt.Errorf("httpapi: the answer of %s %s from %s: %w", rq.method, rq.path, base, err)
	}
	return "", nil
}

// decodeAnswer decodes a successful answer. Unlike a request, an answer
// may carry fields this version does not know (a newer server).
func decodeAnswer(f format, b []byte, v any) error {
	if f == formatMsgpack {
		if err := checkMsgpack(b); err != nil {
			return fmt.Errorf("not a valid msgpack %s: %w", typeName(v), err)
		}
		return msgpack.Unmarshal(b, v)
	}
	return json.Unmarshal(b, v)
}

// decodeError reads an error answer. A body that is not an ErrorBody (a
// proxy's page, say) still gives a RemoteError, with the status and the
// start of the body as its message.
func decodeError(status int, contentType string, b []byte) *RemoteError {
	re := &RemoteError{Status: status}
	if f, ok := parseFormat(contentType); ok && decodeAnswer(f, b, &re.Body) == nil && re.Body.Name != "" {
		return re
	}
	snippet := string(b[:min(len(b), 200)])
	re.Body = ErrorBody{Message: fmt.Sprintf("httpapi: HTTP %d %s: %q", status, http.StatusText(status), snippet)}
	return re
}

// pollWait is the wait of the next long poll under ctx: PollWait, or less
// when ctx ends sooner; 0 when ctx has (nearly) ended.
func (c *Client) pollWait(ctx context.Context) time.Duration {
	w := c.cfg.PollWait
	if d, ok := ctx.Deadline(); ok {
		w = min(w, time.Until(d))
	}
	if w < time.Millisecond {
		return 0
	}
	return w.Truncate(time.Millisecond)
}

// waitQuery is the query string of a long poll.
func waitQuery(w time.Duration) url.Values {
	return url.Values{"wait": {strconv.FormatInt(w.Milliseconds(), 10) + "ms"}}
}
