package httpapi

import (
	"context"
	"crypto/subtle"
	"fmt"
	"net/http"
	"strings"

	"github.com/heddlewf/heddle/engine"
)

// Server serves an engine.Service (and optionally a Cluster) over HTTP. It
// is an http.Handler, safe for concurrent use; mount it on any http.Server.
type Server struct {
	cfg    ServerConfig
	mux    *http.ServeMux
	broker *broker
	// closing ends every long poll when Close is called, so an
	// http.Server's Shutdown does not wait out their MaxWait.
	closing context.Context
	close   context.CancelFunc
	// handler is serve, wrapped with the metrics and spans cfg asks for.
	handler http.Handler
}

// NewServer returns a Server for cfg.
func NewServer(cfg ServerConfig) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg.withDefaults(), mux: http.NewServeMux(), broker: newBroker()}
	s.closing, s.close = context.WithCancel(context.Background())
	s.routes()
	s.handler = instrument(s.cfg, http.HandlerFunc(s.serve))
	return s, nil
}

// Close ends the long polls in progress (they answer as if they had timed
// out) and makes later ones answer at once. Call it before shutting the
// http.Server down. The Server goes on answering everything else.
func (s *Server) Close() { s.close() }

// routes registers every route; doc.go lists them.
func (s *Server) routes() {
	svc := s.cfg.Service
	s.handle("POST /v1/jobs", command(svc.Create))
	s.handle("POST /v1/jobs/claim", s.claim)
	s.handle("POST /v1/jobs/heartbeat", command(svc.Heartbeat))
	s.handle("POST /v1/jobs/append", command(svc.Append))
	s.handle("POST /v1/jobs/commit-step", command(svc.CommitStep))
	s.handle("POST /v1/jobs/wait", command(svc.Wait))
	s.handle("POST /v1/jobs/signal", command(svc.Signal))
	s.handle("POST /v1/jobs/cancel", command(svc.Cancel))
	s.handle("POST /v1/jobs/activate", command(svc.Activate))
	s.handle("POST /v1/jobs/suspend", command(svc.Suspend))
	s.handle("POST /v1/jobs/resume", command(svc.Resume))
	s.handle("POST /v1/jobs/complete", command(svc.Complete))
	s.handle("POST /v1/jobs/fail", command(svc.Fail))
	s.handle("POST /v1/jobs/requeue", command(svc.Requeue))
	s.handle("POST /v1/jobs/request-cancel", command(svc.RequestCancel))
	s.handle("POST /v1/jobs/continue-as-new", command(svc.ContinueAsNew))
	s.handle("POST /v1/jobs/terminate", command(svc.Terminate))

	s.handle("GET /v1/jobs", s.list)
	s.handle("GET /v1/jobs/{job}", s.describe)
	s.handle("GET /v1/workflows/{workflow}", s.describe)
	s.handle("GET /v1/jobs/{job}/history", s.history)
	s.handle("GET /v1/jobs/{job}/effects/{step...}", s.effect)
	s.handle("GET /v1/jobs/{job}/closed", s.waitClosed)
	s.handle("GET /v1/workflows/{workflow}/closed", s.waitClosed)

	s.handle("POST /v1/query", s.query)
	s.handle("POST /v1/query/poll", s.queryPoll)
	s.handle("POST /v1/query/answer", s.queryAnswer)

	s.handle("GET /v1/cluster", s.clusterStatus)
	s.handle("POST /v1/cluster/members", s.clusterJoin)
	s.handle("DELETE /v1/cluster/members/{id}", s.clusterRemove)
	s.handle("POST /v1/cluster/leader/transfer", s.clusterTransfer)

	s.healthRoutes()
	s.taskRoutes()

	// Everything else, including a known path with another method, gets
	// the same error body as any other failure rather than the mux's
	// plain-text 404 or 405.
	s.handle("/", func(c *call) (any, error) {
		return nil, fmt.Errorf("%w: %s %s", ErrNoRoute, c.r.Method, c.r.URL.Path)
	})
}

// ServeHTTP serves one request (see serve), recording its metrics and span
// when ServerConfig asks for them.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// serve checks the bearer token (health probes need none), then routes
// the request.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if s.cfg.AuthToken != "" && !isProbe(r) && !s.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="heddle"`)
		c := &call{s: s, w: w, r: r, out: responseFormat(r)}
		c.fail(fmt.Errorf("%w: this server needs \"Authorization: Bearer <token>\"", ErrUnauthorized))
		return
	}
	s.mux.ServeHTTP(w, r)
}

// authorized compares the token in constant time, so its bytes cannot be
// guessed one at a time from response times.
func (s *Server) authorized(r *http.Request) bool {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(token), []byte(s.cfg.AuthToken)) == 1
}

// handler serves one route: it returns the value to answer with, or an error.
type handler func(c *call) (any, error)

func (s *Server) handle(pattern string, h handler) {
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Query().Get("stale") {
		case "", "0", "false":
		case "1", "true":
			// The node answers from its own state, which may lag the
			// leader's; without it a read is linearizable.
			r = r.WithContext(engine.WithStaleRead(r.Context()))
		default:
			c := &call{s: s, w: w, r: r, out: responseFormat(r)}
			c.fail(fmt.Errorf("%w: stale=%q: want 1, true, 0 or false", engine.ErrInvalidCommand, r.URL.Query().Get("stale")))
			return
		}
		c := &call{s: s, w: w, r: r, out: responseFormat(r)}
		if err := c.readBody(); err != nil {
			c.fail(err)
			return
		}
		res, err := h(c)
		if err != nil {
			c.fail(err)
			return
		}
		c.reply(http.StatusOK, res)
	})
}

// command serves a command route: decode the command, run it.
func command[C, R any](run func(context.Context, C) (R, error)) handler {
	return func(c *call) (any, error) {
		var cmd C
		if err := c.decode(&cmd); err != nil {
			return nil, err
		}
		return run(c.r.Context(), cmd)
	}
}

func notLeader(id, httpAddr string) error {
	return &engine.NotLeaderError{LeaderID: id, LeaderHTTP: httpAddr}
}

func fieldMissing(what, field string) error {
	return fmt.Errorf("%w: %s needs %s", engine.ErrInvalidCommand, what, field)
}
