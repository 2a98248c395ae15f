package temporal

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/heddlewf/heddle/replay"
	"github.com/heddlewf/heddle/sdk/converter"
)

// xorCodec hides payload bytes, so a test can see that what a data
// converter encoded does not show in the clear.
type xorCodec struct{}

func (xorCodec) Encode(ps []*converter.Payload) ([]*converter.Payload, error) {
	out := make([]*converter.Payload, len(ps))
	for i, p := range ps {
		raw, err := p.Marshal()
		if err != nil {
			return nil, err
		}
		for j := range raw {
			raw[j] ^= 0x5a
		}
		out[i] = &converter.Payload{Metadata: map[string][]byte{converter.MetadataEncoding: []byte("binary/xor")}, Data: raw}
	}
	return out, nil
}

func (xorCodec) Decode(ps []*converter.Payload) ([]*converter.Payload, error) {
	out := make([]*converter.Payload, len(ps))
	for i, p := range ps {
		if string(p.Metadata[converter.MetadataEncoding]) != "binary/xor" {
			out[i] = p
			continue
		}
		raw := bytes.Clone(p.Data)
		for j := range raw {
			raw[j] ^= 0x5a
		}
		out[i] = &converter.Payload{}
		if err := out[i].Unmarshal(raw); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// The default failure converter writes what heddle always stored: its
// failure, marshalled, is the failure payload byte for byte, and back.
func TestDefaultFailureConverterIsTheStoredFormat(t *testing.T) {
	err := NewActivityError("Charge", "2", NewApplicationErrorWithOptions("declined", "CardDeclined",
		ApplicationErrorOptions{NonRetryable: true, Details: []any{"4242"}, Cause: &PanicError{value: "x", stackTrace: "a.go:1"}}))
	fc := GetDefaultFailureConverter()
	f := fc.ErrorToFailure(err)
	b, mErr := json.Marshal(f)
	if mErr != nil || !bytes.Equal(b, encodeFailure(err)) {
		t.Fatalf("ErrorToFailure marshals as %s (%v), want %s", b, mErr, encodeFailure(err))
	}
	back := fc.FailureToError(f)
	if back.Error() != err.Error() {
		t.Fatalf("FailureToError = %q, want %q", back, err)
	}
	if fc.ErrorToFailure(nil) != nil || fc.FailureToError(nil) != nil {
		t.Fatal("nil did not convert to nil")
	}
	if got := failureToStored(fc, encodeFailure(err)); !bytes.Equal(got, encodeFailure(err)) {
		t.Fatalf("the default converter changed a stored failure: %s", got)
	}
}

// EncodeCommonAttributes moves every node's message and stack trace into a
// payload of the data converter (here through a codec), as Temporal's: the
// stored failure reads "Encoded failure", keeps the type and retryability
// the engine decides on, and comes back whole through the converter.
func TestEncodeCommonAttributes(t *testing.T) {
	dc := converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), xorCodec{})
	fc := NewDefaultFailureConverter(DefaultFailureConverterOptions{DataConverter: dc, EncodeCommonAttributes: true})
	err := NewActivityError("Charge", "2", NewApplicationErrorWithOptions("card 4242 declined", "CardDeclined",
		ApplicationErrorOptions{NonRetryable: true, Details: []any{"pin 8462"}, Cause: &PanicError{value: "vault opened", stackTrace: "vault.go:7"}}))
	stored := failureToStored(fc, encodeFailure(err))
	for _, secret := range []string{"4242", "8462", "vault"} {
		if strings.Contains(string(stored), secret) {
			t.Fatalf("the stored failure shows %q: %s", secret, stored)
		}
	}
	var f converter.Failure
	if err := json.Unmarshal(stored, &f); err != nil {
		t.Fatal(err)
	}
	app := f.Cause
	if f.Message != converter.EncodedFailureMessage || app == nil || app.Message != converter.EncodedFailureMessage ||
		app.Type != "CardDeclined" || !app.NonRetryable || app.EncodedAttributes == nil || app.Cause.StackTrace != "" {
		t.Fatalf("stored failure %s", stored)
	}
	// A reader without the converter sees the encoded message, as Temporal's UI does.
	if got := decodeFailure(stored); !strings.Contains(got.Error(), converter.EncodedFailureMessage) || strings.Contains(got.Error(), "4242") {
		t.Fatalf("read without the converter: %v", got)
	}
	back := decodeFailure(failureFromStored(fc, stored))
	if back.Error() != err.Error() {
		t.Fatalf("read back %q, want %q", back, err)
	}
	var a *ApplicationError
	var pin string
	var p *PanicError
	if !errors.As(back, &a) || a.Details(&pin) != nil || pin != "pin 8462" || !errors.As(back, &p) || p.StackTrace() != "vault.go:7" {
		t.Fatalf("read back %+v (details %q)", back, pin)
	}
	// The failure given to FailureToError is left as it is.
	if f.Cause.Message != converter.EncodedFailureMessage {
		t.Fatal("FailureToError changed its argument")
	}
	// A data converter that cannot encode leaves nothing in the clear.
	broken := NewDefaultFailureConverter(DefaultFailureConverterOptions{DataConverter: brokenConverter{}, EncodeCommonAttributes: true})
	if f := broken.ErrorToFailure(errors.New("card 4242")); strings.Contains(f.Message, "4242") || !strings.HasPrefix(f.Message, converter.EncodedFailureMessage) {
		t.Fatalf("with a failing data converter the message is %q", f.Message)
	}
}

type brokenConverter struct{ converter.DataConverter }

func (brokenConverter) ToPayload(any) (*converter.Payload, error) { return nil, errors.New("no key") }

// upperFailures is a FailureConverter of its own: it stores messages in
// capitals and reads them back in lower case.
type upperFailures struct{}

func (upperFailures) ErrorToFailure(err error) *converter.Failure {
	f := GetDefaultFailureConverter().ErrorToFailure(err)
	for n := f; n != nil; n = n.Cause {
		n.Message = strings.ToUpper(n.Message)
	}
	return f
}

func (upperFailures) FailureToError(f *converter.Failure) error {
	c := *f
	c.Message = strings.ToLower(c.Message)
	return GetDefaultFailureConverter().FailureToError(&c)
}

// Any FailureConverter works at the boundary: the stored form is its own,
// and what is read back is the errors it returns.
func TestCustomFailureConverterAtTheBoundary(t *testing.T) {
	stored := failureToStored(upperFailures{}, encodeFailure(NewApplicationError("quiet", "T")))
	if !strings.Contains(string(stored), `"message":"QUIET"`) {
		t.Fatalf("stored %s", stored)
	}
	if got := decodeFailure(failureFromStored(upperFailures{}, stored)); got.Error() != "quiet (type: T, retryable: true)" {
		t.Fatalf("read back %v", got)
	}
	// Bytes that are not a failure record are left alone.
	if got := failureFromStored(upperFailures{}, []byte("not json")); string(got) != "not json" {
		t.Fatalf("a payload that is not a failure became %s", got)
	}
	// A workflow's panic keeps its kind and stack through the converter.
	wf := &replay.PanicError{Coroutine: "root", Value: "oops", Stack: "wf.go:9"}
	var p *PanicError
	if got := decodeFailure(failureFromStored(upperFailures{}, failureToStored(upperFailures{}, encodeFailure(wf)))); !errors.As(got, &p) || p.StackTrace() != "wf.go:9" {
		t.Fatalf("a workflow panic came back as %v", got)
	}
}
