package worker_test

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/converter"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// ReverseBlob returns its bytes reversed.
func ReverseBlob(_ context.Context, b []byte) ([]byte, error) {
	out := slices.Clone(b)
	slices.Reverse(out)
	return out, nil
}

// LabelBlob returns its message's value with the length of its bytes.
func LabelBlob(_ context.Context, b []byte, m *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
	return wrapperspb.String(m.GetValue() + ":" + strings.Repeat("#", len(b))), nil
}

// BlobWorkflow sends its bytes through an activity of its own queue and one
// of another queue, waits for a signal of more bytes, answers a query
// that takes and returns bytes, and returns the bytes and a message.
func BlobWorkflow(ctx workflow.Context, in []byte, label *wrapperspb.StringValue) ([]byte, error) {
	var got []byte
	if err := workflow.SetQueryHandler(ctx, "echo", func(q []byte) ([]byte, error) { return append(q, got...), nil }); err != nil {
		return nil, err
	}
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	var rev []byte
	if err := workflow.ExecuteActivity(ctx, ReverseBlob, in).Get(ctx, &rev); err != nil {
		return nil, err
	}
	var named *wrapperspb.StringValue
	remote := workflow.WithTaskQueue(ctx, "blob-activities")
	if err := workflow.ExecuteActivity(remote, LabelBlob, rev, label).Get(ctx, &named); err != nil {
		return nil, err
	}
	workflow.GetSignalChannel(ctx, "more").Receive(ctx, &got)
	return append(append(rev, got...), named.GetValue()...), nil
}

// A []byte crosses every boundary of a run (input, an inline and a remote
// activity, a signal, a query, the result) as a binary/plain payload and
// a protobuf message as json/protobuf, as with Temporal's default data
// converter, on every backend.
func TestByteSliceAndProtobufAcrossARun(t *testing.T) {
	e := open(t)
	w := startWorker(t, e, "blob", worker.Options{}, func(w worker.Worker) {
		w.RegisterWorkflow(BlobWorkflow)
		w.RegisterActivity(ReverseBlob)
	})
	startWorker(t, e, "blob-activities", worker.Options{}, func(w worker.Worker) { w.RegisterActivity(LabelBlob) })
	c := client.NewWithOptions(service(t, e), client.Options{Querier: querier(t, e, "blob", w)})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "blob", TaskQueue: "blob"}, BlobWorkflow, []byte{1, 2, 3}, wrapperspb.String("x"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SignalWorkflow(ctx, "blob", "", "more", []byte{9}); err != nil {
		t.Fatal(err)
	}
	var got []byte
	if err := run.Get(ctx, &got); err != nil {
		t.Fatal(err)
	}
	if want := append([]byte{3, 2, 1, 9}, "x:###"...); !bytes.Equal(got, want) {
		t.Fatalf("result %q, want %q", got, want)
	}
	v, err := c.QueryWorkflow(ctx, "blob", "", "echo", []byte{7})
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Get(&got); err != nil || !bytes.Equal(got, []byte{7, 9}) {
		t.Fatalf("query answered %v (%v), want [7 9]", got, err)
	}

	// The history holds payloads, not base64 text.
	hist, err := c.GetWorkflowHistory(ctx, "blob", "")
	if err != nil {
		t.Fatal(err)
	}
	want := map[engine.EventType][]string{
		engine.EventJobCreated:        {converter.MetadataEncodingBinary, converter.MetadataEncodingProtoJSON},
		engine.EventActivityCompleted: {converter.MetadataEncodingBinary},
		engine.EventSignalReceived:    {converter.MetadataEncodingBinary},
		engine.EventJobCompleted:      {converter.MetadataEncodingBinary},
	}
	seen := map[engine.EventType]bool{}
	for _, ev := range hist {
		encs, ok := want[ev.Type]
		if !ok || seen[ev.Type] {
			continue
		}
		seen[ev.Type] = true
		vals, err := converter.RawValues(ev.Payload)
		if err != nil || !converter.IsEnvelope(ev.Payload) || len(vals) != len(encs) {
			t.Fatalf("%s payload %s (%v), want an envelope of %v", ev.Type, ev.Payload, err, encs)
		}
		for i, enc := range encs {
			if got := string(vals[i].Payload().Metadata[converter.MetadataEncoding]); got != enc {
				t.Fatalf("%s payload %d is %s, want %s", ev.Type, i, got, enc)
			}
		}
	}
	if len(seen) != len(want) {
		t.Fatalf("saw %v of the events %v", seen, want)
	}
	verify(t, e)
}

// OldBlob returns its input, reversed by an activity.
func OldBlob(ctx workflow.Context, in []byte) ([]byte, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	var out []byte
	err := workflow.ExecuteActivity(ctx, ReverseBlob, in).Get(ctx, &out)
	return out, err
}

// A history an earlier heddle wrote, with every []byte as JSON base64 text,
// still replays, and its bytes still decode as bytes.
func TestOldByteSliceHistoryReplays(t *testing.T) {
	hist := []engine.Event{
		{Seq: 1, Type: engine.EventJobCreated, AtMS: 1_000, Name: "OldBlob", Payload: []byte(`["AQID"]`)},
		{Seq: 2, Type: engine.EventJobLeased, AtMS: 1_001, Attempt: 1, Name: "w", LeaseExpiryMS: 31_001},
		{Seq: 3, Type: engine.EventActivityCompleted, AtMS: 1_002, Attempt: 1, Step: "1", Name: "ReverseBlob", Payload: []byte(`["AwIB"]`), Commit: true},
		{Seq: 4, Type: engine.EventJobCompleted, AtMS: 1_003, Attempt: 1, Payload: []byte(`["AwIB"]`)},
	}
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflow(OldBlob)
	if err := r.ReplayWorkflowHistory(nil, hist); err != nil {
		t.Fatal(err)
	}
	var got []byte
	if err := r.GetWorkflowResult("", &got); err != nil || !bytes.Equal(got, []byte{3, 2, 1}) {
		t.Fatalf("replayed result %v (%v), want [3 2 1]", got, err)
	}
}
