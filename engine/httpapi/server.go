package httpapi

import (
	"context"
	"crypto/x509"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/internal/pki"
)

// Server serves an engine.Service (and optionally a Cluster) over HTTP. It
// is an http.Handler, safe for concurrent use; mount it on any http.Server.
type Server struct {
	cfg    ServerConfig
	tokens *Tokens // ServerConfig.Tokens with AuthToken
	budget *bodyBudget
	mux    *http.ServeMux
	broker *broker
	// closing ends every long poll when Close is called, so an
	// http.Server's Shutdown does not wait out their MaxWait.
	closing context.Context
	close   context.CancelFunc
	// handler is serve, wrapped with the metrics and spans cfg asks for.
	handler http.Handler
	// cuts and taskCuts are the job and task claim long polls a client
	// may cut (a sharded node's).
	cuts, taskCuts *pollCuts
}

// NewServer returns a Server for cfg.
func NewServer(cfg ServerConfig) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	tokens, err := cfg.allTokens()
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg.withDefaults(), mux: http.NewServeMux(), broker: newBroker(), tokens: tokens, cuts: newPollCuts(), taskCuts: newPollCuts()}
	s.budget = newBodyBudget(s.cfg.MaxInflightBodyBytes)
	s.closing, s.close = context.WithCancel(context.Background())
	if sr, ok := s.cfg.Service.(*ShardRouter); ok {
		// A sharded node reads the shards it follows at their leaders,
		// with this server's forwarding client.
		sr.remote = &shardReaders{s: s}
	}
	s.routes()
	s.handler = instrument(s.cfg, http.HandlerFunc(s.serve))
	return s, nil
}

// Close ends the long polls in progress (they answer as if they had timed
// out) and makes later ones answer at once. Call it before shutting the
// http.Server down. The Server goes on answering everything else.
func (s *Server) Close() { s.close() }

