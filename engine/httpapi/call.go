package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/heddlewf/heddle/engine"
)

// call is one request being served: the request, its buffered body (kept
// so it can be forwarded to the leader as it came) and the answer's format.
type call struct {
	s    *Server
	w    http.ResponseWriter
	r    *http.Request
	body []byte
	// reserved is how much of the Server's body budget the call holds.
	reserved int64
	out      format
	// noForward answers a not-leader error with the leader's address
	// instead of forwarding the request there (a join, which the leader
	// must see come from the joining node itself).
	noForward bool
}

// readBody buffers the body, refusing one over MaxBodyBytes with 413
// before anything is decoded (before anything is read, when its
// Content-Length says so). Its bytes are reserved from the Server's body
// budget first, twice over (see decodedShare), and held until the request
// is answered (call.release): a body with a Content-Length is read into
// one buffer of exactly that size; one without grows in reserved steps. A request that cannot reserve its
// bytes within bodyBudgetWait is answered 503 (ErrBusy), and its client
// tries again.
func (c *call) readBody() error {
	if c.r.Body == nil || c.r.Body == http.NoBody {
		return nil
	}
	limit := c.s.cfg.MaxBodyBytes
	if n := c.r.ContentLength; n > limit {
		return bodyTooLarge(limit)
	}
	ctx, cancel := context.WithTimeout(c.r.Context(), c.s.budget.wait)
	defer cancel()
	body := http.MaxBytesReader(c.w, c.r.Body, limit)
	if n := c.r.ContentLength; n >= 0 {
		if err := c.reserveBody(ctx, n); err != nil {
			return err
		}
		buf := make([]byte, n)
		if got, err := io.ReadFull(body, buf); err != nil {
			return c.bodyReadError(int64(got), err)
		}
		// One more read meets the body's end, which is when net/http
		// starts watching the connection for the client going away (and
		// ends a long poll whose caller left).
		if _, err := body.Read(make([]byte, 1)); err != nil && !errors.Is(err, io.EOF) {
			return c.bodyReadError(n, err)
		}
		c.body = buf
		return nil
	}
	var buf []byte
	for {
		if len(buf) == cap(buf) {
			grown := slices.Grow(buf, bodyStep)
			if err := c.reserveBody(ctx, int64(cap(grown)-cap(buf))); err != nil {
				return err
			}
			buf = grown
		}
		n, err := body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		var tooBig *http.MaxBytesError
		switch {
		case errors.Is(err, io.EOF):
			c.body = buf
			return nil
		case errors.As(err, &tooBig):
			return bodyTooLarge(tooBig.Limit)
		case err != nil:
			return c.bodyReadError(int64(len(buf)), err)
		}
	}
}

// bodyReadError says why a body could not be read, got bytes into it: it
// came too slowly (ReadTimeout passed; 408), or its connection ended
// before its Content-Length (400). Either way the fault is the client's,
// and the answer reaches it if it still listens.
func (c *call) bodyReadError(got int64, err error) error {
	of := ""
	if n := c.r.ContentLength; n >= 0 {
		of = fmt.Sprintf(" of its %d", n)
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("%w: %d bytes%s came within the server's read timeout (%v)", ErrBodyTimeout, got, of, c.s.cfg.ReadTimeout)
	}
	return fmt.Errorf("%w: the request body ended after %d bytes%s: %v", engine.ErrInvalidCommand, got, of, err)
}

// bodyStep is how much more a body of unknown length reserves at a time.
const bodyStep = 64 << 10

// bodyBudgetWait bounds the wait for a body's bytes to be free in the
// budget; then the request is answered 503 and its client tries again.
const bodyBudgetWait = 5 * time.Second

// decodedShare is how many bytes of the budget a body's byte takes: its
// own, and one more for the values decoded from it, which hold about as
// much (a msgpack payload is copied out of the body whole, a JSON one
// base64-decoded to three quarters of its length) until the request is
// answered.
const decodedShare = 2

// reserveBody reserves the budget n more body bytes take, decodedShare
// each, but never more in all than the whole budget, which must always
// fit one body of MaxBodyBytes.
func (c *call) reserveBody(ctx context.Context, n int64) error {
	return c.reserve(ctx, min(decodedShare*n, c.s.budget.max-c.reserved))
}

