package engine

// Header is carried by every command.
type Header struct {
	// RequestID, when set, makes the command idempotent: a command whose
	// request id was already applied returns the first result and writes
	// nothing. Results are kept for Limits.RequestRetentionMS.
	RequestID string `json:"request_id,omitempty" msgpack:"rq,omitempty"`
	// NowMS is the command's time in Unix milliseconds, stamped by the single
	// writer (the local log, or the Raft leader). Apply keeps it monotonic: a
	// command stamped earlier than its predecessor takes the predecessor's time.
	NowMS int64 `json:"now_ms,omitempty" msgpack:"now"`
	// By names who issued the command (a token's name), as the HTTP
	// server authenticated it; "" when the server has no tokens or the
	// command came from inside the process. The server sets it and never
	// takes it from a request's body (it has no JSON key). Apply records
	// it on the events of the commands people issue (starts, signals,
	// cancellations, terminations, suspensions). Like NowMS it is not part
	// of the command's body: a request id's retry by someone else is the
	// same request.
	By string `json:"-" msgpack:"by,omitempty"`
	// Nonce is randomness for Apply, which may draw none itself: the
	// Engine fills it with fresh random bytes before it proposes a claim
	// (Claim, ClaimReviews), replacing whatever the caller put there, and
	// Apply derives the claimed leases' tokens from it (see the lease tokens of package engine/machine).
	// A create naming a parent gets one too, as the mark of an Engine that
	// fences parents (LegacyParent). Like NowMS and By it is not part of
	// the command's body: a request id's retry carries another.
	Nonce []byte `json:"-" msgpack:"nc,omitempty"`
}

// Head returns the header, so every command type satisfies Command by embedding it.
func (h *Header) Head() *Header { return h }

// Command is one state change, applied by Apply. Commands are plain data:
// they are encoded into the Raft log and must decode identically everywhere.
type Command interface {
	Head() *Header
	// Kind is the command's stable type number.
	Kind() CommandKind
	// Check validates the fields against the limits, without reading
	// state; Apply checks every command it applies, and a client may check
	// one before it sends it.
	Check(l *Limits) error
}

// Target names a job by id, or by workflow id (its current run) when Job is 0.
type Target struct {
	Job        JobID  `json:"job_id,omitempty" msgpack:"j,omitempty"`
	WorkflowID string `json:"workflow_id,omitempty" msgpack:"wf,omitempty"`
}

// LeaseRef names one attempt of one job and proves that the writer holds
// its lease: Token is the lease token the claim returned
// (ClaimedJob.LeaseToken). A fenced write is refused unless its attempt is
// the job's current one and its token is that attempt's; a lease claimed
// without a token (see the lease tokens of package engine/machine) takes the empty token.
type LeaseRef struct {
	Job     JobID  `json:"job_id" msgpack:"j"`
	Attempt uint64 `json:"attempt" msgpack:"a"`
	Token   string `json:"lease_token,omitempty" msgpack:"tk,omitempty"`
}
