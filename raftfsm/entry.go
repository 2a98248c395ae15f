package raftfsm

import (
	"bytes"
	"fmt"

	"github.com/heddlewf/heddle/internal/msgpackscan"
	"github.com/vmihailenco/msgpack/v5"
)

// A log entry is a version byte, a kind byte, then a msgpack body. Entries
// live in the Raft log for as long as it is kept and are replayed by nodes
// running newer code, so the layout is versioned like storage records.
const entryVersion = 1

type entryKind byte

const (
	// entryCommands carries engine commands, each encoded by
	// engine.EncodeCommand, applied in order.
	entryCommands entryKind = 1
	// entryNode records (or removes) a member's HTTP address, so every node
	// can send clients to the leader.
	entryNode entryKind = 2
	// entryHold sets or releases the shard's delivery hold (hold.go).
	entryHold entryKind = 3
)

// maxEntryCommands bounds the commands one entry may carry, so a corrupt
// count cannot make the decoder allocate without bound.
const maxEntryCommands = 1 << 16

// maxEntryDepth bounds an entry body's nesting: a map holding an array of
// byte strings, or a map of strings.
const maxEntryDepth = 4

type commandsBody struct {
	Cmds [][]byte `msgpack:"c"`
}

type nodeBody struct {
	ID       string `msgpack:"i"`
	HTTPAddr string `msgpack:"h"`
	Remove   bool   `msgpack:"r,omitempty"`
}

func encodeEntry(k entryKind, body any) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte(entryVersion)
	buf.WriteByte(byte(k))
	enc := msgpack.NewEncoder(&buf)
	if err := enc.Encode(body); err != nil {
		return nil, fmt.Errorf("raftfsm: encode entry: %w", err)
	}
	return buf.Bytes(), nil
}

// decodedEntry is one decoded log entry: exactly one of cmds, node and
// hold is set.
type decodedEntry struct {
	kind entryKind
	cmds [][]byte
	node *nodeBody
	hold *holdBody
}

// decodeEntry parses a log entry. It never panics and never allocates much
// more than len(b) on malformed input.
func decodeEntry(b []byte) (decodedEntry, error) {
	var e decodedEntry
	if len(b) < 2 {
		return e, &EntryError{Reason: fmt.Sprintf("%d bytes, shorter than the 2-byte header", len(b))}
	}
	if b[0] != entryVersion {
		return e, &EntryError{Reason: fmt.Sprintf("version %d, this node reads version %d", b[0], entryVersion)}
	}
	e.kind = entryKind(b[1])
	body := b[2:]
	// The structure is walked first, in a loop: a length prefix larger
	// than what follows is refused before the decoder reserves memory for
	// it, and nesting deeper than an entry has before the decoder recurses
	// into it.
	if _, err := msgpackscan.Check(body, msgpackscan.Limits{MaxDepth: maxEntryDepth}); err != nil {
		return e, &EntryError{Reason: "malformed body: " + err.Error()}
	}
	r := bytes.NewReader(body)
	dec := msgpack.NewDecoder(r)
	switch e.kind {
	case entryCommands:
		var c commandsBody
		if err := dec.Decode(&c); err != nil {
			return e, &EntryError{Reason: "commands body: " + err.Error()}
		}
		if len(c.Cmds) == 0 || len(c.Cmds) > maxEntryCommands {
			return e, &EntryError{Reason: fmt.Sprintf("%d commands, want 1 to %d", len(c.Cmds), maxEntryCommands)}
		}
		e.cmds = c.Cmds
	case entryNode:
		var n nodeBody
		if err := dec.Decode(&n); err != nil {
			return e, &EntryError{Reason: "node body: " + err.Error()}
		}
		if n.ID == "" {
			return e, &EntryError{Reason: "node entry without an id"}
		}
		e.node = &n
	case entryHold:
		if len(body) > maxHoldBodyBytes {
			return e, &EntryError{Reason: fmt.Sprintf("hold body of %d bytes, more than %d", len(body), maxHoldBodyBytes)}
		}
		var h holdBody
		if err := dec.Decode(&h); err != nil {
			return e, &EntryError{Reason: "hold body: " + err.Error()}
		}
		if err := checkHold(&h); err != nil {
			return e, &EntryError{Reason: err.Error()}
		}
		e.hold = &h
	default:
		return e, &EntryError{Reason: fmt.Sprintf("unknown kind %d", b[1])}
	}
	if r.Len() > 0 {
		return e, &EntryError{Reason: "bytes after the body"}
	}
	return e, nil
}
