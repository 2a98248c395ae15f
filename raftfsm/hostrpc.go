package raftfsm

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/hashicorp/raft"

	"github.com/heddlewf/heddle/engine"
)

// Host calls are the few questions one node of a sharded cluster asks
// another over its Raft port (docs/sharding.md, "Moving a replica"): the
// leader of a shard whose replica moves asks the node it moves to how far
// that node's replica has applied, and asks the metadata group's leader to
// commit the move's end. hashicorp/raft has no way to send either: a
// follower cannot propose, and a leader does not say how far a non-voter
// has caught up.
//
// A call is one connection to the multiplexer's hostRPCGroup: a request
// frame, then an answer frame, each a kind byte, a big-endian uint32
// length and that many bytes (at most maxHostFrameBody). The connection
// is (m)TLS as every Raft connection of the node.

// hostRPCGroup is the multiplexer's group number of host calls, past the
// shards' groups.
const hostRPCGroup = MaxShardGroups + 1

// Kinds of a host call's request.
const (
	// hostOpProposeMeta asks the metadata group's leader to propose a
	// metadata entry (a move's end); the body is the entry.
	hostOpProposeMeta byte = 1
	// hostOpShardApplied asks for the applied index of this node's replica
	// of a shard; the body is the shard, a big-endian uint16.
	hostOpShardApplied byte = 2
)

// Kinds of a host call's answer.
const (
	hostOK        byte = 0 // the body is a big-endian uint64
	hostNotLeader byte = 1 // the body is the leader's id, if known
	hostInvalid   byte = 2 // the body says what was refused
	hostFailed    byte = 3 // the body says what failed
)

const (
	// maxHostFrameBody bounds a frame's body: a move's metadata entry, an
	// error's text.
	maxHostFrameBody = 4 << 10
	// hostCallTimeout bounds one call, connection to answer.
	hostCallTimeout = 10 * time.Second
)

// ErrHostFrame: a host call's frame did not decode.
var ErrHostFrame = errors.New("raftfsm: bad host call frame")

// writeHostFrame writes one frame.
func writeHostFrame(w io.Writer, kind byte, body []byte) error {
	if len(body) > maxHostFrameBody {
		return fmt.Errorf("%w: a body of %d bytes, more than %d", ErrHostFrame, len(body), maxHostFrameBody)
	}
	b := make([]byte, 5+len(body))
	b[0] = kind
	binary.BigEndian.PutUint32(b[1:5], uint32(len(body)))
	copy(b[5:], body)
	_, err := w.Write(b)
	return err
}

// readHostFrame reads one frame from outside bytes. It allocates at most
// maxHostFrameBody bytes, whatever the length field claims.
func readHostFrame(r io.Reader) (byte, []byte, error) {
	var h [5]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, fmt.Errorf("%w: %v", ErrHostFrame, err)
	}
	n := binary.BigEndian.Uint32(h[1:])
	if n > maxHostFrameBody {
		return 0, nil, fmt.Errorf("%w: a body of %d bytes, more than %d", ErrHostFrame, n, maxHostFrameBody)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return 0, nil, fmt.Errorf("%w: %v", ErrHostFrame, err)
	}
	return h[0], body, nil
}

// serveHostCalls answers the host calls of the other nodes until the node
// closes.
func (h *Host) serveHostCalls(l *groupLayer) {
	defer h.wg.Done()
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			defer func() { _ = c.Close() }()
			h.answerHostCall(c)
		}()
	}
}

func (h *Host) answerHostCall(c net.Conn) {
	if err := c.SetDeadline(time.Now().Add(hostCallTimeout)); err != nil {
		return
	}
	op, body, err := readHostFrame(c)
	if err != nil {
		return
	}
	kind, answer := h.hostCall(op, body)
	_ = writeHostFrame(c, kind, answer)
}

