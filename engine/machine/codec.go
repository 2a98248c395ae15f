package machine

import (
	"crypto/sha256"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/storage"
)

// The encoded forms of commands and results: a storage record (type byte,
// version byte, msgpack) whose body is [kind, body]. Commands travel through
// the Raft log; results are kept for request-id retries and sent back to the
// proposer.
const (
	commandVersion = 1
	resultVersion  = 1
)

type envelope struct {
	_    struct{} `msgpack:",as_array"`
	Kind engine.CommandKind
	Body msgpack.RawMessage
}

// EncodeCommand returns the log form of c.
func EncodeCommand(c engine.Command) ([]byte, error) {
	body, err := msgpack.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("engine: encode %s: %w", c.Kind(), err)
	}
	return storage.Encode(storage.KindCommand, commandVersion, &envelope{Kind: c.Kind(), Body: body})
}

// DecodeCommand decodes the log form of a command. Unknown kinds give
// ErrUnknownCommand; malformed bytes give a *storage.CorruptError. The fields
// are not validated here: Apply validates every command it applies.
func DecodeCommand(b []byte) (_ engine.Command, err error) {
	defer markStorage(&err)
	var env envelope
	if _, err := storage.Decode(b, storage.KindCommand, commandVersion, &env); err != nil {
		return nil, err
	}
	c, ok := engine.NewCommand(env.Kind)
	if !ok {
		return nil, fmt.Errorf("%w: kind %d", engine.ErrUnknownCommand, env.Kind)
	}
	if err := msgpack.Unmarshal(env.Body, c); err != nil {
		return nil, &storage.CorruptError{Kind: storage.KindCommand, Reason: fmt.Sprintf("%s body: %v", env.Kind, err)}
	}
	return c, nil
}

// EncodeResult returns the stored form of the result of a command of kind k.
func EncodeResult(k engine.CommandKind, r engine.Result) ([]byte, error) {
	body, err := msgpack.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("engine: encode %s result: %w", k, err)
	}
	return storage.Encode(storage.KindResult, resultVersion, &envelope{Kind: k, Body: body})
}

// DecodeResult decodes a stored result and returns it with the kind of the
// command it answered.
func DecodeResult(b []byte) (_ engine.CommandKind, _ engine.Result, err error) {
	defer markStorage(&err)
	k, r, _, err := decodeRecord(b)
	return k, r, err
}

// recordEnvelope is a request record: a result envelope with the digest of
// the command that produced it. Records written before the digest existed
// have two elements and decode with an empty Digest.
type recordEnvelope struct {
	_      struct{} `msgpack:",as_array"`
	Kind   engine.CommandKind
	Body   msgpack.RawMessage
	Digest []byte
}

// encodeRecord returns the stored form of a request record: the result of
// a command of kind k and the command's digest (see requestDigest).
func encodeRecord(k engine.CommandKind, r engine.Result, digest []byte) ([]byte, error) {
	body, err := msgpack.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("engine: encode %s result: %w", k, err)
	}
	return storage.Encode(storage.KindResult, resultVersion, &recordEnvelope{Kind: k, Body: body, Digest: digest})
}

// decodeRecord decodes a stored result or request record.
func decodeRecord(b []byte) (engine.CommandKind, engine.Result, []byte, error) {
	var env recordEnvelope
	if _, err := storage.Decode(b, storage.KindResult, resultVersion, &env); err != nil {
		return 0, nil, nil, err
	}
	r := engine.NewResult(env.Kind)
	if r == nil {
		return 0, nil, nil, fmt.Errorf("%w: result of kind %d", engine.ErrUnknownCommand, env.Kind)
	}
	if err := msgpack.Unmarshal(env.Body, r); err != nil {
		return 0, nil, nil, &storage.CorruptError{Kind: storage.KindResult, Reason: fmt.Sprintf("%s body: %v", env.Kind, err)}
	}
	return env.Kind, r, env.Digest, nil
}

// requestDigest fingerprints cmd's body for its request record: SHA-256 of
// its canonical encoding (the log's msgpack, fields in declaration order,
// no maps) with the header's NowMS, By and Nonce left out, since the log
// stamps the first, the server the second and the Engine the third, and a
// retry may differ in all. A start's TraceParent is left out too: it names
// the span of the attempt that sent it, so a retry of the same start
// carries another; and so is the parent lease of a create (a job's or a
// task's), which a later attempt of the parent retrying it carries anew.
// It borrows cmd's fields for the encoding and puts them back.
func requestDigest(cmd engine.Command) ([]byte, error) {
	h := cmd.Head()
	saved := *h
	h.NowMS, h.By, h.Nonce = 0, "", nil
	if c, ok := cmd.(*engine.CreateJob); ok && (c.TraceParent != "" || c.ParentLease != nil) {
		tp, pl := c.TraceParent, c.ParentLease
		c.TraceParent, c.ParentLease = "", nil
		defer func() { c.TraceParent, c.ParentLease = tp, pl }()
	}
	if c, ok := cmd.(*engine.CreateReview); ok && c.ParentLease != nil {
		pl := c.ParentLease
		c.ParentLease = nil
		defer func() { c.ParentLease = pl }()
	}
	b, err := msgpack.Marshal(cmd)
	*h = saved
	if err != nil {
		return nil, fmt.Errorf("engine: encode %s for its request digest: %w", cmd.Kind(), err)
	}
	sum := sha256.Sum256(b)
	return sum[:], nil
}
