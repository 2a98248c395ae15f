package httpapi

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/heddlewf/heddle/engine"
	"github.com/vmihailenco/msgpack/v5"
)

// bodyTypes returns a fresh value of every type this package decodes from
// a body, requests and answers alike.
func bodyTypes() []any {
	return []any{
		new(engine.CreateJob), new(engine.Claim), new(engine.Heartbeat), new(engine.AppendEvents),
		new(engine.CommitStep), new(engine.Wait), new(engine.Signal), new(engine.Cancel), new(engine.Activate),
		new(engine.Suspend), new(engine.Resume), new(engine.Complete), new(engine.Fail), new(engine.Requeue),
		new(engine.RequestCancel), new(engine.ContinueAsNew),
		new(engine.LeaseStep), new(engine.StepHeartbeat), new(engine.EndStepAttempt), new(engine.AnswerStep),
		new(engine.AddResource), new(engine.DrainResource), new(engine.RemoveResource),
		new(engine.StepResult), new(engine.ResourceResult), new(engine.StepsPage), new(engine.ResourcesPage),
		new(QueryRequest), new(QueryPoll), new(QueryAnswer), new(ClusterMember),
		new(engine.CreateResult), new(engine.ClaimResult), new(engine.HeartbeatResult), new(engine.AppendResult),
		new(engine.WaitResult), new(engine.SignalResult), new(engine.StatusResult), new(engine.Job),
		new(engine.HistoryPage), new(engine.ListPage), new(*engine.Effect), new(QueryResult), new(QueryPollResult),
		new(QueryAnswerResult), new(ClusterStatus), new(ErrorBody), new(engine.ResourceWaitersPage),
		new(engine.ResetJob), new(engine.ResetResult),
	}
}

func fuzzSeeds(f *testing.F) {
	samples := []any{
		&engine.CreateJob{WorkflowID: "wf", Type: "T", Queue: "q", Input: []byte(`[1]`), Retry: &engine.RetryPolicy{InitialIntervalMS: 5}},
		&engine.Wait{LeaseRef: engine.LeaseRef{Job: 1, Attempt: 2}, Spec: engine.WaitSpec{Signals: []string{"a"}, Timers: []engine.Timer{{ID: "t", FireMS: 9}}},
			Events: []engine.NewEvent{{Type: "marker", Payload: []byte("x")}}},
		&engine.HistoryPage{Events: []engine.Event{{Seq: 1, Type: engine.EventJobCreated, Wait: &engine.WaitSpec{AnySignal: true}}}, Next: 1},
		&QueryAnswer{ID: "q", Error: &ErrorBody{Name: "unknown_query", Message: "m"}},
		&ErrorBody{Code: engine.StaleAttemptCode, Name: "stale_attempt", Message: "m", LeaderID: "n", LeaderHTTP: "h:1"},
		&engine.LeaseStep{LeaseRef: engine.LeaseRef{Job: 1, Attempt: 2}, Step: "1", Name: "A", LeaseMS: 5, Capabilities: []string{"gpu"},
			Selector: map[string]string{"zone": "x"}, DependsOn: []string{"0"}},
		&engine.StepsPage{Steps: []engine.StepInfo{{Step: "1", State: engine.StepNeedsUser, Avoid: []string{"b"}, Question: []byte(`"q"`)}}},
		&engine.ResourcesPage{Resources: []*engine.Resource{{ID: "r", Capacity: 1, Holders: []engine.ResourceHolder{{Job: 1, Step: "1"}}}}},
		&engine.ResourceWaitersPage{Waiters: []engine.ResourceWaiter{{Seq: 3, Job: 1, Step: "1", Capabilities: []string{"gpu"}, Selector: map[string]string{"zone": "x"}}}},
	}
	for i, s := range samples {
		mp, err := msgpack.Marshal(s)
		if err != nil {
			f.Fatal(err)
		}
		js, err := json.Marshal(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(i), true, mp)
		f.Add(uint8(i), false, js)
	}
	f.Add(uint8(0), true, []byte{0xdd, 0xff, 0xff, 0xff, 0xff})
	f.Add(uint8(0), true, append(bytes.Repeat([]byte{0x91}, 100), 0xc0))
	f.Add(uint8(0), true, []byte{0x81, 0xa2, 'i', 'n', 0xc6, 0xff, 0xff, 0xff, 0xff, 0x00}) // an input declaring 4 GiB
	f.Add(uint8(0), false, append(append([]byte(`{"input":`), bytes.Repeat([]byte("["), 300)...), bytes.Repeat([]byte("]"), 300)...))
	f.Add(uint8(0), false, []byte(`{"type": 7}`))
	f.Add(uint8(0), false, []byte(`{"type": "T", "queue": "q", "reuse_policy": "no-such-policy"}`))
	f.Add(uint8(len(bodyTypes())-2), false, []byte(`{"workflow_id": "a", "reset_type": "LastWorkflowTask", "exclude_signals": true}`))
	f.Add(uint8(len(bodyTypes())-2), false, []byte(`{"workflow_id": "a", "reset_type": 200}`))
}

// FuzzDecodeBody: no body, however malformed, makes the request or answer
// decoders panic, allocate without bound or recurse without bound; and
// what the msgpack checker accepts is one whole value to the library too.
func FuzzDecodeBody(f *testing.F) {
	fuzzSeeds(f)
	types := len(bodyTypes())
	f.Fuzz(func(t *testing.T, which uint8, useMsgpack bool, b []byte) {
		form := formatJSON
		if useMsgpack {
			form = formatMsgpack
		}
		v := bodyTypes()[int(which)%types]
		_ = decodeBody(form, b, v)
		_ = decodeAnswer(form, b, bodyTypes()[int(which)%types])
		if useMsgpack && checkMsgpack(b) == nil {
			r := bytes.NewReader(b)
			if err := msgpack.NewDecoder(r).Skip(); err != nil || r.Len() != 0 {
				t.Fatalf("checkMsgpack accepted % x, which the library skips with %v leaving %d bytes", b, err, r.Len())
			}
		}
	})
}

// FuzzDecodeError: any error answer, from a heddle node or a proxy, gives
// a RemoteError with a message and never panics.
func FuzzDecodeError(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, status uint8, useMsgpack bool, b []byte) {
		ct := contentJSON
		if useMsgpack {
			ct = contentMsgpack
		}
		re := decodeError(400+int(status), ct, b)
		if re == nil || re.Error() == "" {
			t.Fatalf("no error for % x", b)
		}
		_ = retryable(re)
		_ = re.Unwrap()
	})
}
