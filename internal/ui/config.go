package ui

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"
)

// Sentinel errors of this package, matched with errors.Is.
var (
	// ErrInvalidConfig: a Config field is missing or out of range.
	ErrInvalidConfig = errors.New("ui: invalid config")
	// ErrUnknownRole: ForRole was given a role name it does not know.
	ErrUnknownRole = errors.New("ui: unknown role")
)

// Defaults of Config's zero fields.
const (
	DefaultRefresh      = 2 * time.Second
	DefaultProbeTimeout = 2 * time.Second
)

// Config configures New. The zero value of every field but API is valid
// and takes the default its comment names.
type Config struct {
	// API is the node's HTTP API: an *httpapi.Server, or a handler that
	// serves its routes. The UI sends it every read and command in this
	// process, with the signed-in token. Required.
	API http.Handler
	// Permissions, if set, says which actions a token may take; the pages
	// show only those buttons. It is called once per page, concurrently,
	// with the token the person signed in with ("" before sign-in). Nil
	// asks the API who the token is (GET /v1/whoami) and shows the
	// buttons of its role (ForRole); an API without that route gets every
	// button. Either way the API refuses what the token may not do: this
	// only spares the person buttons that would be refused.
	Permissions func(ctx context.Context, token string) (Permissions, error)
	// ProbeClient asks the other members of a cluster for their status and
	// readiness (the cluster page), as this node: the person's token never
	// leaves the node it was given to. On a cluster whose nodes serve TLS,
	// give it the cluster's CA and this node's certificate (which the
	// members take for node:<id>, an admin). Nil means a client with a
	// timeout of DefaultProbeTimeout (2 s) and no certificate.
	ProbeClient *http.Client
	// ProbeScheme is the scheme of the members' HTTP addresses, which
	// have none: "http" (the default, "") or "https" (the nodes serve
	// TLS).
	ProbeScheme string
	// ProbeToken, if set, is a bearer token of this node's own (not a
	// person's) that the probes show: on a cluster without certificates,
	// the token every member accepts (heddle server --token). Over TLS
	// with node certificates, leave it empty: the certificate says who
	// the node is. Empty: the probes show no token, and a member that
	// asks for one answers its status 401 (its readiness needs none).
	ProbeToken string
	// Refresh is how often an open page reloads its content. 0 means
	// DefaultRefresh (2 s); negative turns the refresh off.
	Refresh time.Duration
	// Now tells the time of relative filters ("created>-24h") and of the
	// "ago" the pages print. Nil means time.Now.
	Now func() time.Time
	// Logger, if set, receives the failures the UI meets that are not the
	// person's (a template that fails to render). Nil logs nothing.
	Logger *slog.Logger
	// SessionKey is the key the forms' CSRF tokens are made with (an
	// HMAC-SHA256 of the browser's session), at least 16 bytes. Nil means
	// a random key per Handler: a restart makes the forms of open pages
	// expire (the page says so, and a reload mends it), and nodes that
	// share one address (a load balancer without sticky sessions) need
	// the same key, or a form read from one node is refused by another.
	SessionKey []byte
}

// Validate reports the first invalid field of c.
func (c Config) Validate() error {
	if c.API == nil {
		return fmt.Errorf("%w: Config.API is required", ErrInvalidConfig)
	}
	if c.ProbeScheme != "" && c.ProbeScheme != "http" && c.ProbeScheme != "https" {
		return fmt.Errorf("%w: Config.ProbeScheme %q is neither http nor https", ErrInvalidConfig, c.ProbeScheme)
	}
	if c.SessionKey != nil && len(c.SessionKey) < minSessionKey {
		return fmt.Errorf("%w: Config.SessionKey is %d bytes, fewer than %d", ErrInvalidConfig, len(c.SessionKey), minSessionKey)
	}
	return nil
}

// minSessionKey is the shortest Config.SessionKey, in bytes.
const minSessionKey = 16

