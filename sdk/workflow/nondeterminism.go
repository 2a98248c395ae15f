package workflow

import "github.com/heddlewf/heddle/replay"

// NondeterminismError reports workflow code that no longer does what its
// history recorded: the step (Step), the recorded event (Event), what the
// code did instead (Did) and the line of workflow code that did it (Where).
// Its stable code is HDL-REPLAY-1100, like Temporal's TMPRL1100: the code
// changed in a way that needs GetVersion, or it is not deterministic. The
// worker fails the run with it; WorkflowReplayer returns it wrapped (use
// errors.As).
type NondeterminismError = replay.NondeterminismError

// ErrNondeterminism is matched by every NondeterminismError (errors.Is).
var ErrNondeterminism = replay.ErrNondeterminism
