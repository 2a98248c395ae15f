package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/heddlewf/heddle/engine"
)

// Sentinel errors of this package. Every error the Server answers with and
// the Client returns matches one of these or one of engine's sentinels with
// errors.Is.
var (
	// ErrUnauthorized: the request lacked a bearer token the server knows.
	ErrUnauthorized = errors.New("httpapi: unauthorized")
	// ErrForbidden: the request's token has a role below the one the
	// route needs, or a join came without the joining node's certificate.
	ErrForbidden = errors.New("httpapi: forbidden")
	// ErrNoRoute: no route matches the request's method and path.
	ErrNoRoute = errors.New("httpapi: no such route")
	// ErrNoCluster: a cluster route was asked of a node that runs alone.
	ErrNoCluster = errors.New("httpapi: not a cluster node")
	// ErrQueryTimeout: no worker answered a query before its deadline.
	ErrQueryTimeout = errors.New("httpapi: query timed out")
	// ErrQueryFailed: the workflow's query handler (or the worker running
	// it) returned an error.
	ErrQueryFailed = errors.New("httpapi: query failed")
	// ErrBodyTimeout: the request's body did not arrive within the
	// server's ReadTimeout, and the connection is closed.
	ErrBodyTimeout = errors.New("httpapi: request body too slow")
	// ErrBusy: the server holds as many request body bytes as it may
	// (ServerConfig.MaxInflightBodyBytes); the request may be tried again.
	ErrBusy = errors.New("httpapi: server busy")
	// ErrInvalidConfig: a ServerConfig or ClientConfig field is out of range.
	ErrInvalidConfig = errors.New("httpapi: invalid config")
	// ErrNotReady: the node runs but should not be sent work (GET /readyz
	// answered 503: no leader known, state behind, store closed).
	ErrNotReady = errors.New("httpapi: not ready")
	// ErrUnsupportedMediaType: a request body has no Content-Type, or one
	// that is neither JSON nor msgpack (415).
	ErrUnsupportedMediaType = errors.New("httpapi: unsupported media type")
	// ErrCrossOrigin: a browser sent a write from a page of another
	// origin (403).
	ErrCrossOrigin = errors.New("httpapi: cross-origin request")
	// ErrHostNotAllowed: a HostGuard refused the request's Host header
	// (403).
	ErrHostNotAllowed = errors.New("httpapi: host not allowed")
)

// ErrorBody is the body of every failed request.
type ErrorBody struct {
	// Code is the stable code of a typed error (e.g. "HDL-ENGINE-0001"),
	// when the error has one.
	Code string `json:"code,omitempty" msgpack:"code,omitempty"`
	// Name names the sentinel the error matches ("stale_attempt"), or
	// "internal" when it matches none.
	Name string `json:"error" msgpack:"error"`
	// Message is the error's full text.
	Message string `json:"message" msgpack:"message"`
	// LeaderID and LeaderHTTP name the leader a node that is not the
	// leader knows of; both may be empty.
	LeaderID   string `json:"leader_id,omitempty" msgpack:"leader_id,omitempty"`
	LeaderHTTP string `json:"leader_http,omitempty" msgpack:"leader_http,omitempty"`
	// ReviewState and LegalCommands answer an illegal task command (409
	// illegal_task_command): the task's state and the commands legal in it.
	ReviewState   string   `json:"task_state,omitempty" msgpack:"task_state,omitempty"`
	LegalCommands []string `json:"legal_commands,omitempty" msgpack:"legal_commands,omitempty"`
}

// wireError pairs a sentinel with its name on the wire and its HTTP status.
type wireError struct {
	name   string
	status int
	err    error
}

// nameInternal is the name of an error that matches no sentinel.
const nameInternal = "internal"

// nameTimeout is the name of a context error the server met: the server
// gave up, so the request may be tried again.
const nameTimeout = "timeout"

