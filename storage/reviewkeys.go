package storage

import (
	"encoding/binary"
	"fmt"
)

// The review tasks' keyspace (docs/state-machines.md §4). Reviews have a
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
	PrefixReview      byte = 'g'
	PrefixReviewLease byte = 'h'
)

// Record kinds of tasks; the numbers are stored and never reused.
const (
	KindReview      Kind = 16
	KindReviewEvent Kind = 17
)

// Sub-tags of the task keys.
const (
	reviewTagRecord = 'r'
	reviewTagEvent  = 'e'
	reviewTagJob    = 'j'
	reviewTagPhase  = 'n'
	reviewTagDep    = 'd'
	reviewTagWork   = 'q'
	reviewTagReview = 'v'
	reviewTagAwait  = 'a'
)

// KeyNextReview numbers tasks; KeyLowReviewLease is the low-water mark of the
// task lease index.
var (
	KeyNextReview     = []byte("mnexttask")
	KeyLowReviewLease = []byte("mlow/h")
)

// Prefixes of the task key kinds, for scans.
var (
	ReviewRecordPrefix = []byte{PrefixReview, reviewTagRecord}
	ReviewEventsPrefix = []byte{PrefixReview, reviewTagEvent}
	ReviewJobsPrefix   = []byte{PrefixReview, reviewTagJob}
	ReviewPhasesPrefix = []byte{PrefixReview, reviewTagPhase}
	ReviewDepsPrefix   = []byte{PrefixReview, reviewTagDep}
	ReviewWorkPrefix   = []byte{PrefixReview, reviewTagWork}
	ReviewReviewPrefix = []byte{PrefixReview, reviewTagReview}
	ReviewAwaitPrefix  = []byte{PrefixReview, reviewTagAwait}
	ReviewLeasePrefix  = []byte{PrefixReviewLease}
)

func reviewKey(tag byte, capacity int) []byte {
	b := make([]byte, 2, 2+capacity)
	b[0], b[1] = PrefixReview, tag
	return b
}

// ReviewKey is the key of task id's record.
func ReviewKey(id uint64) []byte { return appendU64(reviewKey(reviewTagRecord, 8), id) }

// ReviewEventPrefix is the prefix of task id's history.
func ReviewEventPrefix(id uint64) []byte { return appendU64(reviewKey(reviewTagEvent, 16), id) }

// ReviewEventKey is the key of event seq of task id.
func ReviewEventKey(id, seq uint64) []byte { return appendU64(ReviewEventPrefix(id), seq) }

// ReviewJobPrefix is the prefix of job's tasks.
func ReviewJobPrefix(job string) []byte { return appendStr(reviewKey(reviewTagJob, 2+len(job)+8), job) }

// ReviewJobKey lists task id under job.
func ReviewJobKey(job string, id uint64) []byte { return appendU64(ReviewJobPrefix(job), id) }

// ReviewPhaseKey holds the id of job's task named phase.
func ReviewPhaseKey(job, phase string) []byte {
	return append(appendStr(reviewKey(reviewTagPhase, 2+len(job)+len(phase)), job), phase...)
}

// ReviewDepPrefix is the prefix of the dependants of task upstream.
func ReviewDepPrefix(upstream uint64) []byte { return appendU64(reviewKey(reviewTagDep, 16), upstream) }

// ReviewDepKey lists task id as a dependant of upstream.
func ReviewDepKey(upstream, id uint64) []byte { return appendU64(ReviewDepPrefix(upstream), id) }

// ReviewWorkQueuePrefix returns the prefix of queue's index of tasks ready for work.
func ReviewWorkQueuePrefix(queue string) []byte {
	return appendStr(reviewKey(reviewTagWork, 2+len(queue)+16), queue)
}

// ReviewWorkKey orders task id in queue's work index by the time it became ready.
func ReviewWorkKey(queue string, readyAtMS int64, id uint64) []byte {
	return appendU64(appendU64(ReviewWorkQueuePrefix(queue), uint64(readyAtMS)), id)
}

// ReviewReviewQueuePrefix returns the prefix of queue's index of tasks ready for review.
func ReviewReviewQueuePrefix(queue string) []byte {
	return appendStr(reviewKey(reviewTagReview, 2+len(queue)+16), queue)
}

// ReviewReviewKey orders task id in queue's review index by the time it became ready.
func ReviewReviewKey(queue string, readyAtMS int64, id uint64) []byte {
	return appendU64(appendU64(ReviewReviewQueuePrefix(queue), uint64(readyAtMS)), id)
}

// ReviewAwaitKey lists task id among the tasks awaiting a person, in
// creation (id) order across every job.
func ReviewAwaitKey(id uint64) []byte { return appendU64(reviewKey(reviewTagAwait, 8), id) }

// ReviewLeaseKey orders task id's lease by its expiry.
func ReviewLeaseKey(expiryMS int64, id uint64) []byte {
	return appendU64(appendU64([]byte{PrefixReviewLease}, uint64(expiryMS)), id)
}

// LastU64 returns the big-endian number that ends key k: the task id of a
// task index key.
func LastU64(k []byte) (uint64, error) {
	if len(k) < 9 {
		return 0, fmt.Errorf("%w: key %x is too short to end in an id", ErrCorrupt, k)
	}
	return binary.BigEndian.Uint64(k[len(k)-8:]), nil
}
