package metrics

import "github.com/prometheus/client_golang/prometheus"

// Family describes one metric family: the table that New registers from
// and that docs/observability.md lists.
type Family struct {
	// Name is the full metric name, as scraped.
	Name string
	// Type is "counter", "gauge" or "histogram".
	Type string
	// Labels are the variable labels, in order.
	Labels []string
	// Help is the family's one-line meaning.
	Help string
	// buckets are a histogram's upper bounds.
	buckets []float64
}

// Bucket layouts. Engine work is measured in microseconds, everything that
// waits on a disk, a network or user code in milliseconds to minutes.
var (
	fastSeconds = prometheus.ExponentialBuckets(10e-6, 4, 10)      // 10µs .. 2.6s
	slowSeconds = prometheus.ExponentialBuckets(1e-3, 4, 10)       // 1ms .. 262s
	batchSizes  = prometheus.ExponentialBuckets(1, 2, 12)          // 1 .. 2048
	lagSeconds  = prometheus.ExponentialBucketsRange(1e-3, 60, 12) // 1ms .. 60s
)

// Family names, so that the recording code and the tests name them once.
const (
	EngineCommands        = "heddle_engine_commands_total"
	EngineApplySeconds    = "heddle_engine_apply_seconds"
	EngineCommitSeconds   = "heddle_engine_commit_seconds"
	EngineBatchCommands   = "heddle_engine_batch_commands"
	EngineCommits         = "heddle_engine_commits_total"
	EngineSyncs           = "heddle_engine_syncs_total"
	EngineJobs            = "heddle_engine_jobs"
	EngineJobsClosed      = "heddle_engine_jobs_closed_total"
	EngineReclaims        = "heddle_engine_reclaims_total"
	EngineStaleAttempts   = "heddle_engine_stale_attempts_total"
	EngineTimerLateness   = "heddle_engine_timer_lateness_seconds"
	EngineSchedulerLag    = "heddle_engine_scheduler_lag_seconds"
	EngineOutboxPending   = "heddle_engine_outbox_pending"
	EngineOutboxAcked     = "heddle_engine_outbox_acknowledged_total"
	RaftLeaderChanges     = "heddle_raft_leader_changes_total"
	RaftIsLeader          = "heddle_raft_is_leader"
	RaftTerm              = "heddle_raft_term"
	RaftCommitIndex       = "heddle_raft_commit_index"
	RaftAppliedIndex      = "heddle_raft_applied_index"
	RaftLastIndex         = "heddle_raft_last_index"
	RaftLogEntries        = "heddle_raft_log_entries"
	RaftSnapshotBytes     = "heddle_raft_snapshot_bytes"
	RaftLastContact       = "heddle_raft_last_contact_seconds"
	RaftOpSeconds         = "heddle_raft_op_seconds"
	RaftEvents            = "heddle_raft_events_total"
	WorkerTurnSeconds     = "heddle_worker_turn_seconds"
	WorkerTurnErrors      = "heddle_worker_turn_errors_total"
	WorkerActivitySecs    = "heddle_worker_activity_seconds"
	WorkerActivities      = "heddle_worker_activities_total"
	WorkerCacheHits       = "heddle_worker_cache_hits_total"
	WorkerCacheMisses     = "heddle_worker_cache_misses_total"
	WorkerReplays         = "heddle_worker_replays_total"
	WorkerReplayedEvents  = "heddle_worker_replayed_events_total"
	WorkerNondeterminism  = "heddle_worker_nondeterminism_errors_total"
	EngineStepTransitions = "heddle_engine_step_state_transitions_total"
	EngineStepsByState    = "heddle_engine_steps_by_state"
	WorkerStepSeconds     = "heddle_worker_step_duration_seconds"
	WorkerStepRetries     = "heddle_worker_step_retries_total"
	HTTPRequests          = "heddle_http_requests_total"
	HTTPRequestSeconds    = "heddle_http_request_seconds"
	HTTPInFlight          = "heddle_http_requests_in_flight"
)