// hostCall answers one request.
func (h *Host) hostCall(op byte, body []byte) (byte, []byte) {
	switch op {
	case hostOpProposeMeta:
		e, err := decodeMetaEntry(body)
		if err != nil {
			return hostInvalid, []byte(err.Error())
		}
		if e.kind != metaMoveDone && e.kind != metaMoveCancelled {
			return hostInvalid, []byte(fmt.Sprintf("metadata entries of kind %d are not proposed through another node", e.kind))
		}
		if h.meta.raft.State() != raft.Leader {
			id, _ := h.metaLeader()
			return hostNotLeader, []byte(id)
		}
		ctx, cancel := context.WithTimeout(h.ctx, h.cfg.ApplyTimeout)
		defer cancel()
		v, err := h.meta.apply(ctx, e.kind, e.move)
		switch {
		case errors.Is(err, engine.ErrNotLeader):
			id, _ := h.metaLeader()
			return hostNotLeader, []byte(id)
		case errors.Is(err, engine.ErrInvalidCommand):
			return hostInvalid, []byte(err.Error())
		case err != nil:
			return hostFailed, []byte(err.Error())
		}
		return hostOK, binary.BigEndian.AppendUint64(nil, v)
	case hostOpShardApplied:
		if len(body) != 2 {
			return hostInvalid, []byte(fmt.Sprintf("a shard of %d bytes, want 2", len(body)))
		}
		k := int(binary.BigEndian.Uint16(body))
		n := h.Shard(k)
		if n == nil {
			return hostFailed, []byte(fmt.Sprintf("node %s holds no replica of shard %d", h.cfg.ID, k))
		}
		return hostOK, binary.BigEndian.AppendUint64(nil, n.fsm.Applied())
	}
	return hostInvalid, []byte(fmt.Sprintf("unknown host call %d", op))
}

// callHost sends one request to the node at raftAddr and returns its
// answer.
func (h *Host) callHost(ctx context.Context, raftAddr string, op byte, body []byte) (byte, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, hostCallTimeout)
	defer cancel()
	deadline, _ := ctx.Deadline()
	c, err := h.rpc.Dial(raft.ServerAddress(raftAddr), time.Until(deadline))
	if err != nil {
		return 0, nil, fmt.Errorf("raftfsm: calling %s: %w", raftAddr, err)
	}
	defer func() { _ = c.Close() }()
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Now()) })
	defer stop()
	if err := c.SetDeadline(deadline); err != nil {
		return 0, nil, err
	}
	if err := writeHostFrame(c, op, body); err != nil {
		return 0, nil, fmt.Errorf("raftfsm: calling %s: %w", raftAddr, err)
	}
	kind, answer, err := readHostFrame(c)
	if err != nil {
		return 0, nil, fmt.Errorf("raftfsm: the answer of %s: %w", raftAddr, err)
	}
	return kind, answer, nil
}

// hostAnswerError turns an answer that is not hostOK into an error.
func hostAnswerError(node string, kind byte, answer []byte) error {
	switch kind {
	case hostNotLeader:
		return &engine.NotLeaderError{LeaderID: string(answer)}
	case hostInvalid:
		return fmt.Errorf("%w: node %s: %s", engine.ErrInvalidCommand, node, answer)
	case hostOK:
		if len(answer) != 8 {
			return fmt.Errorf("%w: node %s answered %d bytes, want 8", ErrHostFrame, node, len(answer))
		}
		return nil
	}
	return fmt.Errorf("raftfsm: node %s: %s", node, answer)
}

// proposeMeta proposes a metadata entry through the metadata group's
// leader, this node or another, and returns the placement version it
// made.
func (h *Host) proposeMeta(ctx context.Context, k metaKind, body *moveBody) (uint64, error) {
	if h.meta.raft.State() == raft.Leader {
		return h.meta.apply(ctx, k, body)
	}
	id, _ := h.metaLeader()
	if id == "" || id == h.cfg.ID {
		return 0, fmt.Errorf("%w: the metadata group knows no leader", engine.ErrNotLeader)
	}
	n, ok := h.placement.Load().node(id)
	if !ok {
		return 0, fmt.Errorf("raftfsm: the metadata group's leader %q is not in the placement", id)
	}
	data, err := encodeMetaEntry(k, body)
	if err != nil {
		return 0, err
	}
	kind, answer, err := h.callHost(ctx, n.RaftAddr, hostOpProposeMeta, data)
	if err != nil {
		return 0, err
	}
	if err := hostAnswerError(id, kind, answer); err != nil {
		return 0, err
	}
	return binary.BigEndian.Uint64(answer), nil
}

// shardAppliedOn returns how far node id's replica of shard k applied.
func (h *Host) shardAppliedOn(ctx context.Context, id string, k int) (uint64, error) {
	n, ok := h.placement.Load().node(id)
	if !ok {
		return 0, fmt.Errorf("raftfsm: node %q is not in the placement", id)
	}
	kind, answer, err := h.callHost(ctx, n.RaftAddr, hostOpShardApplied, binary.BigEndian.AppendUint16(nil, uint16(k)))
	if err != nil {
		return 0, err
	}
	if err := hostAnswerError(id, kind, answer); err != nil {
		return 0, err
	}
	return binary.BigEndian.Uint64(answer), nil
}
