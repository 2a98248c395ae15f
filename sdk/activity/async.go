package activity

import "errors"

// ErrResultPending, returned by an activity, says that someone else will
// complete it later with client.CompleteActivity (by Info.TaskToken) or
// CompleteActivityByID, as in Temporal. Only an activity task (one that
// runs on another task queue than its workflow's) may return it: its job
// then waits, holding no lease and no worker slot, until completed, or
// until its ScheduleToCloseTimeout ends it. An activity run inside its
// workflow's worker that returns it fails, for good, saying so.
var ErrResultPending = errors.New("activity: result pending; complete it with client.CompleteActivity")
