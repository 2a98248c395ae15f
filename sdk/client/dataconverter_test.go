package client_test

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/converter"
	"github.com/heddlewf/heddle/sdk/temporal"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// sealCodec encrypts each payload with AES-GCM, as Temporal's encryption
// sample does (its codec ports by swapping commonpb.Payload for
// converter.Payload). The nonce is derived from a counter-free constant
// so the test stays deterministic; real code draws a random one.
type sealCodec struct{ key []byte }

const encodingSealed = "binary/encrypted"

func (c sealCodec) aead() cipher.AEAD {
	b, err := aes.NewCipher(c.key)
	if err != nil {
		panic(err)
	}
	g, err := cipher.NewGCM(b)
	if err != nil {
		panic(err)
	}
	return g
}

func (c sealCodec) Encode(ps []*converter.Payload) ([]*converter.Payload, error) {
	out := make([]*converter.Payload, len(ps))
	for i, p := range ps {
		raw, err := p.Marshal()
		if err != nil {
			return nil, err
		}
		g := c.aead()
		nonce := make([]byte, g.NonceSize())
		out[i] = &converter.Payload{Metadata: map[string][]byte{converter.MetadataEncoding: []byte(encodingSealed)}, Data: g.Seal(nonce, nonce, raw, nil)}
	}
	return out, nil
}

func (c sealCodec) Decode(ps []*converter.Payload) ([]*converter.Payload, error) {
	out := make([]*converter.Payload, len(ps))
	for i, p := range ps {
		if string(p.Metadata[converter.MetadataEncoding]) != encodingSealed {
			out[i] = p
			continue
		}
		g := c.aead()
		n := g.NonceSize()
		if len(p.Data) < n {
			return nil, errors.New("sealed payload too short")
		}
		raw, err := g.Open(nil, p.Data[:n], p.Data[n:], nil)
		if err != nil {
			return nil, err
		}
		out[i] = &converter.Payload{}
		if err := out[i].Unmarshal(raw); err != nil {
			return nil, err
		}
	}
	return out, nil
}

type Secret struct {
	Name string
	PIN  string
}

func RevealActivity(ctx context.Context, s Secret) (string, error) {
	return "activity saw " + s.Name + "/" + s.PIN, nil
}

// TaskQueueReveal runs on a queue of its own: an activity task, a job of
// its own whose input and result cross the engine.
func TaskQueueReveal(ctx context.Context, s Secret) (string, error) {
	info := activity.GetInfo(ctx)
	return "task " + info.ActivityType.Name + " saw " + s.PIN, nil
}

func ChildOfSecrets(ctx workflow.Context, s Secret) (string, error) {
	return "child saw " + s.Name, nil
}

// HeartbeatSecret records a heartbeat and fails on its first try; the
// second returns the details the first recorded.
func HeartbeatSecret(ctx context.Context, s Secret) (string, error) {
	if activity.GetInfo(ctx).Attempt == 1 {
		activity.RecordHeartbeat(ctx, "progress "+s.PIN)
		return "", errors.New("first try fails")
	}
	var d string
	if err := activity.GetHeartbeatDetails(ctx, &d); err != nil {
		return "", err
	}
	return "retry read " + d, nil
}

// ContinueSecret continues as new once, carrying the secret.
func ContinueSecret(ctx workflow.Context, s Secret, round int) (string, error) {
	if round == 0 {
		return "", workflow.NewContinueAsNewError(ctx, ContinueSecret, s, 1)
	}
	return "continued " + s.PIN, nil
}

func SecretWorkflow(ctx workflow.Context, s Secret) ([]string, error) {
	var out []string
	if err := workflow.SetUpdateHandler(ctx, "peek", func(ctx workflow.Context, prefix string) (string, error) {
		return prefix + s.PIN, nil
	}); err != nil {
		return nil, err
	}
	var extra string
	workflow.GetSignalChannel(ctx, "extra").Receive(ctx, &extra)
	out = append(out, "signal "+extra)
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	var a string
	if err := workflow.ExecuteActivity(ctx, RevealActivity, s).Get(ctx, &a); err != nil {
		return nil, err
	}
	out = append(out, a)
	rctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute,
		RetryPolicy: &workflow.RetryPolicy{InitialInterval: 10 * time.Millisecond, MaximumAttempts: 2}})
	if err := workflow.ExecuteActivity(rctx, HeartbeatSecret, s).Get(ctx, &a); err != nil {
		return nil, err
	}
	out = append(out, a)
	tctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute, TaskQueue: "secrets-acts"})
	if err := workflow.ExecuteActivity(tctx, TaskQueueReveal, s).Get(ctx, &a); err != nil {
		return nil, err
	}
	out = append(out, a)
	var c string
	if err := workflow.ExecuteChildWorkflow(ctx, ChildOfSecrets, s).Get(ctx, &c); err != nil {
		return nil, err
	}
	out = append(out, c)
	var side string
	if err := workflow.SideEffect(ctx, func(workflow.Context) any { return "side " + s.PIN }).Get(&side); err != nil {
		return nil, err
	}
	return append(out, side), nil
}

