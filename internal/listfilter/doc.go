// Package listfilter parses the filter language of workflow lists, which "heddle workflow list --query" and the web UI share, and pages through the list API with it.
//
// # Language
//
// A query is a list of terms separated by spaces; a run is listed when every
// term holds (there is no OR across terms). The empty query lists every run.
//
//	status=Running type=Order queue=orders created>2026-11-01T00:00Z
//	status=Running,Waiting id=order-* created>-24h
//	status!=Completed type="Nightly report" closed<=2026-11-02
//
// A term is field, operator, value:
//
//	field     operators       value
//	status    = !=            a status name, any case (Running, waiting)
//	type      = !=            a workflow type
//	queue     = !=            a task queue
//	id        = !=            a workflow id
//	created   > >= < <=       a time: when the run was created
//	closed    > >= < <=       a time: when the run ended (open runs never match)
//	paused    = !=            true or false: the run is open and paused
//
// "workflow_id" is another name of id and "task_queue" of queue; ":" is
// another spelling of "=". The fields of = and != take a list of values
// separated by commas, of which any one matches (= ) or none may (!=):
// status=Running,Waiting. A bare value ending in "*" matches every value
// that starts with what comes before the star (id=order-*); a quoted value
// is matched as written. A value holding spaces, commas or quotes is
// written in double quotes, with \" and \\ inside.
//
// A time is RFC 3339 ("2026-11-01T10:30:00Z", "2026-11-01T10:30Z",
// "2026-11-01T10:30:00+02:00"), a date or a time without a zone, read as UTC
// ("2026-11-01", "2026-11-01T10:30"), a count of Unix milliseconds, "now",
// or a duration back from now: "-90m", "now-24h", "-7d" (d is 24 hours).
// Relative times are fixed when the query is parsed.
//
// # Where the filtering happens
//
// The list API filters by one status, one type, one queue and a creation
// time range itself (Query.ListQuery). Everything else (several statuses,
// !=, prefixes, workflow ids, closing times) is checked on the runs the API
// returns (Query.Match), and Query.Page reads on until a page is full or a
// scan budget is spent, so a page is always a run of matching runs in
// creation order with a cursor that goes on where it stopped.
package listfilter