var families = []Family{
	{EngineCommands, "counter", []string{"kind", "outcome"},
		"Commands applied, by command kind and outcome: ok, or the name of the error that refused it.", nil},
	{EngineApplySeconds, "histogram", []string{"kind"},
		"Time engine.Apply took for one command, measured around it by the log or the Raft state machine.", fastSeconds},
	{EngineCommitSeconds, "histogram", nil,
		"Time one group commit (the Badger transaction holding a batch of commands) took to commit.", fastSeconds},
	{EngineBatchCommands, "histogram", nil,
		"Commands applied in one group commit (the embedded log's batch, or the Raft entries of one apply).", batchSizes},
	{EngineCommits, "counter", nil,
		"Group commits that wrote something.", nil},
	{EngineSyncs, "counter", nil,
		"Syncs of the state database to disk: one per commit embedded; one per snapshot on a Raft node, whose log is the durable record.", nil},
	{EngineJobs, "gauge", []string{"status", "queue"},
		"Open jobs (not in a terminal status) by status and task queue, counted from the status index at open and kept up to date from every commit; a queue's series are exported while it has an open job, and queues beyond the first 100 (Options.MaxQueues) are counted as queue=\"_other\".", nil},
	{EngineJobsClosed, "counter", []string{"status", "queue"},
		"Jobs that reached a terminal status, by that status and task queue, since this process opened the store; queues beyond the first 100 (Options.MaxQueues) are counted as queue=\"_other\".", nil},
	{EngineReclaims, "counter", nil,
		"Jobs taken back from a worker whose lease expired (Reclaim).", nil},
	{EngineStaleAttempts, "counter", []string{"kind"},
		"Fenced writes refused because their attempt was no longer the job's current one, heartbeat refusals included, by command kind.", nil},
	{EngineTimerLateness, "histogram", nil,
		"How late a durable timer fired: the firing command's time less the timer's due time.", lagSeconds},
	{EngineSchedulerLag, "histogram", []string{"sweep"},
		"How late the scheduler proposed a sweep (timers, leases or delayed): the proposal's time less the earliest due time.", lagSeconds},
	{EngineOutboxPending, "gauge", []string{"target"},
		"Outbox entries of this shard not yet acknowledged, by target shard, as this node last read them while it led the shard (0 when it does not lead it); a sharded node only.", nil},
	{EngineOutboxAcked, "counter", []string{"target"},
		"Outbox entries of this shard this node delivered to their target shard and acknowledged, by target shard; a sharded node only.", nil},

	{RaftLeaderChanges, "counter", nil,
		"Changes of leader this node observed (including to no leader).", nil},
	{RaftIsLeader, "gauge", nil,
		"1 while this node is the Raft leader, else 0.", nil},
	{RaftTerm, "gauge", nil,
		"This node's current Raft term.", nil},
	{RaftCommitIndex, "gauge", nil,
		"The highest log index this node knows to be committed.", nil},
	{RaftAppliedIndex, "gauge", nil,
		"The highest log index this node's state machine has applied.", nil},
	{RaftLastIndex, "gauge", nil,
		"The last index in this node's log.", nil},
	{RaftLogEntries, "gauge", nil,
		"Entries kept in this node's log (last index less first index, plus one): what the next snapshot compacts.", nil},
	{RaftSnapshotBytes, "gauge", nil,
		"Size of this node's newest snapshot (0 before the first).", nil},
	{RaftLastContact, "gauge", nil,
		"Seconds since this follower last heard from the leader; 0 on the leader, -1 when never.", nil},
	{RaftOpSeconds, "histogram", []string{"op"},
		"Timings hashicorp/raft reports through go-metrics (commitTime, fsm.apply, rpc.appendEntries, snapshot.persist, ...), by operation.", slowSeconds},
	{RaftEvents, "counter", []string{"event"},
		"Events hashicorp/raft counts through go-metrics (apply, barrier, state.leader, transition.heartbeat_timeout, ...).", nil},

	{WorkerTurnSeconds, "histogram", []string{"queue", "workflow_type"},
		"Time a worker drove one workflow turn: from the claim to the wait, completion or failure that released the job.", slowSeconds},
	{WorkerTurnErrors, "counter", []string{"queue"},
		"Turns that ended with an error in the worker (the job was left to its lease).", nil},
	{WorkerActivitySecs, "histogram", []string{"queue", "activity_type"},
		"Time one try of an activity took.", slowSeconds},
	{WorkerActivities, "counter", []string{"queue", "activity_type", "outcome"},
		"Tries of activities by outcome: completed, failed, timeout or canceled.", nil},
	{WorkerCacheHits, "counter", []string{"queue"},
		"Turns that found their workflow's execution in the worker's cache.", nil},
	{WorkerCacheMisses, "counter", []string{"queue"},
		"Turns that did not find their workflow's execution in the cache.", nil},
	{WorkerReplays, "counter", []string{"queue"},
		"Turns that rebuilt a workflow's state by replaying its history from the start (a cache miss on a run that already had turns).", nil},
	{WorkerReplayedEvents, "counter", []string{"queue"},
		"History events replayed by those turns.", nil},
	{WorkerNondeterminism, "counter", []string{"queue", "workflow_type"},
		"Runs stopped because the workflow code no longer matched its history.", nil},

	{EngineStepTransitions, "counter", []string{"from_state", "to_state"},
		"Step state transitions (docs/state-machines.md §3) the engine applied, by the state left and the state entered; a step on the straight path counts its whole path when its result lands.", nil},
	{WorkerStepSeconds, "histogram", []string{"capability", "status"},
		"Time from a step's issue by the workflow to its end (succeeded or failed), waits for resources, retries and people included, by the capabilities it required (\"none\" for none).", slowSeconds},
	{WorkerStepRetries, "counter", []string{"capability"},
		"Tries of steps that failed and were retried (FAILED_RETRYABLE), by the capabilities the step required (\"none\" for none).", nil},
	{EngineStepsByState, "gauge", []string{"state"},
		"Steps of open runs that hold a step lease of their own (a resource, a critic, dependencies, a person), by their non-terminal state, counted from the step records at open and kept up to date from every commit.", nil},

	{HTTPRequests, "counter", []string{"route", "code"},
		"HTTP API requests by route pattern (\"POST /v1/jobs/claim\") and status code.", nil},
	{HTTPRequestSeconds, "histogram", []string{"route"},
		"Time to answer an HTTP API request, by route pattern; long polls count their wait.", slowSeconds},
	{HTTPInFlight, "gauge", nil,
		"HTTP API requests being answered.", nil},
}

// Families returns every metric family New registers, in the order of the
// documentation.
func Families() []Family {
	out := make([]Family, len(families))
	copy(out, families)
	return out
}
