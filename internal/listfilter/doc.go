// Package listfilter parses the filter language of workflow lists: the
// Query of engine.ListQuery, which "heddle workflow list --query", the web
// UI, the HTTP API's query parameter and the Go client's ListWorkflow
// share. The engine evaluates it (engine/machine walks the index the
// filter allows and checks each run with Match).
//
// # Language
//
// Temporal's list filter is accepted as Temporal writes it, and heddle's
// shorter terms beside it, in one query if need be:
//
//	WorkflowType = "Order" AND ExecutionStatus = "Running"
//	(WorkflowId = "a" OR WorkflowId STARTS_WITH "order-") AND StartTime > "2026-11-01T00:00:00Z"
//	ExecutionStatus IN ("Failed", "TimedOut") ORDER BY CloseTime DESC
//	StartTime BETWEEN "2026-11-01" AND "2026-11-02"
//	status=Running,Waiting type=Order id=order-* created>-24h
//
// A query is comparisons joined by AND and OR (AND binds tighter; a space
// between two comparisons is an AND, as in heddle's terms), grouped with
// parentheses, and an optional ORDER BY StartTime or CloseTime, ASC (the
// default, as in SQL) or DESC. Keywords are read in any case.
//
//	field            other names                 operators
//	ExecutionStatus  status, execution_status    = != IN, NOT IN
//	WorkflowType     type, workflow_type         = != IN, NOT IN, STARTS_WITH, NOT STARTS_WITH
//	TaskQueue        queue, task_queue           (as WorkflowType)
//	WorkflowId       id, workflow_id             (as WorkflowType)
//	RunId            run, run_id, job            = != IN, NOT IN
//	StartTime        created, start_time         = != > >= < <= BETWEEN … AND …, NOT BETWEEN
//	CloseTime        closed, close_time          (as StartTime)
//	HeddleStatus     heddle_status               = != IN, NOT IN
//	Paused           paused, is_paused           = != (true or false)
//
// Field names are read in any case; ":" is another spelling of "=", and
// "<>" of "!=".
//
// A value is quoted ("…" or '…', where a backslash escapes the quote and
// itself) or bare (up to a space, a comma or a parenthesis). After = and
// !=, heddle's forms work too: a list of values separated by commas, any
// one of which matches (=) or none of which may (!=): status=Running,Waiting;
// and a bare value ending in "*" matches every value that starts with what
// comes before the star (id=order-*). A quoted value is matched as written.
//
// # Statuses
//
// ExecutionStatus (and heddle's status) takes Temporal's statuses:
// Running is every run that has not ended (Queued, Running, Waiting,
// Parked, Retrying, Draft and Suspended in heddle), Completed a run that
// completed without continuing as new, ContinuedAsNew one that did,
// Failed, Canceled (or Cancelled), Terminated and TimedOut; and beside
// them Open and Closed, and heddle's own open statuses by name (Queued,
// Waiting, Parked, Retrying, Draft, Suspended). HeddleStatus takes heddle's
// statuses exactly as describe shows them, where Running is a run whose
// lease a worker holds now and Completed includes the runs that continued
// as new, and Open and Closed.
//
// Pause is a flag beside a run's status, not a status: a paused run keeps
// its status (Waiting, Queued, ...) and so is Running in Temporal's sense
// and in the Open group. ExecutionStatus = "Paused" (Temporal's way) and
// Paused = true (heddle's) both keep the open runs that are paused;
// ExecutionStatus != "Paused" and Paused = false the others.
//
// # Times
//
// A time is RFC 3339 ("2026-11-01T10:30:00Z", "2026-11-01T10:30Z",
// "2026-11-01T10:30:00+02:00"), a date or a time without a zone, read as UTC
// ("2026-11-01", "2026-11-01T10:30"), a count of Unix milliseconds, "now",
// or a duration back from now: "-90m", "now-24h", "-7d" (d is 24 hours).
// Relative times are fixed when the query is parsed. CloseTime compares
// with nothing on a run that has not ended, as SQL's NULL: every
// comparison of it keeps only runs that ended.
//
// # Bounds
//
// Parse reads at most 4096 characters, parentheses 32 deep, 256
// comparisons and 256 values in a list, and says what is wrong with a
// *SyntaxError naming the column and the token found there.
package listfilter
