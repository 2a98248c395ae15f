package sdkhook

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/heddlewf/heddle/engine"
)

// TaskToken is what an activity task's token holds: the job that runs it
// and the attempt that parks it, which CompleteAsync is fenced by. It is
// JSON, opaque to users.
type TaskToken struct {
	Job        engine.JobID `json:"job"`
	Attempt    uint64       `json:"attempt"`
	WorkflowID string       `json:"workflow_id,omitempty"`
	ActivityID string       `json:"activity_id,omitempty"`
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
