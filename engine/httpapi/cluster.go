package httpapi

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/heddlewf/heddle/engine"
)

// Cluster is the membership surface of a Raft node, served under
// /v1/cluster. Its methods are called concurrently from request goroutines.
// A method a follower cannot serve (Join, Remove, TransferLeader) returns
// an error matching engine.ErrNotLeader, ideally an *engine.NotLeaderError
// with the leader's HTTP address, and the Server forwards the request there.
type Cluster interface {
	// Status describes this node and the cluster as this node sees it.
	Status(ctx context.Context) (ClusterStatus, error)
	// Join adds a voting member with the given Raft and HTTP addresses.
	Join(ctx context.Context, id, raftAddr, httpAddr string) error
	// Remove removes a member.
	Remove(ctx context.Context, id string) error
	// TransferLeader hands leadership to another member.
	TransferLeader(ctx context.Context) error
}

// LeaderWatcher is what a Cluster may also implement (raftfsm.Node does) to
// say when the leader changes. The query broker needs it: its queries and
// the workers' polls for them meet in the memory of the node that leads,
// so a poll or a query parked on a node when another node becomes the
// leader would wait there for nothing. With a LeaderWatcher the server ends
// such a poll or query at once with a not-leader error naming the new
// leader, which it forwards there (a request already forwarded once goes
// back to its client, which follows the leader hint); without one, they
// wait out their wait.
type LeaderWatcher interface {
	// LeaderChanged returns a channel that is closed the next time the
	// leader this node knows of changes (this node gaining or losing the
	// leadership included). Status then tells the new leader.
	LeaderChanged() <-chan struct{}
}

// ClusterStatus and ClusterMember are the engine's, so that a Raft node
// (raftfsm.Node) is a Cluster as it is.
type (
	ClusterStatus = engine.ClusterStatus
	ClusterMember = engine.ClusterMember
)

// clusterDone answers the cluster routes that return nothing but success.
type clusterDone struct {
	OK bool `json:"ok" msgpack:"ok"`
}

func (s *Server) cluster() (Cluster, error) {
	if s.cfg.Cluster == nil {
		return nil, fmt.Errorf("%w: this node runs without a cluster (ServerConfig.Cluster is nil)", ErrNoCluster)
	}
	return s.cfg.Cluster, nil
}

func (s *Server) clusterStatus(c *call) (any, error) {
	cl, err := s.cluster()
	if err != nil {
		return nil, err
	}
	st, err := cl.Status(c.r.Context())
	if err != nil {
		return nil, err
	}
	return &st, nil
}

func (s *Server) clusterJoin(c *call) (any, error) {
	cl, err := s.cluster()
	if err != nil {
		return nil, err
	}
	var m ClusterMember
	if err := c.decode(&m); err != nil {
		return nil, err
	}
	if m.ID == "" || m.RaftAddr == "" {
		return nil, fieldMissing("ClusterMember", "id and raft_addr")
	}
	if s.cfg.ClientCAs != nil {
		// The node proves who it is with its own certificate, so the
		// request is never forwarded: the leader must see that
		// certificate itself.
		c.noForward = true
		switch who := callerOf(c.r); {
		case who.node == "":
			return nil, fmt.Errorf("%w: a join must come from the joining node %q itself, over TLS with its node certificate", ErrForbidden, m.ID)
		case who.node != m.ID:
			return nil, fmt.Errorf("%w: the certificate presented names node %q, which cannot join as %q", ErrForbidden, who.node, m.ID)
		}
	}
	if err := cl.Join(c.r.Context(), m.ID, m.RaftAddr, m.HTTPAddr); err != nil {
		return nil, err
	}
	return &clusterDone{OK: true}, nil
}

func (s *Server) clusterRemove(c *call) (any, error) {
	cl, err := s.cluster()
	if err != nil {
		return nil, err
	}
	id := c.r.PathValue("id")
	if id == "" {
		return nil, fieldMissing("remove", "member id")
	}
	if err := cl.Remove(c.r.Context(), id); err != nil {
		return nil, err
	}
	return &clusterDone{OK: true}, nil
}

func (s *Server) clusterTransfer(c *call) (any, error) {
	cl, err := s.cluster()
	if err != nil {
		return nil, err
	}
	if err := cl.TransferLeader(c.r.Context()); err != nil {
		return nil, err
	}
	return &clusterDone{OK: true}, nil
}

// leaderElsewhere returns a *engine.NotLeaderError when this node is a
// cluster member that knows another node leads. The query broker lives in
// memory, so queries and the workers that answer them must meet on one
// node: the leader, where every client ends up anyway.
func (s *Server) leaderElsewhere(ctx context.Context) error {
	if s.cfg.Cluster == nil {
		return nil
	}
	st, err := s.cfg.Cluster.Status(ctx)
	if err != nil || st.IsLeader() || st.LeaderHTTP == "" {
		return nil
	}
	return notLeader(st.LeaderID, st.LeaderHTTP)
}

// followLeader derives from ctx a context that also ends when another node
// becomes the leader, for the long polls of the query broker (see
// LeaderWatcher). left returns the not-leader error to answer with when
// that is why it ended, and nil otherwise. Without a Cluster that is a
// LeaderWatcher the context is ctx's and nothing watches.
func (s *Server) followLeader(ctx context.Context) (_ context.Context, left func() error, stop context.CancelFunc) {
	w, ok := s.cfg.Cluster.(LeaderWatcher)
	if !ok {
		return ctx, func() error { return nil }, func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	var moved atomic.Pointer[error]
	go func() {
		for {
			// The channel is taken before the leader is read, so a change
			// in between wakes the wait below instead of going unseen.
			changed := w.LeaderChanged()
			if err := s.leaderElsewhere(ctx); err != nil {
				moved.Store(&err)
				cancel()
				return
			}
			select {
			case <-changed:
			case <-ctx.Done():
				return
			}
		}
	}()
	left = func() error {
		if err := moved.Load(); err != nil {
			return *err
		}
		return nil
	}
	return ctx, left, cancel
}
