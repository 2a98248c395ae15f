package sdkhook

import "time"

// TurnProbe is implemented by a worker's clock that must know when the
// worker's turns are idle: package testsuite's clock, which skips time only
// while every run waits with nothing of its own to do. A worker whose clock
// implements it calls TurnWaiting from a turn's goroutine each time the turn
// waits for its inline activities, its history or a retry delay, and the
// function it returns when that wait ends. Implementations must not block,
// and must not call back into the worker.
type TurnProbe interface {
	// TurnWaiting is called as a turn of job starts to wait. seenSeq is the
	// last history event its workflow code has seen; inflight counts the
	// inline activities it started whose outcomes it has not taken yet;
	// wakeAt is when a retry delay the turn waits for ends (zero: none).
	TurnWaiting(job, seenSeq uint64, inflight int, wakeAt time.Time) (done func())
}

// CronFirstRunNow is implemented by package testsuite's clock: a worker
// whose clock implements it and answers true starts the first run of a
// cron child workflow at once (engine.CreateJob.CronFirstNow) instead of
// at the line's first time, as Temporal's test environment does.
type CronFirstRunNow interface {
	CronFirstRunNow() bool
}
