package httpapi

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"slices"

	"github.com/heddlewf/heddle/engine"
)

// forwardedHeader marks a request one node sent on to another. A node never
// forwards such a request again: with a stale leader hint two nodes could
// otherwise bounce it between them.
const forwardedHeader = "X-Heddle-Forwarded"

// forwardHeaders are the request headers the leader needs to serve the
// request as the client sent it.
var forwardHeaders = []string{"Content-Type", "Accept", "Authorization"}

// forward sends the request, with its buffered body, to the leader nl
// names and relays the answer. The address is one the cluster itself
// recorded (a leader writes its own into the Raft log, and only a join,
// which needs an admin and, with ClientCAs, the joining node's own
// certificate, writes another's), so the caller's credentials go nowhere
// an unauthenticated request could have named. When the leader cannot be reached the
// outcome of a command is unknown (it may have been applied before the
// connection broke), so the client is told to retry, with the hint.
func (c *call) forward(nl *engine.NotLeaderError) {
	url := c.s.cfg.ForwardScheme + "://" + nl.LeaderHTTP + c.r.URL.RequestURI()
	req, err := http.NewRequestWithContext(c.r.Context(), c.r.Method, url, bytes.NewReader(c.body))
	if err != nil {
		c.failForward(nl, err)
		return
	}
	for _, h := range slices.Concat(forwardHeaders, traceHeaders) {
		if v := c.r.Header.Get(h); v != "" {
			req.Header.Set(h, v)
		}
	}
	injectTrace(c.r.Context(), req.Header) // this node's span, when it traces
	req.Header.Set(forwardedHeader, "1")
	resp, err := c.s.cfg.ForwardClient.Do(req)
	if err != nil {
		c.failForward(nl, err)
		return
	}
	// The body is read to its end; a failure to close it only costs the
	// connection, which the transport then drops.
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		c.failForward(nl, err)
		return
	}
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		c.w.Header().Set("Content-Type", ct)
	}
	c.w.Header().Set(forwardedByHeader, nl.LeaderID)
	c.w.WriteHeader(resp.StatusCode)
	_, _ = c.w.Write(body) // the client may be gone; nothing more can be done
}

// failForward answers a forward that broke off. The not-leader error
// travels along, so the client learns where the leader is.
func (c *call) failForward(nl *engine.NotLeaderError, err error) {
	status, body := errorFor(fmt.Errorf("%w: forwarding %s %s to the leader %s at %s failed: %v (%w)",
		engine.ErrUnknownOutcome, c.r.Method, c.r.URL.Path, nl.LeaderID, nl.LeaderHTTP, err, nl))
	c.reply(status, body)
}
