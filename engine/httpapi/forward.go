package httpapi

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"

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
// an unauthenticated request could have named. When the leader cannot be
// reached the outcome of a command is unknown (it may have been applied
// before the connection broke), so the client is told to retry, with the
// hint. A node that could not be connected to, or that answers not-leader,
// took nothing, so the other nodes of the shard that nl names are tried in
// turn (a sharded node without a replica of the shard names them). Such a
// node (unheld is not nil) learns the shard's leader from the node that
// applies a forwarded command.
func (c *call) forward(nl *engine.NotLeaderError, unheld *unheldShardError) {
	// The leader nl names first, then the other nodes of the shard it
	// names, one of which leads. A node that answers not-leader applied
	// nothing (a forwarded request is not forwarded again), so the next is
	// tried; each address once.
	queue := append([]string{nl.LeaderHTTP}, nl.Others...)
	tried := map[string]bool{}
	var refused *http.Response // the last not-leader answer, relayed when no node takes the request
	var refusedBody []byte
	var refusedBy string
	var dialErr error
	for len(queue) > 0 {
		to := queue[0]
		queue = queue[1:]
		if to == "" || tried[to] {
			continue
		}
		tried[to] = true
		resp, body, err := c.send(to)
		if err != nil {
			// A dial that failed sent nothing, so another node may take
			// the request: a node without a replica of the shard knows
			// only its desired leader, whose node may be down.
			if dialFailed(err) {
				dialErr = err
				continue
			}
			c.failForward(nl, to, err)
			return
		}
		by := ""
		if to == nl.LeaderHTTP {
			by = nl.LeaderID
		}
		if len(queue) > 0 && resp.StatusCode == http.StatusServiceUnavailable &&
			decodeError(resp.StatusCode, resp.Header.Get("Content-Type"), body).Body.Name == "not_leader" {
			refused, refusedBody, refusedBy = resp, body, by
			continue
		}
		if unheld != nil && unheld.teaches && resp.StatusCode == http.StatusOK && c.r.Method != http.MethodGet {
			// A forwarded command is applied by the shard's leader alone
			// (a follower answers it not-leader): the node at to leads.
			// Reads teach nothing: a follower serves some (a stale read, a
			// history long poll, the wait for a run that has closed).
			if sr, ok := c.s.cfg.Service.(*ShardRouter); ok && to != nl.LeaderHTTP {
				sr.set.NoteShardLeader(unheld.shard, to)
			}
		}
		c.relay(resp, body, by)
		return
	}
	if refused != nil {
		c.relay(refused, refusedBody, refusedBy)
		return
	}
	// No node could be connected to: the request went nowhere, so this
	// node answers what it is, not the leader of the shard, and names the
	// nodes it tried, not only the leader it knows of.
	why := "no address of its nodes is known"
	if dialErr != nil {
		why = fmt.Sprintf("%s could not be connected to (the last: %v)", strings.Join(slices.Sorted(maps.Keys(tried)), ", "), dialErr)
	}
	status, body := errorFor(fmt.Errorf("%w: forwarding %s %s to the shard's nodes: %s; nothing was sent",
		nl, c.r.Method, c.r.URL.Path, why))
	c.reply(status, body)
}

// relay writes a forwarded request's answer, naming the node that gave it.
func (c *call) relay(resp *http.Response, body []byte, by string) {
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		c.w.Header().Set("Content-Type", ct)
	}
	c.w.Header().Set(forwardedByHeader, by)
	c.w.WriteHeader(resp.StatusCode)
	_, _ = c.w.Write(body) // the client may be gone; nothing more can be done
}

// send sends the request, with its buffered body, to the node at addr,
// marked as forwarded, and returns the answer with its body read.
func (c *call) send(addr string) (*http.Response, []byte, error) {
	url := c.s.cfg.ForwardScheme + "://" + addr + c.r.URL.RequestURI()
	req, err := http.NewRequestWithContext(c.r.Context(), c.r.Method, url, bytes.NewReader(c.body))
	if err != nil {
		return nil, nil, err
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
		return nil, nil, err
	}
	// The body is read to its end; a failure to close it only costs the
	// connection, which the transport then drops.
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, err
	}
	return resp, body, nil
}

// dialFailed reports whether err is a failure to connect: the request
// was not sent.
func dialFailed(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// failForward answers a forward to the node at to that broke off after it
// was sent: its outcome is unknown. The not-leader error travels along,
// so the client learns where the leader is.
func (c *call) failForward(nl *engine.NotLeaderError, to string, err error) {
	who := "the leader " + nl.LeaderID + " at " + to
	if to != nl.LeaderHTTP || nl.LeaderID == "" {
		who = "the shard's node at " + to
	}
	status, body := errorFor(fmt.Errorf("%w: forwarding %s %s to %s failed: %v (%w)",
		engine.ErrUnknownOutcome, c.r.Method, c.r.URL.Path, who, err, nl))
	c.reply(status, body)
}
