package sdkhook

// The names the workflow side and the worker side of a worker session agree
// on (sdk/workflow's CreateSession, sdk/worker's session host).
const (
	// SessionCreationActivity is the activity that holds a session open on
	// the worker that claimed it: it runs for as long as the session does,
	// on the creation queue of the session's base task queue.
	SessionCreationActivity = "internalSessionCreationActivity"
	// SessionCompletionActivity ends a session at once on its worker, so
	// that the worker frees its session slot without waiting for the
	// cancellation to reach the creation activity by heartbeat.
	SessionCompletionActivity = "internalSessionCompletionActivity"
	// SessionCreationQueueSuffix makes a task queue's session creation
	// queue, which only workers with sessions enabled claim from, and only
	// while they have a free session slot.
	SessionCreationQueueSuffix = "__internal_session_creation"
)

// SessionCreated is the payload of the signal, named by the session id as
// in Temporal, by which the creation activity tells the workflow where its
// session lives: the task queue only the session's worker claims from, and
// that worker's host name. (Temporal's field names, Taskqueue and HostName,
// decode into it too.)
type SessionCreated struct {
	TaskQueue string `json:"taskQueue"`
	HostName  string `json:"hostName"`
}

// ShortSessions is implemented by the worker clock of sdk/testsuite: a
// worker with such a clock ends a session's creation activity as soon as
// the session is created, as Temporal's test environment does, since a
// running activity would keep the environment's clock from skipping ahead.
// Such sessions do not hold a session slot and do not fail with their
// worker.
type ShortSessions interface {
	ShortSessions()
}