// reserve reserves n more bytes of the body budget for this request.
func (c *call) reserve(ctx context.Context, n int64) error {
	if err := c.s.budget.acquire(ctx, n); err != nil {
		return fmt.Errorf("%w: %d bytes of request bodies are in memory, the limit (ServerConfig.MaxInflightBodyBytes is %d); try again",
			ErrBusy, c.s.budget.inUse(), c.s.budget.max)
	}
	c.reserved += n
	return nil
}

// release gives the request's reserved body bytes back; the handler calls
// it once the request has been answered.
func (c *call) release() {
	c.s.budget.release(c.reserved)
	c.reserved = 0
}

func bodyTooLarge(limit int64) error {
	return fmt.Errorf("%w: the request body is over the limit of %d bytes (ServerConfig.MaxBodyBytes)", engine.ErrPayloadTooLarge, limit)
}

// decode decodes the body into v, in the format its Content-Type names.
// A command's header gets the caller's name as its By, whatever the body
// said: who issued a command is the server's to say.
func (c *call) decode(v any) error {
	f := formatJSON
	if len(c.body) > 0 {
		// An empty body is refused below as empty, whatever its type.
		var err error
		if f, err = requestFormat(c.r); err != nil {
			return err
		}
	}
	if err := decodeBody(f, c.body, v); err != nil {
		return err
	}
	if cmd, ok := v.(interface{ Head() *engine.Header }); ok {
		cmd.Head().By = identityOf(c.r).Name
	}
	return nil
}

// reply writes v with status.
func (c *call) reply(status int, v any) {
	b, err := encodeBody(c.out, v)
	if err != nil {
		status, body := errorFor(fmt.Errorf("httpapi: encoding the answer: %w", err))
		b, _ = encodeBody(c.out, body)
		c.write(status, b)
		return
	}
	c.write(status, b)
}

func (c *call) write(status int, b []byte) {
	c.w.Header().Set("Content-Type", c.out.contentType())
	c.w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	c.w.WriteHeader(status)
	_, _ = c.w.Write(b) // the client may be gone; nothing more can be done
}

// fail answers err: it forwards the request to the leader when err names
// one and the request has not been forwarded already, and otherwise
// writes err's status and ErrorBody.
func (c *call) fail(err error) {
	var nl *engine.NotLeaderError
	if errors.As(err, &nl) && nl.LeaderHTTP != "" && c.r.Header.Get(forwardedHeader) == "" && !c.noForward && !callerOf(c.r).byCert {
		var unheld *unheldShardError
		errors.As(err, &unheld)
		c.forward(nl, unheld)
		return
	}
	status, body := errorFor(err)
	c.logFailure(status, body)
	c.reply(status, body)
}

// jobParam parses the {job} path segment.
func (c *call) jobParam() (engine.JobID, error) {
	s := c.r.PathValue("job")
	id, err := strconv.ParseUint(s, 10, 64)
	if err != nil || id == 0 {
		return 0, fmt.Errorf("%w: job id %q in the path is not a positive integer", engine.ErrInvalidCommand, s)
	}
	return engine.JobID(id), nil
}

// target reads the job or workflow the path names.
func (c *call) target() (engine.Target, error) {
	if wf := c.r.PathValue("workflow"); wf != "" {
		return engine.Target{WorkflowID: wf}, nil
	}
	id, err := c.jobParam()
	return engine.Target{Job: id}, err
}

// uintParam parses an optional unsigned query parameter (0 when absent).
func (c *call) uintParam(name string) (uint64, error) {
	s := c.r.URL.Query().Get(name)
	if s == "" {
		return 0, nil
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: query parameter %s=%q is not an unsigned integer", engine.ErrInvalidCommand, name, s)
	}
	return v, nil
}

// limitParam parses the optional limit parameter; the Service checks its range.
func (c *call) limitParam() (int, error) {
	s := c.r.URL.Query().Get("limit")
	if s == "" {
		return 0, nil
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%w: query parameter limit=%q is not an integer", engine.ErrInvalidCommand, s)
	}
	return v, nil
}

// waitParam parses the optional wait parameter, a Go duration, capped at
// MaxWait; def is used when it is absent.
func (c *call) waitParam(def time.Duration) (time.Duration, error) {
	s := c.r.URL.Query().Get("wait")
	if s == "" {
		return min(def, c.s.cfg.MaxWait), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%w: query parameter wait=%q is not a duration like 30s", engine.ErrInvalidCommand, s)
	}
	return min(d, c.s.cfg.MaxWait), nil
}
