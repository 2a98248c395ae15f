package storage

import (
	"encoding/binary"
	"fmt"
)

// The keyspace. Every key starts with one prefix byte; numbers are fixed-width
// big-endian so that byte order is numeric order; strings that are not the
// last component carry a 2-byte length so that one name can never be the
// prefix of another's range.
//
//	m<name>                           meta: applied log index, last Now, counters
//	j<job:8>                          job record
//	e<job:8><seq:8>                   history event
//	x<job:8><step>                    effect record (phase 1 of a step commit)
//	q<queue:len><readyAt:8><job:8>    ready index: claimable jobs in order
//	l<expiry:8><job:8>                lease-expiry index, for reclaim
//	t<fireAt:8><job:8><timer>         durable timers
//	d<releaseAt:8><job:8>             retry-delayed and deferred jobs, for release
//	o<dueAt:8><job:8>                 job deadlines (execution, run, schedule-to-start)
//	c<parent:8><child:8>              open children of a job, for its parent-close policies
//	w<workflowID>                     current run of a workflow id
//	s<status:1><job:8>                visibility by status
//	y<type:len><job:8>                visibility by workflow type
//	u<queue:len><job:8>               visibility by queue
//	r<requestID>                      the result of a request, for retries
//	a<at:8><requestID>                request records by age, for pruning
//	p<job:8><step>                    step record (explicit step leases, resources, persons)
//	v<resource>                       resource record
//	n<dueAt:8><job:8><step>           step deadlines: step-lease expiry, a person's answer timeout
//	i<seq:8><job:8><step>             steps waiting for a resource unit, first come first served
//	k<scheduleID>                     schedule record
//	z<dueAt:8><scheduleID>            schedules due for a look (fire times, closed runs)
//	f<job:8>                          paused jobs (an operator's pause, or an activity task held by its run's)
//	C<closedAt:8><job:8>              visibility by closing time: the runs that ended
//	W<workflowID:len><job:8>          visibility by workflow id: every run of an id
//	B<batchID>                        batch operation record
//	O<tag><…>                         cross-shard outbox: entries, delivered records, remote children (outboxkeys.go)
const (
	PrefixMeta     byte = 'm'
	PrefixJob      byte = 'j'
	PrefixEvent    byte = 'e'
	PrefixEffect   byte = 'x'
	PrefixReady    byte = 'q'
	PrefixLease    byte = 'l'
	PrefixTimer    byte = 't'
	PrefixDelayed  byte = 'd'
	PrefixDeadline byte = 'o'
	PrefixChild    byte = 'c'
	PrefixWorkflow byte = 'w'
	PrefixStatus   byte = 's'
	PrefixType     byte = 'y'
	PrefixQueue    byte = 'u'
	PrefixRequest  byte = 'r'
	PrefixReqAge   byte = 'a'
	PrefixStep     byte = 'p'
	PrefixResource byte = 'v'
	PrefixStepDue  byte = 'n'
	PrefixWaiter   byte = 'i'
	PrefixSchedule byte = 'k'
	PrefixSchedDue byte = 'z'
	PrefixPaused   byte = 'f'
	// The list's indexes beside status, type and queue (capitals, so
	// that they never take a letter another index may want).
	PrefixClosed byte = 'C'
	PrefixRuns   byte = 'W'
	// PrefixBatch holds the batch operations' records (a capital, as the
	// list's indexes: the lower-case letters are wanted by job indexes).
	PrefixBatch byte = 'B'
)

// Meta keys.
var (
	KeyAppliedIndex = []byte("mapplied")
	KeyLastNow      = []byte("mnow")
	KeyNextJob      = []byte("mnextjob")
	// KeyNextWaiter numbers the entries of the resource waiter queue.
	KeyNextWaiter = []byte("mnextwaiter")
)

// Low-water marks: for each time-ordered index, a time below which the
// index holds no live entry. Scans start there, so the deletion markers that
// finished work leaves at the front of an index are never walked again.
var (
	KeyLowLease    = []byte("mlow/l")
	KeyLowTimer    = []byte("mlow/t")
	KeyLowDelayed  = []byte("mlow/d")
	KeyLowDeadline = []byte("mlow/o")
	KeyLowStepDue  = []byte("mlow/n")
	// KeyLowWaiter is the lowest waiter seq the queue may still hold: the
	// entries before it were all served or found stale.
	KeyLowWaiter   = []byte("mlow/i")
	KeyLowSchedDue = []byte("mlow/z")
)

// LowReadyKey holds the low-water mark of queue's ready index.
func LowReadyKey(queue string) []byte { return append([]byte("mlow/q/"), queue...) }

// MaxKeyString is the longest string component a key may hold.
const MaxKeyString = 1<<16 - 1

