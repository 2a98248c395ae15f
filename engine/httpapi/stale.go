package httpapi

import (
	"context"
	"net/http"
	"strconv"
)

// The headers of an answer served from a node's own state without asking
// the leader (?stale=1, and a history long poll), so that a reader can
// tell a node cut off from its cluster from a fresh one.
const (
	// HeaderStale is "1" on every such answer.
	HeaderStale = "X-Heddle-Stale"
	// HeaderNodeID is the answering node's id.
	HeaderNodeID = "X-Heddle-Node-Id"
	// HeaderTerm is the Raft term the node is in.
	HeaderTerm = "X-Heddle-Term"
	// HeaderAppliedIndex is the last Raft log index the node had applied
	// when the read began: the answer holds at least that much.
	HeaderAppliedIndex = "X-Heddle-Applied-Index"
	// HeaderLeaderKnown is "true" when the node knows of a leader (a
	// follower cut off from the others soon knows of none), else "false".
	HeaderLeaderKnown = "X-Heddle-Leader-Known"
	// HeaderLeaderID names the leader the node knows of, if any.
	HeaderLeaderID = "X-Heddle-Leader-Id"
)

// readStater is implemented by a Cluster that can say cheaply what state a
// read served now comes from (raftfsm.Node).
type readStater interface {
	ReadState() (nodeID string, term, appliedIndex uint64, leaderID string)
}

// markStale writes the stale-read headers. A node without a Cluster runs
// alone and writes everything itself: it always knows its leader.
func (s *Server) markStale(h http.Header) {
	h.Set(HeaderStale, "1")
	var id, leader string
	var term, applied uint64
	switch cl := s.cfg.Cluster.(type) {
	case nil:
		h.Set(HeaderLeaderKnown, "true")
		return
	case readStater:
		id, term, applied, leader = cl.ReadState()
	default:
		st, err := cl.Status(context.Background())
		if err != nil {
			h.Set(HeaderLeaderKnown, "false")
			return
		}
		id, term, applied, leader = st.ID, st.Term, st.AppliedIndex, st.LeaderID
	}
	h.Set(HeaderNodeID, id)
	h.Set(HeaderTerm, strconv.FormatUint(term, 10))
	h.Set(HeaderAppliedIndex, strconv.FormatUint(applied, 10))
	h.Set(HeaderLeaderKnown, strconv.FormatBool(leader != ""))
	if leader != "" {
		h.Set(HeaderLeaderID, leader)
	}
}

// ReadInfo is what the headers of an answer said about the node that
// served a read from its own state (see WithReadInfo).
type ReadInfo struct {
	// Stale: the answer was served from the node's own state and carried
	// the headers below; false after a linearizable read.
	Stale        bool
	NodeID       string
	Term         uint64
	AppliedIndex uint64
	// LeaderKnown is false when the node knew of no leader: its state may
	// lag the cluster's by any amount.
	LeaderKnown bool
	LeaderID    string
}

type readInfoKey struct{}

// WithReadInfo returns a context that makes the Client fill in *info from
// the answer of a read made with it:
//
//	var info httpapi.ReadInfo
//	j, err := c.Describe(httpapi.WithReadInfo(engine.WithStaleRead(ctx), &info), t)
//	if !info.LeaderKnown { ... the node was cut off; j may be old ... }
//
// The Client writes *info from the goroutine that made the call, before
// the call returns.
func WithReadInfo(ctx context.Context, info *ReadInfo) context.Context {
	return context.WithValue(ctx, readInfoKey{}, info)
}

// noteReadInfo fills in the ReadInfo ctx carries, if any, from h.
func noteReadInfo(ctx context.Context, h http.Header) {
	info, _ := ctx.Value(readInfoKey{}).(*ReadInfo)
	if info == nil {
		return
	}
	*info = ReadInfo{Stale: h.Get(HeaderStale) == "1", NodeID: h.Get(HeaderNodeID), LeaderID: h.Get(HeaderLeaderID)}
	info.Term, _ = strconv.ParseUint(h.Get(HeaderTerm), 10, 64)
	info.AppliedIndex, _ = strconv.ParseUint(h.Get(HeaderAppliedIndex), 10, 64)
	info.LeaderKnown, _ = strconv.ParseBool(h.Get(HeaderLeaderKnown))
}