// b64 is how a secret shows inside a record's []byte field (JSON base64)
// when not encrypted: the argument's JSON string, so with its quotes.
func b64(s string) string {
	return strings.TrimRight(base64.StdEncoding.EncodeToString([]byte(`["`+s)), "=")[:8]
}

// A client with a codec data converter (AES-GCM, then zlib) runs a
// workflow with an update, a signal, an inline activity retried after a
// heartbeat, an activity task, a child and a side effect: every result comes back right, the engine's
// histories hold none of the plaintext, and a client without the codec
// cannot read the result.
func TestCodecDataConverterEndToEnd(t *testing.T) {
	for _, over := range []string{"embedded", "HTTP"} {
		t.Run(over, func(t *testing.T) {
			e := openEngine(t)
			dc := converter.NewCodecDataConverter(converter.GetDefaultDataConverter(),
				sealCodec{key: []byte("0123456789abcdef0123456789abcdef")}, converter.NewZlibCodec(converter.ZlibCodecOptions{}))
			opts := client.Options{Service: e, DataConverter: dc}
			if over == "HTTP" {
				opts = client.Options{HostPort: serve(t, e), DataConverter: dc}
			}
			c, err := client.Dial(opts)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			for queue, reg := range map[string]func(worker.Worker){
				"secrets": func(w worker.Worker) {
					w.RegisterWorkflow(SecretWorkflow)
					w.RegisterWorkflow(ChildOfSecrets)
					w.RegisterActivity(RevealActivity)
					w.RegisterActivity(HeartbeatSecret)
					w.RegisterWorkflow(ContinueSecret)
				},
				"secrets-acts": func(w worker.Worker) { w.RegisterActivity(TaskQueueReveal) },
			} {
				w := worker.New(c, queue, worker.Options{})
				reg(w)
				if err := w.Start(); err != nil {
					t.Fatal(err)
				}
				defer w.Stop()
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "secrets", TaskQueue: "secrets"}, SecretWorkflow,
				Secret{Name: "Hortensia", PIN: "8462"})
			if err != nil {
				t.Fatal(err)
			}
			h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: "secrets", UpdateName: "peek", Args: []any{"Quetzal "}})
			if err != nil {
				t.Fatal(err)
			}
			var peek string
			if err := h.Get(ctx, &peek); err != nil || peek != "Quetzal 8462" {
				t.Fatalf("update = %q, %v", peek, err)
			}
			if err := c.SignalWorkflow(ctx, "secrets", "", "extra", "Xylophone"); err != nil {
				t.Fatal(err)
			}
			var got []string
			if err := run.Get(ctx, &got); err != nil {
				t.Fatal(err)
			}
			want := []string{"signal Xylophone", "activity saw Hortensia/8462", "retry read progress 8462", "task TaskQueueReveal saw 8462", "child saw Hortensia", "side 8462"}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("result %q, want %q", got, want)
			}

			cont, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "continued", TaskQueue: "secrets"}, ContinueSecret,
				Secret{Name: "Hortensia", PIN: "8462"}, 0)
			if err != nil {
				t.Fatal(err)
			}
			var contOut string
			if err := cont.Get(ctx, &contOut); err != nil || contOut != "continued 8462" {
				t.Fatalf("continue-as-new = %q, %v", contOut, err)
			}

			// What the engine stored: no plaintext in any payload of any
			// job (the run, its child and its activity task).
			page, err := e.List(ctx, engine.ListQuery{})
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Jobs) < 5 {
				t.Fatalf("%d jobs, want the run, its child, its activity task and the two continued runs", len(page.Jobs))
			}
			envelopes := 0
			for _, j := range page.Jobs {
				h, err := e.History(ctx, j.ID, 0, engine.MaxPage)
				if err != nil {
					t.Fatal(err)
				}
				for _, ev := range h.Events {
					for _, secret := range []string{"Hortensia", "8462", "Xylophone", "Quetzal", b64("8462"), b64("Quetzal")} {
						if strings.Contains(string(ev.Payload), secret) || strings.Contains(string(ev.LastResult), secret) {
							t.Errorf("job %d event %d (%s) stores %q in plaintext: %s", j.ID, ev.Seq, ev.Type, secret, ev.Payload)
						}
					}
					if converter.IsEnvelope(ev.Payload) {
						envelopes++
					}
				}
			}
			if envelopes < 6 {
				t.Errorf("only %d payloads are envelopes", envelopes)
			}

			// A client without the codec cannot read the result.
			plain := client.NewWithOptions(e, client.Options{})
			if err := plain.GetWorkflow(ctx, "secrets", "").Get(ctx, &got); !errors.Is(err, converter.ErrUnknownEncoding) {
				t.Fatalf("Get without the codec: %v", err)
			}
		})
	}
}

