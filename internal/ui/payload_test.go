package ui

import (
	"bytes"
	"strings"
	"testing"

	"github.com/heddlewf/heddle/internal/payloadview"

	"github.com/vmihailenco/msgpack/v5"
)

func mustMsgpack(t *testing.T, v any) []byte {
	t.Helper()
	b, err := msgpack.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A page's payload is payloadview's rendering with the address of its
// bytes; the tests of the rendering itself are payloadview's.
func TestViewPayload(t *testing.T) {
	v := viewPayload(mustMsgpack(t, map[string]any{"a": []any{"x", true}}), "/raw")
	if v == nil || v.Kind != payloadview.Msgpack || v.Text != "{\n  \"a\": [\n    \"x\",\n    true\n  ]\n}" || v.Raw != "/raw" {
		t.Errorf("a msgpack map: %+v", v)
	}
	if v := viewInline([]byte(`{"q": "which code?", "n": [1, 2]}`), "/q"); v == nil || v.Text != `{"q":"which code?","n":[1,2]}` {
		t.Errorf("a question on one line: %+v", v)
	}
	if v := viewInline([]byte(strings.Repeat("x", 1000)), "/q"); !v.Cut || len(v.Text) > inlineLimits.MaxTextBytes+len("…") {
		t.Errorf("a long question on one line: cut %v, %d bytes", v.Cut, len(v.Text))
	}
	if v := viewPayload(nil, "/raw"); v != nil {
		t.Errorf("an empty payload: %+v, want nil", v)
	}
}

func FuzzViewPayload(f *testing.F) {
	f.Add([]byte(`[1,"a"]`))
	f.Add([]byte{0x81, 0xa1, 'a', 0x01})
	f.Add([]byte{0xff})
	f.Add(append(bytes.Repeat([]byte{0x91}, 100), 0xc0))
	f.Add([]byte(strings.Repeat("[", 100) + strings.Repeat("]", 100)))
	f.Add([]byte{0x91, 0xdd, 0xff, 0xff, 0xff, 0xff, 0xc0})
	f.Add([]byte{0x91, 0xdb, 0xff, 0xff, 0xff, 0xff, 'a'})
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, v := range []*payloadView{viewPayload(b, "/raw"), viewInline(b, "/raw")} {
			if len(b) == 0 {
				if v != nil {
					t.Fatal("an empty payload gave a view")
				}
				continue
			}
			if v.Size != len(b) || v.Text == "" && v.Hidden == "" || len(v.Text) > payloadview.DefaultMaxTextBytes+len("\n…") {
				t.Fatalf("payload %x: %+v", b, v)
			}
		}
	})
}

func TestFailureMessage(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want string
	}{
		{"a failed try, as the worker writes it", `{"attempt":1,"message":"inventory service busy"}`, "inventory service busy"},
		{"the engine's own failure", `{"type":"TerminatedError","message":"by the operator","nonRetryable":true}`, "by the operator"},
		{"an object without a message", `{"type":"X"}`, ""},
		{"a message that is not text", `{"message":42}`, ""},
		{"a JSON array", `["boom"]`, ""},
		{"not JSON", `boom`, ""},
		{"nothing", ``, ""},
	} {
		if got := failureMessage([]byte(tc.in)); got != tc.want {
			t.Errorf("%s: failureMessage(%s) = %q, want %q", tc.name, tc.in, got, tc.want)
		}
	}
}
