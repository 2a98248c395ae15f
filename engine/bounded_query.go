package engine

import "context"

// BoundedReader reads histories and steps as History and Steps do, with
// their large payloads left out. A payload is up to Limits.MaxPayloadBytes
// and a history has no bound on its events, so a view that shows a run
// (the web UI's run page, which refetches itself every two seconds) would
// otherwise read every payload of the run to show a few of them. The
// payloads left out are not copied: the read costs the bytes it returns.
// embedded.Engine implements it in-process and package engine/httpapi over
// HTTP.
type BoundedReader interface {
	// QueryHistory returns one page of a job's history.
	QueryHistory(ctx context.Context, q HistoryQuery) (*HistoryPage, error)
	// QuerySteps returns the activity steps of a job, as Steps does.
	QuerySteps(ctx context.Context, q StepsQuery) ([]StepInfo, error)
}

// HistoryQuery asks for a page of a job's history: History's arguments and
// a bound on the payloads returned.
type HistoryQuery struct {
	Job JobID
	// AfterSeq and Limit are History's.
	AfterSeq uint64
	Limit    int
	// MaxPayloadBytes, when positive, leaves out of the page every event's
	// Payload and LastResult longer than this many bytes, and sets its
	// ElidedPayloadBytes or ElidedLastResultBytes to the length left out.
	// 0 returns every payload whole, as History does.
	MaxPayloadBytes int
}

// StepsQuery asks for the steps of a job: Steps' target, and optionally
// one step and a bound on the questions returned.
type StepsQuery struct {
	Target
	// Step, when not empty, returns only the step of that name (none when
	// the job has no such step).
	Step string
	// MaxQuestionBytes, when positive, leaves out every step's Question
	// whose stored payload is longer than this many bytes, and sets its
	// ElidedQuestionBytes to that length. 0 returns every question whole.
	MaxQuestionBytes int
}
