package converter

import (
	"errors"
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
	var a int
	var s string
	cases := []struct {
		name string
		data []byte
		ptrs []any
		want string
	}{
		{"not a pointer", data, []any{a}, "value pointer 0 is a int, not a pointer"},
		{"wrong type", data, []any{&s}, "decode value 0 into *string"},
		{"not an array", []byte(`{"a":1}`), []any{&a}, "payload is not a JSON array"},
		{"not JSON", []byte(`[1,`), nil, "payload is not a JSON array"},
	}
	for _, c := range cases {
		err := Decode(c.data, c.ptrs...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to contain %q", c.name, err, c.want)
		}
	}
}

// A reader may take more values than were sent: as in Temporal, the
// pointers past the last value keep what they hold (the zero value of a
// handler's fresh parameter), so a handler may grow a parameter before
// every sender sends it.
func TestDecodeMissingValuesAreLeftAlone(t *testing.T) {
	data, _ := Encode(7)
	a, b, s := 0, 0, "kept"
	if err := Decode(data, &a, &b, &s); err != nil {
		t.Fatalf("Decode with more pointers than values: %v", err)
	}
	if a != 7 || b != 0 || s != "kept" {
		t.Fatalf("decoded a=%d b=%d s=%q; want 7, 0, \"kept\"", a, b, s)
	}
	if err := Decode(nil, &a); err != nil || a != 7 {
		t.Fatalf("Decode of no payload = %v, a = %d; want nil and a untouched", err, a)
	}
}

func TestEncodedValue(t *testing.T) {
	empty := NewEncodedValue(nil)
	var out order
	if empty.HasValue() {
		t.Fatal("an EncodedValue of no payload has a value")
	}
	if err := empty.Get(&out); !errors.Is(err, ErrNoData) {
		t.Fatalf("Get of no payload = %v, want ErrNoData", err)
	}
	data, _ := Encode(order{ID: "o-2"}, "ignored")
	v := NewEncodedValue(data)
	if !v.HasValue() || string(DataOf(v)) != string(data) {
		t.Fatal("EncodedValue lost its payload")
	}
	if err := v.Get(&out); err != nil || out.ID != "o-2" {
		t.Fatalf("Get = %v, %+v", err, out)
	}
}

func TestEncodedValues(t *testing.T) {
	if v := NewEncodedValues(nil); v.HasValues() || !errors.Is(v.Get(new(int)), ErrNoData) {
		t.Fatal("EncodedValues of no payload: HasValues true or Get not ErrNoData")
	}
	data, _ := Encode("a", 2)
	v := NewEncodedValues(data)
	var s string
	var n, missing int
	if err := v.Get(&s, &n, &missing); err != nil || s != "a" || n != 2 || missing != 0 {
		t.Fatalf("Get = %v: %q %d %d", err, s, n, missing)
	}
	if DataOf(v) == nil || DataOf(42) != nil {
		t.Fatal("DataOf: no payload for an EncodedValues, or one for an int")
	}
}
