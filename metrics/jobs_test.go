package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/heddlewf/heddle/internal/metricstest"
)

// The queue label of the job families takes the first MaxQueues queue
// names and "_other" for the rest, whatever the names; the open-job series
// of a queue with nothing left open go at the next scrape, and its name
// stays its own.
func TestJobFamiliesBoundTheQueueLabel(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewWithOptions(reg, Options{MaxQueues: 2})
	if err != nil {
		t.Fatal(err)
	}
	gather := func() metricstest.Families {
		t.Helper()
		fs, err := metricstest.Gather(reg)
		if err != nil {
			t.Fatal(err)
		}
		return fs
	}
	const absent = -1 // a want of no series at all
	type want struct {
		family, status, queue string
		value                 float64
	}
	check := func(when string, series int, wants ...want) {
		t.Helper()
		fs := gather()
		if got := fs.Series(EngineJobs) + fs.Series(EngineJobsClosed); got != series {
			t.Errorf("%s: %d series, want %d", when, got, series)
		}
		for _, w := range wants {
			n := fs.Series(w.family, "status", w.status, "queue", w.queue)
			got := fs.Value(w.family, "status", w.status, "queue", w.queue)
			if (w.value == absent && n != 0) || (w.value != absent && (n != 1 || got != w.value)) {
				t.Errorf("%s: %s{status=%q,queue=%q} = %v in %d series, want %v (-1: no series)", when, w.family, w.status, w.queue, got, n, w.value)
			}
		}
	}
	m.JobsAdd("Queued", "a", 2)
	m.JobsAdd("Queued", "b", 1)
	m.JobsAdd("Queued", "c", 1)     // a third queue: counted as _other
	m.JobsAdd("Queued", "d\xff", 3) // not UTF-8, and a fourth queue
	m.JobClosed("Completed", "c")
	check("four queues", 4,
		want{EngineJobs, "Queued", "a", 2}, want{EngineJobs, "Queued", "b", 1},
		want{EngineJobs, "Queued", OtherQueue, 4}, want{EngineJobs, "Queued", "c", absent},
		want{EngineJobsClosed, "Completed", OtherQueue, 1})

	m.JobsChanged([]JobChange{{Status: "Queued", Queue: "a", Open: -2}, {Status: "Completed", Queue: "a", Closed: 2},
		{Status: "Queued", Queue: "b", Open: -1}, {Status: "Running", Queue: "b", Open: 1}})
	check("a drained, b's job running", 5,
		want{EngineJobs, "Queued", "a", absent}, want{EngineJobsClosed, "Completed", "a", 2},
		want{EngineJobs, "Running", "b", 1}, want{EngineJobs, "Queued", "b", 0})

	m.JobsAdd("Queued", "a", 1) // a keeps its name
	m.JobsAdd("Queued", "e", 1)
	check("a again, and a fifth queue", 6,
		want{EngineJobs, "Queued", "a", 1}, want{EngineJobs, "Queued", OtherQueue, 5})

	if _, err := NewWithOptions(prometheus.NewRegistry(), Options{MaxQueues: -1}); err == nil {
		t.Fatal("a negative MaxQueues was accepted")
	}
}

// A queue name that is not UTF-8 is counted under its name with the bad
// bytes replaced: Prometheus refuses such a label value, and the engine
// must not stop over a name a client chose.
func TestJobFamiliesTakeAnyQueueName(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := New(reg)
	if err != nil {
		t.Fatal(err)
	}
	m.JobsAdd("Queued", "bad\xffname", 1)
	m.JobClosed("Failed", "bad\xffname")
	fs, err := metricstest.Gather(reg)
	if err != nil {
		t.Fatal(err)
	}
	if fs.Value(EngineJobs, "queue", "bad\uFFFDname") != 1 || fs.Value(EngineJobsClosed, "queue", "bad\uFFFDname") != 1 {
		t.Fatalf("the jobs of a queue named with invalid UTF-8 were not counted: %v", fs.LabelValues(EngineJobs, "queue"))
	}
}