// routes registers every route, with the least role that may call it;
// doc.go lists them.
func (s *Server) routes() {
	svc := s.cfg.Service
	s.handle("POST /v1/jobs", RoleClient, command(svc.Create))
	s.handle("POST /v1/jobs/claim", RoleWorker, s.claim)
	s.handle("POST /v1/jobs/heartbeat", RoleWorker, command(svc.Heartbeat))
	s.handle("POST /v1/jobs/append", RoleWorker, command(svc.Append))
	s.handle("POST /v1/jobs/commit-step", RoleWorker, command(svc.CommitStep))
	s.handle("POST /v1/jobs/wait", RoleWorker, command(svc.Wait))
	s.handle("POST /v1/jobs/signal", RoleClient, command(svc.Signal))
	s.handle("POST /v1/jobs/cancel", RoleClient, command(svc.Cancel))
	s.handle("POST /v1/jobs/activate", RoleClient, command(svc.Activate))
	s.handle("POST /v1/jobs/suspend", RoleClient, command(svc.Suspend))
	s.handle("POST /v1/jobs/resume", RoleClient, command(svc.Resume))
	s.handle("POST /v1/jobs/pause", RoleClient, command(svc.Pause))
	s.handle("POST /v1/jobs/unpause", RoleClient, command(svc.Unpause))
	s.handle("POST /v1/jobs/pause-activity", RoleClient, command(svc.PauseActivity))
	s.handle("POST /v1/jobs/unpause-activity", RoleClient, command(svc.UnpauseActivity))
	s.handle("POST /v1/jobs/reset-activity", RoleClient, command(svc.ResetActivity))
	s.handle("POST /v1/jobs/update-activity-options", RoleClient, command(svc.UpdateActivityOptions))
	s.handle("POST /v1/jobs/complete", RoleWorker, command(svc.Complete))
	s.handle("POST /v1/jobs/fail", RoleWorker, command(svc.Fail))
	s.handle("POST /v1/jobs/requeue", RoleWorker, command(svc.Requeue))
	s.handle("POST /v1/jobs/request-cancel", RoleClient, command(svc.RequestCancel))
	s.handle("POST /v1/jobs/continue-as-new", RoleWorker, command(svc.ContinueAsNew))
	s.handle("POST /v1/jobs/terminate", RoleWorker, s.terminate)
	s.handle("POST /v1/jobs/reset", RoleAdmin, command(svc.Reset))
	s.handle("POST /v1/jobs/lease-step", RoleWorker, command(svc.LeaseStep))
	s.handle("POST /v1/jobs/step-heartbeat", RoleWorker, command(svc.StepHeartbeat))
	s.handle("POST /v1/jobs/end-step-attempt", RoleWorker, command(svc.EndStepAttempt))
	s.handle("POST /v1/jobs/answer-step", RoleClient, command(svc.AnswerStep))
	s.handle("POST /v1/resources", RoleAdmin, command(svc.AddResource))
	s.handle("POST /v1/resources/drain", RoleAdmin, command(svc.DrainResource))
	s.handle("POST /v1/resources/remove", RoleAdmin, command(svc.RemoveResource))

	s.handle("GET /v1/jobs", RoleReader, s.list)
	if wc, ok := svc.(engine.WorkflowCounter); ok {
		s.handle("GET /v1/jobs/count", RoleReader, count(wc))
	}
	s.handle("GET /v1/jobs/{job}", RoleReader, s.describe)
	s.handle("GET /v1/workflows/{workflow}", RoleReader, s.describe)
	s.handle("GET /v1/jobs/{job}/history", RoleReader, s.history)
	s.handle("GET /v1/jobs/{job}/effects/{step...}", RoleReader, s.effect)
	s.handle("GET /v1/jobs/{job}/closed", RoleReader, s.waitClosed)
	s.handle("GET /v1/workflows/{workflow}/closed", RoleReader, s.waitClosed)
	s.handle("GET /v1/jobs/{job}/closing", RoleReader, s.waitClosing)
	s.handle("GET /v1/workflows/{workflow}/closing", RoleReader, s.waitClosing)
	s.handle("GET /v1/jobs/{job}/steps", RoleReader, s.steps)
	s.handle("GET /v1/workflows/{workflow}/steps", RoleReader, s.steps)
	s.handle("GET /v1/resources", RoleReader, s.resources)
	s.handle("GET /v1/resources/waiters", RoleReader, s.resourceWaiters)

	s.handle("POST /v1/query", RoleClient, s.query)
	s.handle("POST /v1/query/poll", RoleWorker, s.queryPoll)
	s.handle("POST /v1/query/answer", RoleWorker, s.queryAnswer)

	s.handle("GET /v1/whoami", RoleReader, s.whoami)

	s.handle("GET /v1/cluster", RoleReader, s.clusterStatus)
	s.handle("POST /v1/cluster/members", RoleAdmin, s.clusterJoin)
	s.handle("DELETE /v1/cluster/members/{id}", RoleAdmin, s.clusterRemove)
	s.handle("POST /v1/cluster/leader/transfer", RoleAdmin, s.clusterTransfer)
	s.shardRoutes()
	s.backupRoutes()

	s.scheduleRoutes()
	s.batchRoutes()
	s.asyncRoutes()
	s.healthRoutes()
	s.reviewRoutes()
	s.taskQueueRoutes()

	// Everything else, including a known path with another method, gets
	// the same error body as any other failure rather than the mux's
	// plain-text 404 or 405.
	s.handle("/", RoleReader, func(c *call) (any, error) {
		return nil, fmt.Errorf("%w: %s %s", ErrNoRoute, c.r.Method, c.r.URL.Path)
	})
}

// identityKey carries the caller's Identity in a request's context.
type identityKey struct{}

