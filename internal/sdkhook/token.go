package sdkhook

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/heddlewf/heddle/engine"
)

// TaskToken is what an activity task's token holds: the job that runs it,
// the attempt that parks it and that attempt's lease token, which
// CompleteAsync is fenced by. Without the lease token, which only the
// worker holding the attempt received, nobody can make a token that the
// engine takes. It is JSON, opaque to users.
type TaskToken struct {
	Job        engine.JobID `json:"job"`
	Attempt    uint64       `json:"attempt"`
	LeaseToken string       `json:"lease_token,omitempty"`
	WorkflowID string       `json:"workflow_id,omitempty"`
	ActivityID string       `json:"activity_id,omitempty"`
}

// Lease is the lease the token names, as CompleteAsync carries it.
func (t TaskToken) Lease() engine.LeaseRef {
	return engine.LeaseRef{Job: t.Job, Attempt: t.Attempt, Token: t.LeaseToken}
}

// Encode returns the token's bytes.
func (t TaskToken) Encode() []byte {
	b, _ := json.Marshal(t) // a struct of strings and numbers always marshals
	return b
}

// DecodeTaskToken reads a token; a malformed one is an ErrInvalidCommand.
func DecodeTaskToken(b []byte) (TaskToken, error) {
	var t TaskToken
	if err := json.Unmarshal(b, &t); err != nil {
		return t, fmt.Errorf("%w: not a heddle task token: %v", engine.ErrInvalidCommand, err)
	}
	if t.Job == 0 || t.Attempt == 0 {
		return t, fmt.Errorf("%w: %w", engine.ErrInvalidCommand, errors.New("the task token names no job and attempt"))
	}
	return t, nil
}