// wireErrors is searched in order, so an error that matches two sentinels
// (a failed forward is both an unknown outcome and a not-leader answer)
// takes the first, more telling one.
var wireErrors = []wireError{
	{"unauthorized", http.StatusUnauthorized, ErrUnauthorized},
	{"forbidden", http.StatusForbidden, ErrForbidden},
	{"no_route", http.StatusNotFound, ErrNoRoute},
	{"no_cluster", http.StatusNotImplemented, ErrNoCluster},
	{"query_timeout", http.StatusGatewayTimeout, ErrQueryTimeout},
	{"query_failed", http.StatusUnprocessableEntity, ErrQueryFailed},
	{"unknown_query", http.StatusBadRequest, engine.ErrUnknownQuery},
	{"request_conflict", http.StatusConflict, engine.ErrRequestConflict},
	{"cross_shard", http.StatusUnprocessableEntity, engine.ErrCrossShard},
	{"stale_attempt", http.StatusConflict, engine.ErrStaleAttempt},
	{"unknown_job", http.StatusNotFound, engine.ErrUnknownJob},
	{"illegal_transition", http.StatusConflict, engine.ErrIllegalTransition},
	{"unknown_command", http.StatusBadRequest, engine.ErrUnknownCommand},
	{"payload_too_large", http.StatusRequestEntityTooLarge, engine.ErrPayloadTooLarge},
	{"body_timeout", http.StatusRequestTimeout, ErrBodyTimeout},
	{"invalid_command", http.StatusBadRequest, engine.ErrInvalidCommand},
	{"workflow_exists", http.StatusConflict, engine.ErrWorkflowExists},
	{"job_closed", http.StatusConflict, engine.ErrJobClosed},
	{"step_committed", http.StatusConflict, engine.ErrStepCommitted},
	{"step_state", http.StatusConflict, engine.ErrStepState},
	{"no_resource", http.StatusConflict, engine.ErrNoResource},
	{"dependency_failed", http.StatusConflict, engine.ErrDependencyFailed},
	{"unknown_resource", http.StatusNotFound, engine.ErrUnknownResource},
	{"resource_exists", http.StatusConflict, engine.ErrResourceExists},
	{"resource_busy", http.StatusConflict, engine.ErrResourceBusy},
	{"unknown_schedule", http.StatusNotFound, engine.ErrUnknownSchedule},
	{"schedule_exists", http.StatusConflict, engine.ErrScheduleExists},
	{"unknown_batch", http.StatusNotFound, engine.ErrUnknownBatch},
	{"batch_exists", http.StatusConflict, engine.ErrBatchExists},
	{"unknown_activity", http.StatusNotFound, engine.ErrUnknownActivity},
	{"invariant", http.StatusInternalServerError, engine.ErrInvariant},
	{"corrupt", http.StatusInternalServerError, engine.ErrCorrupt},
	{"storage_read", http.StatusInternalServerError, engine.ErrStorageRead},
	{"no_space", http.StatusInsufficientStorage, engine.ErrNoSpace},
	{"deliveries_held", http.StatusServiceUnavailable, engine.ErrDeliveriesHeld},
	{"unknown_outcome", http.StatusServiceUnavailable, engine.ErrUnknownOutcome},
	{"not_leader", http.StatusServiceUnavailable, engine.ErrNotLeader},
	{"closed", http.StatusServiceUnavailable, engine.ErrClosed},
	{"busy", http.StatusServiceUnavailable, ErrBusy},
	{"invalid_config", http.StatusInternalServerError, ErrInvalidConfig},
	{"not_ready", http.StatusServiceUnavailable, ErrNotReady},
	{"unsupported_media_type", http.StatusUnsupportedMediaType, ErrUnsupportedMediaType},
	{"cross_origin", http.StatusForbidden, ErrCrossOrigin},
	{"host_not_allowed", http.StatusForbidden, ErrHostNotAllowed},
	// The review tasks' errors, after the job errors; they match sentinels
	// no other entry matches.
	{"unknown_task", http.StatusNotFound, engine.ErrUnknownReview},
	{"task_exists", http.StatusConflict, engine.ErrReviewExists},
	{"illegal_task_command", http.StatusConflict, engine.ErrIllegalReviewCommand},
	{"stale_task_attempt", http.StatusConflict, engine.ErrStaleReviewAttempt},
}

// errorFor returns the status and body that answer err.
func errorFor(err error) (int, ErrorBody) {
	body := ErrorBody{Name: nameInternal, Message: err.Error()}
	status := http.StatusInternalServerError
	for _, w := range wireErrors {
		if errors.Is(err, w.err) {
			body.Name, status = w.name, w.status
			break
		}
	}
	// A node that could not reach another node (a sharded node reading a
	// shard at its leader, which died before this node learned of the
	// next one) gave up as on a timeout: the caller may try again, and
	// then finds the shard's new leader.
	var te *transportError
	if body.Name == nameInternal && (isContextError(err) || errors.As(err, &te)) {
		body.Name, status = nameTimeout, http.StatusServiceUnavailable
	}
	var coded interface{ Code() string }
	if errors.As(err, &coded) {
		body.Code = coded.Code()
	}
	var nl *engine.NotLeaderError
	if errors.As(err, &nl) {
		body.LeaderID, body.LeaderHTTP = nl.LeaderID, nl.LeaderHTTP
	}
	reviewStateDetail(err, &body)
	return status, body
}

// sentinelNamed returns the sentinel with the given wire name, or nil.
func sentinelNamed(name string) error {
	for _, w := range wireErrors {
		if w.name == name {
			return w.err
		}
	}
	return nil
}

// RemoteError is an error a server answered with. It matches the sentinel
// its name stands for (errors.Is), and a not-leader answer also carries an
// *engine.NotLeaderError (errors.As) with the leader the node knows of.
type RemoteError struct {
	Status int // the HTTP status
	Body   ErrorBody
}

func (e *RemoteError) Error() string {
	if e.Body.Message != "" {
		return e.Body.Message
	}
	return fmt.Sprintf("httpapi: HTTP %d %s", e.Status, http.StatusText(e.Status))
}

// Unwrap returns the sentinel the error's name stands for; a not-leader
// answer unwraps to an *engine.NotLeaderError instead, which unwraps to
// engine.ErrNotLeader.
func (e *RemoteError) Unwrap() error {
	if e.Body.Name == "not_leader" {
		return &engine.NotLeaderError{LeaderID: e.Body.LeaderID, LeaderHTTP: e.Body.LeaderHTTP}
	}
	if se := e.reviewStateError(); se != nil {
		return se
	}
	return sentinelNamed(e.Body.Name)
}

// Code returns the stable code of the typed error the server met, if any.
func (e *RemoteError) Code() string { return e.Body.Code }

// isContextError reports whether err is a context's cancellation or deadline.
func isContextError(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