// caller is who a request comes from, as serve authenticated it.
type caller struct {
	Identity
	// byCert: authenticated by its TLS certificate, which cannot be
	// forwarded; such a request is sent to the leader rather than
	// forwarded there.
	byCert bool
	// node is the node id a verified node certificate names, if any.
	node string
}

// ServeHTTP serves one request (see serve), recording its metrics and span
// when ServerConfig asks for them.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// serve refuses a browser's write from another site's page (checkOrigin),
// authenticates the caller, then routes the request. A bearer token
// decides who the caller is; without one, a certificate ClientCAs verifies
// does. A server without tokens lets a caller that shows neither in, as an
// admin with no name. Health probes need neither: a load balancer's probe
// has no credentials, and they reveal nothing.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if isProbe(r) {
		s.mux.ServeHTTP(w, r)
		return
	}
	if err := checkOrigin(r); err != nil {
		c := &call{s: s, w: w, r: r, out: responseFormat(r)}
		c.fail(err)
		return
	}
	who, err := s.authenticate(r)
	if err != nil {
		w.Header().Set("WWW-Authenticate", `Bearer realm="heddle"`)
		// The connection is closed after the answer, its body unread: a
		// caller without credentials cannot hold it by sending the body
		// slowly. (net/http reads what is left of a body up to 256 KiB
		// after the handler, even with Connection: close, until the read
		// deadline; that deadline is now.) A test recorder cannot move it.
		w.Header().Set("Connection", "close")
		_ = http.NewResponseController(w).SetReadDeadline(time.Now())
		c := &call{s: s, w: w, r: r, out: responseFormat(r)}
		c.fail(err)
		return
	}
	routed := r.WithContext(context.WithValue(r.Context(), identityKey{}, who))
	s.mux.ServeHTTP(w, routed)
	// The mux wrote the route it matched into the copy; instrument reads
	// it from the request it was given.
	r.Pattern = routed.Pattern
}

// authenticate finds who the request comes from.
func (s *Server) authenticate(r *http.Request) (caller, error) {
	if h := r.Header.Get("Authorization"); h != "" {
		token, ok := strings.CutPrefix(h, "Bearer ")
		if !ok {
			return caller{}, fmt.Errorf("%w: the Authorization header is not \"Bearer <token>\"", ErrUnauthorized)
		}
		id, ok := s.tokens.lookup(token)
		if !ok {
			return caller{}, fmt.Errorf("%w: the bearer token is not one this server knows (Authorization: Bearer <token>)", ErrUnauthorized)
		}
		who := caller{Identity: id}
		if s.cfg.ClientCAs != nil && r.TLS != nil {
			// The token says who the caller is; a node certificate beside
			// it still says which node the request comes from (a join).
			who.node, _ = pki.VerifyNode(r.TLS.PeerCertificates, s.cfg.ClientCAs)
		}
		return who, nil
	}
	if s.cfg.ClientCAs != nil && r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		return s.certCaller(r.TLS.PeerCertificates)
	}
	if s.tokens.Len() > 0 {
		return caller{}, fmt.Errorf("%w: this server needs \"Authorization: Bearer <token>\"", ErrUnauthorized)
	}
	return caller{Identity: Identity{Role: RoleAdmin}}, nil
}

// certCaller authenticates a caller by its certificate chain.
func (s *Server) certCaller(chain []*x509.Certificate) (caller, error) {
	if err := pki.Verify(chain, s.cfg.ClientCAs); err != nil {
		return caller{}, fmt.Errorf("%w: the client certificate %q is not one of this cluster's CA: %v", ErrUnauthorized, chain[0].Subject.CommonName, err)
	}
	if id, ok := pki.NodeID(chain[0]); ok {
		return caller{Identity: Identity{Name: "node:" + id, Role: RoleAdmin}, byCert: true, node: id}, nil
	}
	if name, roleName, ok := pki.ClientName(chain[0]); ok {
		role, err := ParseRole(roleName)
		if err != nil {
			return caller{}, fmt.Errorf("%w: the client certificate of %q: %v", ErrUnauthorized, name, err)
		}
		return caller{Identity: Identity{Name: name, Role: role}, byCert: true}, nil
	}
	return caller{}, fmt.Errorf("%w: the client certificate %q names no heddle node or client", ErrUnauthorized, chain[0].Subject.CommonName)
}

