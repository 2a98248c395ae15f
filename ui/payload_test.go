package ui

import (
	"strings"
	"testing"

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

func TestViewPayload(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []byte
		kind string
		text string
	}{
		{"the SDK's JSON array, indented", []byte(`[{"sku":"A-1","qty":2}]`), "json",
			"[\n  {\n    \"sku\": \"A-1\",\n    \"qty\": 2\n  }\n]"},
		{"a JSON failure", []byte(`{"type":"TerminatedError","message":"terminated","nonRetryable":true}`), "json",
			"{\n  \"type\": \"TerminatedError\",\n  \"message\": \"terminated\",\n  \"nonRetryable\": true\n}"},
		{"a JSON scalar", []byte(`42`), "json", "42"},
		{"a msgpack map, keys sorted as JSON writes them", mustMsgpack(t, map[string]any{"b": 1, "a": []any{"x", true}}), "msgpack",
			"{\n  \"a\": [\n    \"x\",\n    true\n  ],\n  \"b\": 1\n}"},
		{"a msgpack array with a map keyed by numbers", mustMsgpack(t, []any{map[int]string{1: "one"}}), "msgpack",
			"[\n  {\n    \"1\": \"one\"\n  }\n]"},
		{"text that is not JSON", []byte("hello, world"), "text", `"hello, world"`},
		{"a single byte that msgpack reads as a number is text", []byte("h"), "text", `"h"`},
		{"msgpack with bytes after the document is not msgpack", append(mustMsgpack(t, []any{1}), 0xc1), "binary", "kQHB"},
		{"binary", []byte{0xff, 0x00, 0xfe}, "binary", "/wD+"},
	} {
		v := viewPayload(tc.in)
		if v == nil || v.Kind != tc.kind || v.Text != tc.text || v.Size != len(tc.in) || v.Cut {
			t.Errorf("%s: %+v, want kind %s text %q", tc.name, v, tc.kind, tc.text)
		}
	}
	if v := viewPayload(nil); v != nil {
		t.Errorf("an empty payload: %+v, want nil", v)
	}
	big := []byte(`"` + strings.Repeat("é", maxPayloadShown) + `"`)
	v := viewPayload(big)
	if !v.Cut || len(v.Text) > maxPayloadShown+len("\n…") || !strings.HasSuffix(v.Text, "\n…") || v.Size != len(big) {
		t.Errorf("a large payload: cut %v, %d bytes shown of %d", v.Cut, len(v.Text), v.Size)
	}
	if !strings.HasPrefix(v.Text, `"éé`) || strings.ContainsRune(v.Text, '\uFFFD') {
		t.Error("a large payload was not cut at a character boundary")
	}
}

func FuzzViewPayload(f *testing.F) {
	f.Add([]byte(`[1,"a"]`))
	f.Add([]byte{0x81, 0xa1, 'a', 0x01})
	f.Add([]byte{0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		v := viewPayload(b)
		if len(b) == 0 {
			if v != nil {
				t.Fatal("an empty payload gave a view")
			}
			return
		}
		if v.Size != len(b) || v.Text == "" && v.Kind != "json" {
			t.Fatalf("payload %x: %+v", b, v)
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