// SealedBlob is a []byte an activity task returns reversed.
func SealedBlob(_ context.Context, b []byte) ([]byte, error) {
	out := make([]byte, len(b))
	for i, c := range b {
		out[len(b)-1-i] = c
	}
	return out, nil
}

// BlobSecretWorkflow sends its bytes to an activity task and returns them
// with a protobuf message's value.
func BlobSecretWorkflow(ctx workflow.Context, b []byte, m *wrapperspb.StringValue) ([]byte, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute, TaskQueue: "blob-acts"})
	var out []byte
	if err := workflow.ExecuteActivity(ctx, SealedBlob, b).Get(ctx, &out); err != nil {
		return nil, err
	}
	return append(out, m.GetValue()...), nil
}

// A []byte and a protobuf message go through a codec's converter as their
// binary/plain and json/protobuf payloads, sealed: the engine stores none
// of their bytes, and they come back as they were.
func TestCodecDataConverterCarriesBytesAndProtobuf(t *testing.T) {
	e := openEngine(t)
	dc := converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), sealCodec{key: []byte("0123456789abcdef0123456789abcdef")})
	c, err := client.Dial(client.Options{Service: e, DataConverter: dc})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for queue, reg := range map[string]func(worker.Worker){
		"blob":      func(w worker.Worker) { w.RegisterWorkflow(BlobSecretWorkflow) },
		"blob-acts": func(w worker.Worker) { w.RegisterActivity(SealedBlob) },
	} {
		w := worker.New(c, queue, worker.Options{})
		reg(w)
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	secret := []byte("Zanzibar-7731")
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "blob", TaskQueue: "blob"}, BlobSecretWorkflow, secret, wrapperspb.String("Quokka"))
	if err != nil {
		t.Fatal(err)
	}
	var got []byte
	if err := run.Get(ctx, &got); err != nil || string(got) != "1377-rabiznaZQuokka" {
		t.Fatalf("result %q (%v)", got, err)
	}
	page, err := e.List(ctx, engine.ListQuery{})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range page.Jobs {
		h, err := e.History(ctx, j.ID, 0, engine.MaxPage)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range h.Events {
			for _, plain := range []string{"Zanzibar", "rabiznaZ", "Quokka", base64.StdEncoding.EncodeToString(secret)[:8]} {
				if strings.Contains(string(ev.Payload), plain) {
					t.Errorf("job %d event %d (%s) stores %q in plaintext: %s", j.ID, ev.Seq, ev.Type, plain, ev.Payload)
				}
			}
		}
	}
}

// FailSecret fails with a message and details that must not be stored in
// the clear.
func FailSecret(ctx context.Context, where string) error {
	return temporal.NewApplicationError("vault "+where+" code Marzipan", "VaultError", "detail Okapi")
}

// ChildFailsSecret fails with the secret of its activity.
func ChildFailsSecret(ctx workflow.Context) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute,
		RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 1}})
	return workflow.ExecuteActivity(ctx, FailSecret, "child").Get(ctx, nil)
}