func appendU64(b []byte, v uint64) []byte { return binary.BigEndian.AppendUint64(b, v) }

func appendStr(b []byte, s string) []byte {
	if len(s) > MaxKeyString {
		panic(fmt.Sprintf("storage: key string of %d bytes exceeds %d", len(s), MaxKeyString))
	}
	b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

func key(prefix byte, capacity int) []byte {
	b := make([]byte, 1, 1+capacity)
	b[0] = prefix
	return b
}

// JobKey is the key of job id's record.
func JobKey(id uint64) []byte { return appendU64(key(PrefixJob, 8), id) }

// EventPrefix is the prefix of job id's history.
func EventPrefix(id uint64) []byte { return appendU64(key(PrefixEvent, 16), id) }

// EventKey is the key of event seq of job id.
func EventKey(id, seq uint64) []byte { return appendU64(EventPrefix(id), seq) }

// EffectPrefix is the prefix of job id's effect records.
func EffectPrefix(id uint64) []byte { return appendU64(key(PrefixEffect, 8+16), id) }

// EffectKey is the key of the effect of step in job id.
func EffectKey(id uint64, step string) []byte { return append(EffectPrefix(id), step...) }

// ReadyPrefix is the prefix of queue's ready index.
func ReadyPrefix(queue string) []byte { return appendStr(key(PrefixReady, 2+len(queue)+16), queue) }

// ReadyKey orders job id in queue by the time it became ready.
func ReadyKey(queue string, readyAtMS int64, id uint64) []byte {
	return appendU64(appendU64(ReadyPrefix(queue), uint64(readyAtMS)), id)
}

// LeaseKey orders job id's lease by its expiry.
func LeaseKey(expiryMS int64, id uint64) []byte {
	return appendU64(appendU64(key(PrefixLease, 16), uint64(expiryMS)), id)
}

// TimerKey orders timer of job id by its firing time.
func TimerKey(fireAtMS int64, id uint64, timer string) []byte {
	return append(appendU64(appendU64(key(PrefixTimer, 16+len(timer)), uint64(fireAtMS)), id), timer...)
}

// DelayedKey orders job id by the time its retry delay ends.
func DelayedKey(releaseAtMS int64, id uint64) []byte {
	return appendU64(appendU64(key(PrefixDelayed, 16), uint64(releaseAtMS)), id)
}

// DeadlineKey orders job id by the time its earliest deadline falls due.
func DeadlineKey(dueAtMS int64, id uint64) []byte {
	return appendU64(appendU64(key(PrefixDeadline, 16), uint64(dueAtMS)), id)
}

// PausedPrefix is where the paused jobs are listed, in job id order.
var PausedPrefix = []byte{PrefixPaused}

// PausedKey lists job id as paused.
func PausedKey(id uint64) []byte { return appendU64(key(PrefixPaused, 8), id) }

// ChildPrefix is where the open children of job parent are listed.
func ChildPrefix(parent uint64) []byte { return appendU64(key(PrefixChild, 16), parent) }

// ChildKey lists child as an open child of parent.
func ChildKey(parent, child uint64) []byte { return appendU64(ChildPrefix(parent), child) }

// ParseChildKey returns the child a ChildKey names.
func ParseChildKey(k []byte) (uint64, error) {
	if len(k) != 17 || k[0] != PrefixChild {
		return 0, fmt.Errorf("%w: child key %x", ErrCorrupt, k)
	}
	return binary.BigEndian.Uint64(k[9:]), nil
}

// WorkflowKey is the key holding the current run of a workflow id.
func WorkflowKey(workflowID string) []byte {
	return append(key(PrefixWorkflow, len(workflowID)), workflowID...)
}

// StatusPrefix is the prefix of the visibility index for one status.
func StatusPrefix(status byte) []byte { return append(key(PrefixStatus, 9), status) }

// StatusKey places job id in the visibility index of status.
func StatusKey(status byte, id uint64) []byte { return appendU64(StatusPrefix(status), id) }

// TypePrefix is the prefix of the visibility index for one workflow type.
func TypePrefix(typ string) []byte { return appendStr(key(PrefixType, 2+len(typ)+8), typ) }

// TypeKey places job id in the visibility index of its type.
func TypeKey(typ string, id uint64) []byte { return appendU64(TypePrefix(typ), id) }

// QueuePrefix is the prefix of the visibility index for one queue.
func QueuePrefix(queue string) []byte { return appendStr(key(PrefixQueue, 2+len(queue)+8), queue) }

// QueueKey places job id in the visibility index of its queue.
func QueueKey(queue string, id uint64) []byte { return appendU64(QueuePrefix(queue), id) }

// ClosedPrefix is the prefix of the visibility index by closing time.
var ClosedPrefix = []byte{PrefixClosed}

// ClosedKey places job id, which ended at closedMS, in the visibility
// index by closing time.
func ClosedKey(closedMS int64, id uint64) []byte {
	return appendU64(appendU64(key(PrefixClosed, 16), uint64(closedMS)), id)
}

// ParseClosedKey decodes a ClosedKey.
func ParseClosedKey(k []byte) (closedMS int64, id uint64, err error) {
	if len(k) != 17 || k[0] != PrefixClosed {
		return 0, 0, keyError(k, "not a closing-time key")
	}
	return int64(binary.BigEndian.Uint64(k[1:9])), binary.BigEndian.Uint64(k[9:]), nil
}

// RunsPrefix is the prefix of the visibility index of workflow id's runs.
func RunsPrefix(workflowID string) []byte {
	return appendStr(key(PrefixRuns, 2+len(workflowID)+8), workflowID)
}

// RunsKey places job id among the runs of its workflow id.
func RunsKey(workflowID string, id uint64) []byte { return appendU64(RunsPrefix(workflowID), id) }

// RequestKey holds the recorded result of a request id.
func RequestKey(requestID string) []byte {
	return append(key(PrefixRequest, len(requestID)), requestID...)
}

// RequestAgeKey orders a request record by the time it was written.
func RequestAgeKey(atMS int64, requestID string) []byte {
	return append(appendU64(key(PrefixReqAge, 8+len(requestID)), uint64(atMS)), requestID...)
}

// StepPrefix is the prefix of job id's step records.
func StepPrefix(id uint64) []byte { return appendU64(key(PrefixStep, 8+16), id) }

// StepKey is the key of the record of step in job id.
func StepKey(id uint64, step string) []byte { return append(StepPrefix(id), step...) }

// ResourceKey is the key of a resource record.
func ResourceKey(id string) []byte { return append(key(PrefixResource, len(id)), id...) }

// StepDueKey orders a step's deadline (its step lease's expiry, or the time
// a person's answer is due) by time.
func StepDueKey(dueAtMS int64, id uint64, step string) []byte {
	return append(appendU64(appendU64(key(PrefixStepDue, 16+len(step)), uint64(dueAtMS)), id), step...)
}

// WaiterKey places step of job id in the resource waiter queue at seq.
func WaiterKey(seq, id uint64, step string) []byte {
	return append(appendU64(appendU64(key(PrefixWaiter, 16+len(step)), seq), id), step...)
}

// WaiterEntry is a decoded waiter-queue key.
type WaiterEntry struct {
	Seq  uint64
	Job  uint64
	Step string
}

// ParseWaiterKey decodes a waiter-queue key.
func ParseWaiterKey(k []byte) (WaiterEntry, error) {
	if len(k) < 17 || k[0] != PrefixWaiter {
		return WaiterEntry{}, keyError(k, "not a waiter key")
	}
	return WaiterEntry{Seq: binary.BigEndian.Uint64(k[1:9]), Job: binary.BigEndian.Uint64(k[9:17]), Step: string(k[17:])}, nil
}

// BatchKey is the key of batch id's record.
func BatchKey(id string) []byte { return append(key(PrefixBatch, len(id)), id...) }

// BatchPrefix is where the batch records are, in id order.
var BatchPrefix = []byte{PrefixBatch}

// ScheduleKey is the key of schedule id's record.
func ScheduleKey(id string) []byte { return append(key(PrefixSchedule, len(id)), id...) }

// SchedDueKey orders schedule id by the time it must next be looked at.
func SchedDueKey(dueAtMS int64, id string) []byte {
	return append(appendU64(key(PrefixSchedDue, 8+len(id)), uint64(dueAtMS)), id...)
}

// Single-byte prefixes of the time-ordered indexes, for range scans.
var (
	SchedulePrefix = []byte{PrefixSchedule}
	SchedDuePrefix = []byte{PrefixSchedDue}
	LeasePrefix    = []byte{PrefixLease}
	TimerPrefix    = []byte{PrefixTimer}
	DelayedPrefix  = []byte{PrefixDelayed}
	DeadlinePrefix = []byte{PrefixDeadline}
	ReqAgePrefix   = []byte{PrefixReqAge}
	JobPrefix      = []byte{PrefixJob}
	StepDuePrefix  = []byte{PrefixStepDue}
	WaiterPrefix   = []byte{PrefixWaiter}
	ResourcePrefix = []byte{PrefixResource}
)

// TimeKey is the decoded form of the time-ordered index keys (lease, timer,
// delayed, deadline, step deadline, request age, schedule due): a time, and
// for the job indexes a job id and the rest of the key (a timer name, a
// step, or a request or schedule id for age and schedule keys).
type TimeKey struct {
	AtMS int64
	Job  uint64
	Rest string
}

// ParseTimeKey decodes a lease, timer, delayed, deadline, step-deadline,
// request-age or schedule-due key.
func ParseTimeKey(k []byte) (TimeKey, error) {
	if len(k) < 9 {
		return TimeKey{}, keyError(k, "too short for a time key")
	}
	tk := TimeKey{AtMS: int64(binary.BigEndian.Uint64(k[1:9]))}
	// A task lease key (storage/taskkeys.go) is read like a job's, with
	// the task id in Job.
	if k[0] == PrefixReviewLease {
		if len(k) != 17 {
			return TimeKey{}, keyError(k, "wrong length for a task lease key")
		}
		tk.Job = binary.BigEndian.Uint64(k[9:17])
		return tk, nil
	}
	switch k[0] {
	case PrefixReqAge, PrefixSchedDue:
		tk.Rest = string(k[9:])
		return tk, nil
	case PrefixLease, PrefixDelayed, PrefixDeadline, PrefixTimer, PrefixStepDue:
		if len(k) < 17 || (k[0] != PrefixTimer && k[0] != PrefixStepDue && len(k) != 17) {
			return TimeKey{}, keyError(k, "wrong length for a job time key")
		}
		tk.Job = binary.BigEndian.Uint64(k[9:17])
		tk.Rest = string(k[17:])
		return tk, nil
	}
	return TimeKey{}, keyError(k, "not a time-ordered index key")
}

// ReadyEntry is a decoded ready-index key.
type ReadyEntry struct {
	Queue     string
	ReadyAtMS int64
	Job       uint64
}

// ParseReadyKey decodes a ready-index key.
func ParseReadyKey(k []byte) (ReadyEntry, error) {
	if len(k) < 3 || k[0] != PrefixReady {
		return ReadyEntry{}, keyError(k, "not a ready key")
	}
	n := int(binary.BigEndian.Uint16(k[1:3]))
	if len(k) != 3+n+16 {
		return ReadyEntry{}, keyError(k, "wrong length for a ready key")
	}
	return ReadyEntry{
		Queue:     string(k[3 : 3+n]),
		ReadyAtMS: int64(binary.BigEndian.Uint64(k[3+n:])),
		Job:       binary.BigEndian.Uint64(k[3+n+8:]),
	}, nil
}

// ParseQueueKey returns the queue a queue visibility key (QueueKey) names.
func ParseQueueKey(k []byte) (string, error) {
	if len(k) < 3 || k[0] != PrefixQueue {
		return "", keyError(k, "not a queue key")
	}
	n := int(binary.BigEndian.Uint16(k[1:3]))
	if len(k) != 3+n+8 {
		return "", keyError(k, "wrong length for a queue key")
	}
	return string(k[3 : 3+n]), nil
}

// TrailingJob returns the job id in the last 8 bytes of an index key (ready,
// status, type, queue, runs and closing-time keys all end with one).
func TrailingJob(k []byte) (uint64, error) {
	if len(k) < 9 {
		return 0, keyError(k, "too short to end in a job id")
	}
	return binary.BigEndian.Uint64(k[len(k)-8:]), nil
}

// ParseJobKey decodes a job-record key.
func ParseJobKey(k []byte) (uint64, error) {
	if len(k) != 9 || k[0] != PrefixJob {
		return 0, keyError(k, "not a job key")
	}
	return binary.BigEndian.Uint64(k[1:]), nil
}

// ParseEventKey decodes an event key.
func ParseEventKey(k []byte) (job, seq uint64, err error) {
	if len(k) != 17 || k[0] != PrefixEvent {
		return 0, 0, keyError(k, "not an event key")
	}
	return binary.BigEndian.Uint64(k[1:9]), binary.BigEndian.Uint64(k[9:]), nil
}

// PrefixEnd returns the smallest key greater than every key with prefix p,
// or nil when p is all 0xff bytes.
func PrefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// U64 encodes v as 8 big-endian bytes, the form of numeric meta values.
func U64(v uint64) []byte { return appendU64(nil, v) }

// ParseU64 decodes an 8-byte big-endian meta value.
func ParseU64(b []byte) (uint64, error) {
	if len(b) != 8 {
		return 0, &CorruptError{Kind: KindMeta, Reason: fmt.Sprintf("numeric meta value has %d bytes, want 8", len(b))}
	}
	return binary.BigEndian.Uint64(b), nil
}

func keyError(k []byte, reason string) error {
	return &CorruptError{Key: append([]byte(nil), k...), Kind: KindKey, Reason: reason}
}
