package storage

import (
	"encoding/binary"
	"fmt"
)

// The review tasks' keyspace (docs/state-machines.md §4). Tasks have a
// prefix byte of their own, with one sub-tag byte per kind of key, and their
// lease-expiry index a second prefix byte so that it is a time-ordered index
// like the others (ParseTimeKey reads it, the scheduler sweeps it).
//
//	gr<task:8>                          task record
//	ge<task:8><seq:8>                   task history event
//	gj<job:len><task:8>                 the tasks of a job (a DAG), in creation order
//	gn<job:len><phase>                  a job's task by phase name (value: the task id)
//	gd<upstream:8><task:8>              dependants of a task, to release when it succeeds
//	gq<queue:len><readyAt:8><task:8>    tasks ready for work: PENDING with every dependency met
//	gv<queue:len><readyAt:8><task:8>    tasks ready for review: REVIEWING without a reviewer
//	ga<task:8>                          tasks awaiting a person (review, approval, intervention), across jobs
//	h<expiry:8><task:8>                 task lease expiries (workers' and reviewers'), for recovery
const (
	PrefixTask      byte = 'g'
	PrefixTaskLease byte = 'h'
)

// Record kinds of tasks; the numbers are stored and never reused.
const (
	KindTask      Kind = 16
	KindTaskEvent Kind = 17
)

// Sub-tags of the task keys.
const (
	taskTagRecord = 'r'
	taskTagEvent  = 'e'
	taskTagJob    = 'j'
	taskTagPhase  = 'n'
	taskTagDep    = 'd'
	taskTagWork   = 'q'
	taskTagReview = 'v'
	taskTagAwait  = 'a'
)

// KeyNextTask numbers tasks; KeyLowTaskLease is the low-water mark of the
// task lease index.
var (
	KeyNextTask     = []byte("mnexttask")
	KeyLowTaskLease = []byte("mlow/h")
)

// Prefixes of the task key kinds, for scans.
var (
	TaskRecordPrefix = []byte{PrefixTask, taskTagRecord}
	TaskEventsPrefix = []byte{PrefixTask, taskTagEvent}
	TaskJobsPrefix   = []byte{PrefixTask, taskTagJob}
	TaskPhasesPrefix = []byte{PrefixTask, taskTagPhase}
	TaskDepsPrefix   = []byte{PrefixTask, taskTagDep}
	TaskWorkPrefix   = []byte{PrefixTask, taskTagWork}
	TaskReviewPrefix = []byte{PrefixTask, taskTagReview}
	TaskAwaitPrefix  = []byte{PrefixTask, taskTagAwait}
	TaskLeasePrefix  = []byte{PrefixTaskLease}
)

func taskKey(tag byte, capacity int) []byte {
	b := make([]byte, 2, 2+capacity)
	b[0], b[1] = PrefixTask, tag
	return b
}

// TaskKey is the key of task id's record.
func TaskKey(id uint64) []byte { return appendU64(taskKey(taskTagRecord, 8), id) }

// TaskEventPrefix is the prefix of task id's history.
func TaskEventPrefix(id uint64) []byte { return appendU64(taskKey(taskTagEvent, 16), id) }

// TaskEventKey is the key of event seq of task id.
func TaskEventKey(id, seq uint64) []byte { return appendU64(TaskEventPrefix(id), seq) }

// TaskJobPrefix is the prefix of job's tasks.
func TaskJobPrefix(job string) []byte { return appendStr(taskKey(taskTagJob, 2+len(job)+8), job) }

// TaskJobKey lists task id under job.
func TaskJobKey(job string, id uint64) []byte { return appendU64(TaskJobPrefix(job), id) }

// TaskPhaseKey holds the id of job's task named phase.
func TaskPhaseKey(job, phase string) []byte {
	return append(appendStr(taskKey(taskTagPhase, 2+len(job)+len(phase)), job), phase...)
}

// TaskDepPrefix is the prefix of the dependants of task upstream.
func TaskDepPrefix(upstream uint64) []byte { return appendU64(taskKey(taskTagDep, 16), upstream) }

// TaskDepKey lists task id as a dependant of upstream.
func TaskDepKey(upstream, id uint64) []byte { return appendU64(TaskDepPrefix(upstream), id) }

// TaskWorkQueuePrefix returns the prefix of queue's index of tasks ready for work.
func TaskWorkQueuePrefix(queue string) []byte {
	return appendStr(taskKey(taskTagWork, 2+len(queue)+16), queue)
}

// TaskWorkKey orders task id in queue's work index by the time it became ready.
func TaskWorkKey(queue string, readyAtMS int64, id uint64) []byte {
	return appendU64(appendU64(TaskWorkQueuePrefix(queue), uint64(readyAtMS)), id)
}

// TaskReviewQueuePrefix returns the prefix of queue's index of tasks ready for review.
func TaskReviewQueuePrefix(queue string) []byte {
	return appendStr(taskKey(taskTagReview, 2+len(queue)+16), queue)
}

// TaskReviewKey orders task id in queue's review index by the time it became ready.
func TaskReviewKey(queue string, readyAtMS int64, id uint64) []byte {
	return appendU64(appendU64(TaskReviewQueuePrefix(queue), uint64(readyAtMS)), id)
}

// TaskAwaitKey lists task id among the tasks awaiting a person, in
// creation (id) order across every job.
func TaskAwaitKey(id uint64) []byte { return appendU64(taskKey(taskTagAwait, 8), id) }

// TaskLeaseKey orders task id's lease by its expiry.
func TaskLeaseKey(expiryMS int64, id uint64) []byte {
	return appendU64(appendU64([]byte{PrefixTaskLease}, uint64(expiryMS)), id)
}

// LastU64 returns the big-endian number that ends key k: the task id of a
// task index key.
func LastU64(k []byte) (uint64, error) {
	if len(k) < 9 {
		return 0, fmt.Errorf("%w: key %x is too short to end in an id", ErrCorrupt, k)
	}
	return binary.BigEndian.Uint64(k[len(k)-8:]), nil
}
