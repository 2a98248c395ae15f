// Package httpapi serves an engine.Service over HTTP and implements engine.Service as a client of that API.
//
// # Routes
//
// Every route lives under /v1/. Commands are POSTed with the engine's
// command struct as the body and answer with its result struct; reads are
// GETs whose parameters are in the path and the query string.
//
//	POST   /v1/jobs                          CreateJob         -> CreateResult
//	POST   /v1/jobs/claim[?wait=30s]         Claim             -> ClaimResult (long poll with wait)
//	POST   /v1/jobs/claim?recall=1           Claim             -> ClaimResult (a sharded node: what the claims under its request id took)
//	POST   /v1/jobs/claim?cut=1              Claim             -> ClaimResult (a sharded node: ends its long polls under the request id)
//	POST   /v1/jobs/heartbeat                Heartbeat         -> HeartbeatResult
//	POST   /v1/jobs/append                   AppendEvents      -> AppendResult
//	POST   /v1/jobs/commit-step              CommitStep        -> AppendResult
//	POST   /v1/jobs/wait                     Wait              -> WaitResult
//	POST   /v1/jobs/signal                   Signal            -> SignalResult
//	POST   /v1/jobs/cancel                   Cancel            -> StatusResult
//	POST   /v1/jobs/activate                 Activate          -> StatusResult
//	POST   /v1/jobs/suspend                  Suspend           -> StatusResult
//	POST   /v1/jobs/resume                   Resume            -> StatusResult
//	POST   /v1/jobs/pause                    Pause             -> StatusResult (a run's pause)
//	POST   /v1/jobs/unpause                  Unpause           -> StatusResult
//	POST   /v1/jobs/pause-activity           PauseActivity     -> ActivityResult
//	POST   /v1/jobs/unpause-activity         UnpauseActivity   -> ActivityResult
//	POST   /v1/jobs/reset-activity           ResetActivity     -> ActivityResult
//	POST   /v1/jobs/update-activity-options  UpdateActivityOptions -> ActivityResult
//	POST   /v1/jobs/complete                 Complete          -> StatusResult
//	POST   /v1/jobs/fail                     Fail              -> StatusResult
//	POST   /v1/jobs/requeue                  Requeue           -> StatusResult
//	POST   /v1/jobs/request-cancel           RequestCancel     -> StatusResult
//	POST   /v1/jobs/continue-as-new          ContinueAsNew     -> CreateResult
//	POST   /v1/jobs/terminate                Terminate         -> StatusResult
//	POST   /v1/jobs/reset                    ResetJob          -> ResetResult (admin)
//	POST   /v1/jobs/lease-step               LeaseStep         -> StepResult
//	POST   /v1/jobs/step-heartbeat           StepHeartbeat     -> StepResult
//	POST   /v1/jobs/end-step-attempt         EndStepAttempt    -> StepResult
//	POST   /v1/jobs/answer-step              AnswerStep        -> StepResult (a person's answer)
//	POST   /v1/resources                     AddResource       -> ResourceResult
//	POST   /v1/resources/drain               DrainResource     -> ResourceResult
//	POST   /v1/resources/remove              RemoveResource    -> ResourceResult
//	POST   /v1/jobs/complete-async           CompleteAsync     -> StatusResult
//
//	GET    /v1/jobs?query=&order=&page_token=&limit=&status=&execution_status=&type=&queue=
//	             &workflow_id=&paused=&created_from_ms=&created_before_ms=&now_ms=&after=
//	                                         List -> ListPage (newest first by default)
//	GET    /v1/jobs/count?(list's filters)  Count -> CountResult
//	GET    /v1/jobs/{job}                    Describe by job id       -> Job
//	GET    /v1/workflows/{workflow}          Describe the current run -> Job
//	GET    /v1/jobs/{job}/history?after=&limit=               History -> HistoryPage
//	GET    /v1/jobs/{job}/history?after=&limit=&wait=30s      WatchHistory -> HistoryPage (long poll)
//	GET    /v1/jobs/{job}/history?after=&limit=&max_payload_bytes=
//	                                         QueryHistory (long payloads left out) -> HistoryPage
//	GET    /v1/jobs/{job}/effects/{step}     Effect (null when none)  -> Effect
//	GET    /v1/jobs/{job}/closed[?wait=30s]  wait until terminal      -> Job (long poll)
//	GET    /v1/workflows/{workflow}/closed[?wait=30s]                 -> Job (long poll)
//	GET    /v1/jobs/{job}/steps              Steps            -> StepsPage
//	GET    /v1/workflows/{workflow}/steps    Steps of the current run -> StepsPage
//	GET    /v1/jobs/{job}/steps?step=&max_question_bytes=
//	                                         QuerySteps (one step; long questions left out) -> StepsPage
//	GET    /v1/resources                     Resources        -> ResourcesPage
//	GET    /v1/resources/waiters?limit=      ResourceWaiters  -> ResourceWaitersPage
//	GET    /v1/task-queues                   ListTaskQueues   -> TaskQueueList (every member's pollers merged)
//	GET    /v1/task-queues/{queue}           DescribeTaskQueue -> TaskQueueDescription
//	GET    /v1/jobs/{job}/queued-reason      QueuedReason     -> QueuedReason
//	GET    /v1/workflows/{workflow}/queued-reason              -> QueuedReason
//	GET    /v1/node/task-queues              this node's own view (what members merge) -> TaskQueueList
//
//	POST   /v1/schedules                     CreateSchedule    -> ScheduleResult
//	POST   /v1/schedules/update              UpdateSchedule    -> ScheduleResult
//	POST   /v1/schedules/pause               PauseSchedule     -> ScheduleResult (paused false: unpause)
//	POST   /v1/schedules/trigger             TriggerSchedule   -> ScheduleResult
//	POST   /v1/schedules/backfill            BackfillSchedule  -> ScheduleResult
//	POST   /v1/schedules/delete              DeleteSchedule    -> ScheduleResult (empty)
//	GET    /v1/schedules?after=&limit=       ListSchedules     -> ScheduleListPage
//	GET    /v1/schedules/{schedule}          DescribeSchedule  -> ScheduleDescription
//
//	POST   /v1/query[?wait=30s]              QueryRequest      -> QueryResult
//	POST   /v1/query/poll[?wait=30s]         QueryPoll         -> QueryPollResult (workers)
//	POST   /v1/query/answer                  QueryAnswer       -> QueryAnswerResult (workers)
//
//	GET    /v1/whoami                        -> WhoAmI (the caller's name and role)
//
//	GET    /v1/cluster                       -> ClusterStatus
//	POST   /v1/cluster/members               ClusterMember (join)
//	DELETE /v1/cluster/members/{id}          remove a member
//	POST   /v1/cluster/leader/transfer       hand leadership to another member
//	GET    /v1/cluster/shards                -> ShardMap (a sharded cluster)
//	POST   /v1/cluster/shards/{shard}/leader ShardLeaderRequest -> PlacementChange
//	POST   /v1/cluster/shards/rebalance      -> PlacementChange
//	POST   /v1/cluster/shards/{shard}/move   MoveReplicaRequest -> PlacementChange
//	POST   /v1/cluster/shards/{shard}/move/cancel               -> PlacementChange
//	POST   /v1/cluster/shards/{shard}/hold   HoldRequest -> HoldAnswer (a backup's delivery hold)
//	POST   /v1/cluster/shards/{shard}/hold/release ReleaseRequest -> HoldAnswer
//	GET    /v1/cluster/shards/{shard}/copy?token=T -> the shard's state, streamed (its leader; admin)
//
//	POST   /v1/jobs/configure                ConfigureJob      -> StatusResult (a Draft job's input)
//	POST   /v1/tasks                         CreateReview      -> ReviewResult (review tasks)
//	POST   /v1/tasks/{op}                    ReviewCommand     -> ReviewResult; op is activate, config,
//	                                         suspend, resume, cancel, step, approve, reject,
//	                                         resubmit, fix or terminate (409 illegal_task_command
//	                                         with task_state and legal_commands when illegal)
//	POST   /v1/tasks/claim[?wait=30s]        ClaimReviews      -> ClaimReviewsResult (workers, reviewers; long poll with wait)
//	POST   /v1/tasks/claim?cut=1             ClaimReviews      -> ClaimReviewsResult (a sharded node: ends its long polls under the request id)
//	POST   /v1/tasks/report                  ReviewReport      -> ReviewResult (the lease holder)
//	POST   /v1/tasks/heartbeat               ReviewHeartbeat   -> ReviewHeartbeatResult
//	GET    /v1/tasks?job=                    the job's tasks   -> ReviewList
//	GET    /v1/tasks/awaiting?state=&queue=&type=&after=&limit=
//	                                         tasks awaiting a person, across jobs -> engine.AwaitingPage
//	GET    /v1/tasks/{task}                  a task by id      -> Review
//	GET    /v1/tasks/{task}/history          its history       -> ReviewHistory
//	GET    /v1/manifests/{job}               the job's manifest -> Manifest
//	GET    /v1/manifests/{job}/phases/{phase} a task by job and phase -> Review
//
//	GET    /healthz                          -> Health (alive; no token needed)
//	GET    /readyz                           -> Health, or 503 not_ready (no token needed)
//	GET    /metrics                          Prometheus exposition (with ServerConfig.Metrics; any known token)
//
// Every read takes ?stale=1: the node answers from its own state at once,
// which may lag the leader's (engine.WithStaleRead; the Client sends it when
// its context carries that mark). Without it a read is linearizable, and a
// follower forwards it to the leader. Such an answer, and that of a history
// long poll (served from the node's own state too), carries the headers
// X-Heddle-Stale: 1, X-Heddle-Node-Id, X-Heddle-Term,
// X-Heddle-Applied-Index, X-Heddle-Leader-Known and, when a leader is
// known, X-Heddle-Leader-Id; WithReadInfo hands them to a Client's caller.
//
// # Callers and roles
//
// With ServerConfig.Tokens (or AuthToken) every request carries
// "Authorization: Bearer <token>" (else 401 unauthorized), and the token's
// role must reach the route's (else 403 forbidden): reader for the GETs,
// client for starting, signalling, querying, cancelling, suspending,
// resuming and activating, worker for the routes a worker drives a job
// with and the query poll and answer, admin for terminate, reset and the
// cluster changes. A worker may terminate only a child of the run whose lease it
// holds (Terminate.ByParent, its parent-close policy). Server.routes holds
// the table. With ServerConfig.ClientCAs, a
// request without a token may authenticate with a client or node
// certificate instead, and a join must show the joining node's own. The
// caller's name becomes the Header.By of every command it sends.
//
// A browser's write from a page of another origin (Sec-Fetch-Site, else
// Origin, says so) is refused with 403 cross_origin before it is read or
// authenticated: a web page open in the browser of someone who can reach
// a server without tokens must not drive it. A server that listens on
// loopback should also answer to its own names only, against DNS
// rebinding: HostGuard does that (heddle's servers use it).
//
// Path segments are percent-escaped (a workflow id "a/b" is "a%2Fb"; "."
// and ".." must be written "%2E" and "%2E%2E"). A wait is a Go duration
// ("250ms", "30s") and is capped at ServerConfig.MaxWait; a long poll that
// finds nothing in time answers an empty list (claim, query poll) or the
// job's current, still open record (closed), and the caller asks again.
//
// # Bodies
//
// Bodies are JSON (Content-Type application/json, for people and scripts)
// or msgpack (Content-Type application/msgpack, what Client sends). A body
// without a Content-Type, or with another, is refused with 415
// (ErrUnsupportedMediaType): browsers send such bodies to other sites
// without a CORS preflight. An answer is
// encoded as the request's Accept header asks, else like its body, else as
// JSON. msgpack uses the types' msgpack tags (short keys, statuses as
// numbers); it is the SDK's wire and the JSON convention below leaves it
// untouched.
//
// JSON follows one convention, the one of the CLI's --json:
//
//   - Keys are snake_case: "workflow_id", "lease_ms", "seen_seq". A field
//     holding a job id is "job_id" (a Job's own id included, and
//     "parent_job_id"); times are Unix milliseconds under keys ending in
//     "_ms" ("created_ms", "lease_expiry_ms").
//   - Step states are written by name ("RUNNING", "NEEDS_USER"), as the
//     seed names them; on input the name or the number is accepted.
//   - Statuses are written by name ("Running", "Completed") and workflow-id
//     reuse policies by the CLI's names ("allow-after-terminal",
//     "reject-duplicate", "return-existing"). On input the name or the
//     number is accepted; a number this version does not know is written
//     as the number.
//   - Byte payloads (input, payload, result, error, args) are strings of
//     standard base64 with padding (RFC 4648 §4), as Go's encoding/json
//     writes []byte and as the protobuf JSON mapping writes bytes.
//   - Fields at their zero value are mostly left out; the lists of a page
//     or a claim are [] when empty, never null. A job's start digest is the
//     engine's own and is not in JSON.
//   - A request with a key the type does not have is refused, so a typo is
//     reported rather than ignored. Keys are matched case-insensitively (as
//     Go's decoder does: "Type" reads as "type"), but the old Go field
//     names are not accepted where they differ ("WorkflowID").
//
// The files under testdata/json show, key for key, the JSON of the main
// answers (Job, HistoryPage, ListPage, CreateResult, ErrorBody,
// ClusterStatus), and testdata/msgpack the same values' msgpack.
//
// A list's status filter takes a name ("Running") or a number; its time
// range keeps the jobs created at or after created_from_ms and before
// created_before_ms (Unix ms). A paging
// cursor (after=) never wraps: after the largest id or seq the page is
// empty.
//
// # Errors
//
// Every failure is answered with an ErrorBody: the HTTP status, the error's
// name ("stale_attempt", "unknown_job", "request_conflict", ...), its
// message and, for a node that is not the leader, the leader it knows of. A refused request writes
// nothing. Client maps the name back to the sentinel, so errors.Is works
// across the wire. A 503 means "try again, maybe elsewhere": no leader is
// known, the outcome is unknown (retry with the same request id), the
// node is closing (a long poll cut short by Server.Close), or it holds as
// many request bodies as it may (busy). A body that does not arrive
// within ReadTimeout is answered 408 (body_timeout) and its connection
// closed.
//
// # Cluster
//
// A node that is not the Raft leader answers a command with
// engine.ErrNotLeader; the Server then forwards the request once to the
// leader's HTTP address and relays the answer, so any node can be asked.
// Queries are brokered in memory and meet on the leader.
package httpapi
