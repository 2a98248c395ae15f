package storage

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestDescribeKey(t *testing.T) {
	for _, tc := range []struct {
		k    []byte
		want string
	}{
		{KeyLastNow, "m now"},
		{LowReadyKey("orders"), "m low/q/orders"},
		{JobKey(7), "j job=7"},
		{EventKey(7, 3), "e job=7 seq=3"},
		{EffectKey(7, "1"), "x job=7 step=1"},
		{ReadyKey("orders", 1000, 7), "q queue=orders ready=1000 job=7"},
		{LeaseKey(31000, 7), "l expiry=31000 job=7"},
		{TimerKey(5000, 7, "t 1"), `t fire=5000 job=7 timer="t 1"`},
		{DelayedKey(2000, 7), "d release=2000 job=7"},
		{DeadlineKey(9000, 7), "o due=9000 job=7"},
		{ChildKey(7, 8), "c parent=7 child=8"},
		{WorkflowKey("order-1"), "w workflow=order-1"},
		{StatusKey(2, 7), "s status=2 job=7"},
		{TypeKey("order", 7), "y type=order job=7"},
		{QueueKey("", 7), `u queue="" job=7`},
		{ClosedKey(9000, 7), "C closed=9000 job=7"},
		{RunsKey("order-1", 7), "W workflow=order-1 job=7"},
		{RequestKey("req-1"), "r request=req-1"},
		{RequestAgeKey(1000, "req-1"), "a at=1000 request=req-1"},
		{StepKey(7, "a"), "p job=7 step=a"},
		{ResourceKey("gpu-1"), "v resource=gpu-1"},
		{StepDueKey(4000, 7, "a"), "n due=4000 job=7 step=a"},
		{WaiterKey(1, 7, "a"), "i seq=1 job=7 step=a"},
		{ScheduleKey("nightly"), "k schedule=nightly"},
		{SchedDueKey(60000, "nightly"), "z due=60000 schedule=nightly"},
		{PausedKey(7), "f job=7"},
		{[]byte{PrefixPaused, 1}, "invalid key 6601"},
		{ReviewKey(3), "gr task=3"},
		{ReviewEventKey(3, 2), "ge task=3 seq=2"},
		{ReviewJobKey("email", 3), "gj job=email task=3"},
		{ReviewPhaseKey("email", "req"), "gn job=email phase=req"},
		{ReviewDepKey(3, 4), "gd upstream=3 task=4"},
		{ReviewWorkKey("work", 1000, 3), "gq queue=work ready=1000 task=3"},
		{ReviewReviewKey("review", 1000, 3), "gv queue=review ready=1000 task=3"},
		{ReviewAwaitKey(3), "ga task=3"},
		{ReviewLeaseKey(31000, 3), "h expiry=31000 task=3"},
		{OutboxEntryKey(2, 5), "Oe target=2 seq=5"},
		{OutboxNextKey(2), "On target=2"},
		{AckedBelowKey(1), "Ow source=1"},
		{DeliveredKey(1, 5), "Od source=1 seq=5"},
		{RemoteChildKey(7, "a1"), "Oc parent=7 step=a1"},
		{RemoteReviewKey(7, "a2"), "Ot parent=7 step=a2"},
		{[]byte{PrefixOutbox, 'e', 1}, "invalid key 4f6501"},
		{[]byte{PrefixOutbox, 'z'}, "unknown key 4f7a"},
		{WorkflowKey("a=b\n"), `w workflow="a=b\n"`},
		{nil, "invalid key (empty)"},
		{[]byte{PrefixJob, 1, 2}, "invalid key 6a0102"},
		{append(JobKey(1), 0), "invalid key 6a000000000000000100"},
		{[]byte{PrefixReady, 0xff, 0xff, 'q'}, "invalid key 71ffff71"},
		{[]byte{PrefixReview}, "invalid key 67"},
		{[]byte{PrefixReview, 'z', 1}, "unknown key 677a01"},
		{[]byte{'Z', 1}, "unknown key 5a01"},
	} {
		if got := DescribeKey(tc.k); got != tc.want {
			t.Errorf("DescribeKey(% x) = %q, want %q", tc.k, got, tc.want)
		}
	}
}

// FuzzDescribeKey gives DescribeKey arbitrary bytes: it never panics, says
// everything on one line of valid UTF-8 no longer than the key allows, and
// describes the keys the constructors build with the parts they were built
// from.
func FuzzDescribeKey(f *testing.F) {
	f.Add([]byte("q\x00\x01a"), "orders", int64(1000), uint64(7), "t1")
	f.Add(ReviewPhaseKey("job", "phase"), "", int64(-1), uint64(1<<63), "a b")
	f.Add([]byte{PrefixReview, 'q', 0xff}, "\xff", int64(0), uint64(0), "\n")
	f.Add([]byte{PrefixOutbox, 'd', 0xff}, "", int64(0), uint64(0), "")
	f.Fuzz(func(t *testing.T, data []byte, s string, at int64, id uint64, rest string) {
		check := func(k []byte) string {
			t.Helper()
			d := DescribeKey(k)
			if !utf8.ValidString(d) || strings.ContainsAny(d, "\n\r") {
				t.Fatalf("DescribeKey(% x) = %q: not one line of UTF-8", k, d)
			}
			// Quoting may turn each byte into at most 4 (\xff), and every
			// part adds its name: bounded by the key's length.
			if len(d) > 64+6*len(k) {
				t.Fatalf("DescribeKey(% x) = %d bytes for a key of %d", k, len(d), len(k))
			}
			return d
		}
		check(data)
		if len(s) > MaxKeyString {
			s = s[:MaxKeyString]
		}
		num := func(v uint64) string { return strconv.FormatUint(v, 10) }
		for _, tc := range []struct {
			k    []byte
			want []string
		}{
			{ReadyKey(s, at, id), []string{"queue=" + describeString(s), "ready=" + num(uint64(at)), "job=" + num(id)}},
			{TimerKey(at, id, rest), []string{"fire=" + num(uint64(at)), "job=" + num(id), "timer=" + describeString(rest)}},
			{ReviewPhaseKey(s, rest), []string{"job=" + describeString(s), "phase=" + describeString(rest)}},
			{ReviewWorkKey(s, at, id), []string{"gq queue=" + describeString(s), "task=" + num(id)}},
			{EventKey(id, uint64(at)), []string{"e job=" + num(id) + " seq=" + num(uint64(at))}},
			{ClosedKey(at, id), []string{"C closed=" + num(uint64(at)) + " job=" + num(id)}},
			{RunsKey(s, id), []string{"W workflow=" + describeString(s), "job=" + num(id)}},
			{PausedKey(id), []string{"f job=" + num(id)}},
		} {
			d := check(tc.k)
			for _, w := range tc.want {
				if !strings.Contains(d, w) {
					t.Fatalf("DescribeKey(% x) = %q, want it to contain %q", tc.k, d, w)
				}
			}
		}
	})
}
