package machine

import (
	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/storage"
)

// The reads of the task queue view (engine.TaskQueueReader). Each is
// bounded: a backlog is counted up to a bound, the delayed jobs are read up
// to one, and the queue names are found one seek a queue.

// QueueBacklog counts the jobs of queue ready to claim, up to limit (capped
// then), and returns when the oldest of them became ready (0 when none is).
// It walks the queue's ready index from its low-water mark, keys only.
func QueueBacklog(r *storage.Reader, queue string, limit int64) (count int64, capped bool, oldestMS int64, err error) {
	defer markStorage(&err)
	low, err := storage.ReadU64(r, storage.LowReadyKey(queue))
	if err != nil {
		return 0, false, 0, err
	}
	prefix := storage.ReadyPrefix(queue)
	start := append(append([]byte(nil), prefix...), storage.U64(low)...)
	err = r.Scan(prefix, start, false, func(k, _ []byte) (bool, error) {
		if count == limit {
			capped = true
			return false, nil
		}
		if count == 0 {
			e, err := storage.ParseReadyKey(k)
			if err != nil {
				return false, err
			}
			oldestMS = e.ReadyAtMS
		}
		count++
		return true, nil
	})
	return count, capped, oldestMS, err
}

// DelayedByQueue counts, by queue, the jobs that wait for a time before
// they can be claimed: those in the delayed index (Retrying, or Queued and
// deferred by a claimer that does not run their type). queue "" counts
// every queue's, else only queue's. It reads at most limit records (capped
// then: the counts are of those read).
func DelayedByQueue(r *storage.Reader, queue string, limit int) (counts map[string]int64, capped bool, err error) {
	defer markStorage(&err)
	low, err := storage.ReadU64(r, storage.KeyLowDelayed)
	if err != nil {
		return nil, false, err
	}
	counts = map[string]int64{}
	read := 0
	err = r.Scan(storage.DelayedPrefix, storage.DelayedKey(int64(low), 0), false, func(k, _ []byte) (bool, error) {
		if read == limit {
			capped = true
			return false, nil
		}
		read++
		id, err := storage.TrailingJob(k)
		if err != nil {
			return false, err
		}
		j, err := ReadJob(r, engine.JobID(id))
		if err != nil {
			return false, err
		}
		if queue == "" || j.Queue == queue {
			counts[j.Queue]++
		}
		return true, nil
	})
	return counts, capped, err
}

// QueueNames lists, in name order, the queues that ever held a job (the
// queue visibility index, which keeps every job), at most limit of them
// (more reports that others follow). It seeks once a queue: the jobs of
// one are never walked.
func QueueNames(r *storage.Reader, limit int) (names []string, more bool, err error) {
	defer markStorage(&err)
	prefix := []byte{storage.PrefixQueue}
	var start []byte
	for {
		var name string
		found := false
		err := r.Scan(prefix, start, false, func(k, _ []byte) (bool, error) {
			q, err := storage.ParseQueueKey(k)
			if err != nil {
				return false, err
			}
			name, found = q, true
			return false, nil
		})
		if err != nil || !found {
			return names, false, err
		}
		if len(names) == limit {
			return names, true, nil
		}
		names = append(names, name)
		// Past every key of this queue: its prefix, then a job id above
		// any.
		start = append(storage.QueuePrefix(name), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)
	}
}