func (c Config) withDefaults() Config {
	if c.ProbeClient == nil {
		c.ProbeClient = &http.Client{Timeout: DefaultProbeTimeout}
	}
	if c.ProbeScheme == "" {
		c.ProbeScheme = "http"
	}
	if c.Refresh == 0 {
		c.Refresh = DefaultRefresh
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.SessionKey == nil {
		c.SessionKey = make([]byte, 32)
		_, _ = rand.Read(c.SessionKey) // crypto/rand.Read never fails (it panics instead)
	}
	return c
}

// Action is what a button does.
type Action string

// The actions of the pages' buttons.
const (
	// ActionSignal sends a signal to a run.
	ActionSignal Action = "signal"
	// ActionCancel asks a run to cancel itself (its workflow code decides
	// how to end).
	ActionCancel Action = "cancel"
	// ActionTerminate ends a run at once.
	ActionTerminate Action = "terminate"
	// ActionPause pauses a run or unpauses it (the API's pause and
	// unpause, a client's).
	ActionPause Action = "pause"
	// ActionActivity pauses, unpauses or resets an activity of a run (the
	// API's activity commands, a client's).
	ActionActivity Action = "activity"
	// ActionReset resets a run to a turn boundary as a new run of its
	// workflow id (the API lets admins only, as terminate).
	ActionReset Action = "reset"
	// ActionDrain drains a resource (it takes no new leases) or undrains
	// it; the API lets admins only.
	ActionDrain Action = "drain"
	// ActionAnswer answers a step that waits for a person (NEEDS_USER).
	ActionAnswer Action = "answer"
	// ActionQuery asks a run's workflow code a query (the stack trace
	// among them); it changes nothing, but the API lets clients only, as a
	// query runs workflow code on a worker.
	ActionQuery Action = "query"
	// ActionSchedule pauses, unpauses, triggers and backfills schedules.
	ActionSchedule Action = "schedule"
)

// Permissions is the set of actions a token may take, and the name of its
// role when it has one. The zero value permits nothing.
type Permissions struct {
	all     bool
	actions map[Action]bool
	role    string
}

// AllowAll permits every action, those of later pages included.
func AllowAll() Permissions { return Permissions{all: true} }

// roleActions are the buttons of each role of the HTTP API's tokens. The
// roles are ordered, each allowed what the ones before it are: a reader
// reads; a client starts, signals, asks to cancel, pauses runs and their
// activities and decides review tasks (the API's task commands are a
// client's); a worker runs work and
// may terminate only its own run's children, which no button does; an
// admin may do everything, terminate, reset and drain included.
var roleActions = map[string][]Action{
	"reader": nil,
	"client": clientActions,
	"worker": clientActions,
}

// clientActions are the buttons of a client (and of a worker, which may do
// what a client does): the API's routes of the client role.
var clientActions = []Action{ActionSignal, ActionCancel, ActionPause, ActionActivity, ActionApprove, ActionReject, ActionResubmit,
	ActionFixReview, ActionTerminateReview, ActionAnswer, ActionQuery, ActionSchedule}

// ForRole is the permissions of a token with the named role: "reader",
// "client", "worker" or "admin". Pages name the role beside the sign-out
// button, and say why a run shows no buttons.
func ForRole(role string) (Permissions, error) {
	if role == "admin" {
		p := AllowAll()
		p.role = role
		return p, nil
	}
	actions, ok := roleActions[role]
	if !ok {
		return Permissions{}, fmt.Errorf("%w: %q is not one of reader, client, worker, admin", ErrUnknownRole, role)
	}
	p := Allow(actions...)
	p.role = role
	return p, nil
}

// Role is the name of the role these permissions are of, or "" when they
// were not made by ForRole.
func (p Permissions) Role() string { return p.role }

// Allow permits the given actions only.
func Allow(actions ...Action) Permissions {
	p := Permissions{actions: map[Action]bool{}}
	for _, a := range actions {
		p.actions[a] = true
	}
	return p
}

// Can reports whether the action is permitted.
func (p Permissions) Can(a Action) bool { return p.all || p.actions[a] }
