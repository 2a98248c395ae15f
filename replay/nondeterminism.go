package replay

import (
	"errors"
	"fmt"

	"github.com/heddlewf/heddle/engine"
)

// ErrNondeterminism is matched by every NondeterminismError.
var ErrNondeterminism = errors.New("replay: nondeterminism")

// NondeterminismError reports workflow code that no longer does what its
// history recorded: the step, the recorded event, and what the code did
// instead. Like Temporal's [TMPRL1100], it means the code changed in a way
// that needs GetVersion, or the code is not deterministic.
type NondeterminismError struct {
	Step string
	// Event is the recorded event the code disagrees with (nil when the code
	// issued a command the history has no room for).
	Event *engine.Event
	// Did describes what the code did at this point, e.g.
	// `scheduled activity "Charge"`, or "nothing" when it never issued the step.
	Did string
	// Where is the code position of the command ("file.go:42"), when known.
	Where string
}

func (e *NondeterminismError) Error() string {
	rec := "no event"
	if e.Event != nil {
		rec = fmt.Sprintf("%s %q at seq %d", e.Event.Type, e.Event.Name, e.Event.Seq)
	}
	where := ""
	if e.Where != "" {
		where = " at " + e.Where
	}
	return fmt.Sprintf("replay: nondeterminism at step %s: history has %s, the code %s%s [%s]",
		e.Step, rec, e.Did, where, NondeterminismCode)
}

// Unwrap makes errors.Is(err, ErrNondeterminism) true.
func (e *NondeterminismError) Unwrap() error { return ErrNondeterminism }

// Code returns the stable code of nondeterminism errors.
func (e *NondeterminismError) Code() string { return NondeterminismCode }