// SecretFailuresWorkflow meets failures of an inline activity (retried
// once), of an activity task and of a child, checks that each reads as it
// was made, and fails with the first.
func SecretFailuresWorkflow(ctx workflow.Context) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: 10 * time.Millisecond, MaximumAttempts: 2}})
	check := func(err error, where string) error {
		var app *temporal.ApplicationError
		var detail string
		if !errors.As(err, &app) || app.Message() != "vault "+where+" code Marzipan" || app.Type() != "VaultError" ||
			app.Details(&detail) != nil || detail != "detail Okapi" {
			return fmt.Errorf("the %s failure reads %v (details %q)", where, err, detail)
		}
		return nil
	}
	inline := workflow.ExecuteActivity(ctx, FailSecret, "inline").Get(ctx, nil)
	if err := check(inline, "inline"); err != nil {
		return err
	}
	tctx := workflow.WithTaskQueue(ctx, "failures-acts")
	if err := check(workflow.ExecuteActivity(tctx, FailSecret, "task").Get(ctx, nil), "task"); err != nil {
		return err
	}
	if err := check(workflow.ExecuteChildWorkflow(ctx, ChildFailsSecret).Get(ctx, nil), "child"); err != nil {
		return err
	}
	return inline
}

// A client whose failure converter encodes common attributes through a
// codec (Temporal's DefaultFailureConverter with EncodeCommonAttributes)
// stores every failure of its workers with "Encoded failure" for a message
// and its details sealed: the histories hold none of the words, the engine
// still retries by the failure's type, and workflow code and the client
// read each failure as it was made.
func TestFailureConverterEncodesCommonAttributes(t *testing.T) {
	for _, over := range []string{"embedded", "HTTP"} {
		t.Run(over, func(t *testing.T) {
			e := openEngine(t)
			dc := converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), sealCodec{key: []byte("0123456789abcdef0123456789abcdef")})
			fc := temporal.NewDefaultFailureConverter(temporal.DefaultFailureConverterOptions{DataConverter: dc, EncodeCommonAttributes: true})
			opts := client.Options{Service: e, DataConverter: dc, FailureConverter: fc}
			if over == "HTTP" {
				opts = client.Options{HostPort: serve(t, e), DataConverter: dc, FailureConverter: fc}
			}
			c, err := client.Dial(opts)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			for queue, reg := range map[string]func(worker.Worker){
				"failures": func(w worker.Worker) {
					w.RegisterWorkflow(SecretFailuresWorkflow)
					w.RegisterWorkflow(ChildFailsSecret)
					w.RegisterActivity(FailSecret)
				},
				"failures-acts": func(w worker.Worker) { w.RegisterActivity(FailSecret) },
			} {
				w := worker.New(c, queue, worker.Options{})
				reg(w)
				if err := w.Start(); err != nil {
					t.Fatal(err)
				}
				defer w.Stop()
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "failures", TaskQueue: "failures"}, SecretFailuresWorkflow)
			if err != nil {
				t.Fatal(err)
			}
			err = run.Get(ctx, nil)
			var app *temporal.ApplicationError
			if !errors.As(err, &app) || app.Message() != "vault inline code Marzipan" || !errors.As(err, new(*temporal.ActivityError)) {
				t.Fatalf("Get = %v, want the inline activity's failure", err)
			}
			page, err := e.List(ctx, engine.ListQuery{})
			if err != nil {
				t.Fatal(err)
			}
			encoded, attempts := 0, 0
			for _, j := range page.Jobs {
				h, err := e.History(ctx, j.ID, 0, engine.MaxPage)
				if err != nil {
					t.Fatal(err)
				}
				for _, ev := range h.Events {
					for _, secret := range []string{"Marzipan", "Okapi", b64("detail")} {
						if strings.Contains(string(ev.Payload), secret) {
							t.Errorf("job %d event %d (%s) stores %q in the clear: %s", j.ID, ev.Seq, ev.Type, secret, ev.Payload)
						}
					}
					if strings.Contains(string(ev.Payload), converter.EncodedFailureMessage) {
						encoded++
					}
					if ev.Type == "activity_attempt_failed" {
						attempts++
					}
				}
			}
			// The inline activity's two tries (the engine retried by its
			// type and retryability), the task, the child's activity and
			// the child, the run.
			if encoded < 5 || attempts != 1 {
				t.Errorf("%d payloads hold encoded failures, %d attempt records; want at least 5 and 1", encoded, attempts)
			}
			// A client without the converter reads "Encoded failure".
			plain := client.NewWithOptions(e, client.Options{})
			if err := plain.GetWorkflow(ctx, "failures", "").Get(ctx, nil); err == nil || !strings.Contains(err.Error(), converter.EncodedFailureMessage) {
				t.Fatalf("Get without the converter: %v", err)
			}
		})
	}
}