// callerOf returns who ServeHTTP found the request comes from.
func callerOf(r *http.Request) caller {
	who, _ := r.Context().Value(identityKey{}).(caller)
	return who
}

// identityOf returns the identity ServeHTTP authenticated.
func identityOf(r *http.Request) Identity { return callerOf(r).Identity }

// handler serves one route: it returns the value to answer with, or an error.
type handler func(c *call) (any, error)

// roleNotes says what a route needs when its role alone would mislead:
// terminate takes a worker's token, but only for the children of the
// worker's own run; to a person it is an admin's command.
var roleNotes = map[string]string{
	"POST /v1/jobs/terminate": "the admin role (a worker's may terminate only its own run's children)",
}

// handle registers h for pattern, callable by role and above.
func (s *Server) handle(pattern string, role Role, h handler) {
	needs := "the " + role.String() + " role"
	if n, ok := roleNotes[pattern]; ok {
		needs = n
	}
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		if id := identityOf(r); id.Role < role {
			c := &call{s: s, w: w, r: r, out: responseFormat(r)}
			c.fail(fmt.Errorf("%w: %s %s needs %s; token %q has the %s role", ErrForbidden, r.Method, r.URL.Path, needs, id.Name, id.Role))
			return
		}
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
		r, perr := s.shardContext(r)
		c := &call{s: s, w: w, r: r, out: responseFormat(r)}
		defer c.release()
		if perr != nil {
			c.fail(perr)
			return
		}
		if err := c.readBody(); err != nil {
			c.fail(err)
			return
		}
		if len(c.body) > 0 {
			// Every body is JSON or msgpack, said so, also on a route that
			// reads none: see requestFormat.
			if _, err := requestFormat(r); err != nil {
				c.fail(err)
				return
			}
		}
		s.extendDeadlines(w)
		s.notePlacement(w.Header())
		if engine.IsStaleRead(r.Context()) {
			s.markStale(w.Header())
		}
		res, err := h(c)
		// Again, after the handler: a long poll may have waited through a
		// change of placement, which its answer must name.
		s.notePlacement(w.Header())
		if err != nil {
			c.fail(err)
			return
		}
		c.reply(http.StatusOK, res)
	})
}

// extendDeadlines gives the answer its own deadline once the request has
// been read: MaxWait plus WriteTimeout from now, so that a long poll is
// never cut off by the time its body took to arrive. (The read deadline
// needs nothing: net/http lifts it once the body is read to its end, and
// then watches the connection only to learn that the client went away.)
// A ResponseWriter that cannot move it (a test recorder) is left as it is.
func (s *Server) extendDeadlines(w http.ResponseWriter) {
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(s.cfg.MaxWait + s.cfg.WriteTimeout))
}

// terminate serves POST /v1/jobs/terminate: an admin may terminate any
// run; a worker only a child of the run whose lease it holds, as that
// run's parent-close policy asks (Terminate.ByParent, which the engine
// checks against the lease and the child's parent).
func (s *Server) terminate(c *call) (any, error) {
	var cmd engine.Terminate
	if err := c.decode(&cmd); err != nil {
		return nil, err
	}
	if id := identityOf(c.r); id.Role < RoleAdmin && cmd.ByParent == nil {
		return nil, fmt.Errorf("%w: POST /v1/jobs/terminate needs the admin role; token %q has the %s role, with which it may only terminate a child of the run whose lease it holds (by_parent)",
			ErrForbidden, id.Name, id.Role)
	}
	return s.cfg.Service.Terminate(c.r.Context(), cmd)
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
