package converter

import (
	"reflect"
	"strings"
	"testing"
)

type order struct {
	ID    string   `json:"id"`
	Items []string `json:"items"`
	Total int      `json:"total"`
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	in := order{ID: "o-1", Items: []string{"tea", "cups"}, Total: 12}
	data, err := Encode("hello", 42, in, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := `["hello",42,{"id":"o-1","items":["tea","cups"],"total":12},null]`; string(data) != want {
		t.Fatalf("encoded %s, want %s", data, want)
	}
	var (
		s   string
		n   int
		out order
		p   *order
	)
	if err := Decode(data, &s, &n, &out, &p); err != nil {
		t.Fatal(err)
	}
	if s != "hello" || n != 42 || !reflect.DeepEqual(out, in) || p != nil {
		t.Fatalf("decoded %q %d %+v %v", s, n, out, p)
	}
}

func TestEncodeNothingIsNil(t *testing.T) {
	data, err := Encode()
	if err != nil || data != nil {
		t.Fatalf("Encode() = %q, %v; want nil, nil", data, err)
	}
	if err := Decode(nil); err != nil {
		t.Fatalf("Decode(nil) = %v", err)
	}
}

func TestEncodeNamesTheBadValue(t *testing.T) {
	_, err := Encode("ok", make(chan int))
	if err == nil || !strings.Contains(err.Error(), "value 1 (chan int)") {
		t.Fatalf("error %v, want it to name value 1 and its type", err)
	}
}

// A reader may take fewer values than were sent, and a nil pointer skips
// one, so a newer sender's extra arguments do not break an older reader.
func TestDecodeFewerAndSkippedPointers(t *testing.T) {
	data, _ := Encode(1, "two", 3.5)
	var s string
	if err := Decode(data, nil, &s); err != nil || s != "two" {
		t.Fatalf("Decode = %v, s = %q", err, s)
	}
	var typedNil *int
	if err := Decode(data, typedNil); err != nil {
		t.Fatalf("a typed nil pointer was not skipped: %v", err)
	}
}

func TestDecodeErrorsSayWhatWasWrong(t *testing.T) {
	data, _ := Encode(1)
	var a, b int
	var s string
	cases := []struct {
		name string
		data []byte
		ptrs []any
		want string
	}{
		{"more pointers than values", data, []any{&a, &b}, "2 value pointers given but the payload holds only 1 values"},
		{"not a pointer", data, []any{a}, "value pointer 0 is a int, not a pointer"},
		{"wrong type", data, []any{&s}, "decode value 0 into *string"},
		{"not an array", []byte(`{"a":1}`), []any{&a}, "payload is not a JSON array"},
		{"not JSON", []byte(`[1,`), nil, "payload is not a JSON array"},
		{"nothing to decode", nil, []any{&a}, "1 value pointers given but the payload holds only 0 values"},
	}
	for _, c := range cases {
		err := Decode(c.data, c.ptrs...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to contain %q", c.name, err, c.want)
		}
	}
}

func TestEncodedValue(t *testing.T) {
	var zero EncodedValue
	if zero.HasValue() {
		t.Fatal("the zero EncodedValue has a value")
	}
	data, _ := Encode(order{ID: "o-2"})
	v := NewEncodedValue(data)
	if !v.HasValue() || string(v.Data()) != string(data) {
		t.Fatal("EncodedValue lost its payload")
	}
	var out order
	if err := v.Get(&out); err != nil || out.ID != "o-2" {
		t.Fatalf("Get = %v, %+v", err, out)
	}
}
