package converter

import "testing"

// The hot path: the value lists workflow and activity code send, with no
// []byte or protobuf message among them, which stay Encode's JSON array.
// BenchmarkEncodeBytes measures the envelope a []byte takes.
//
//	go test ./sdk/converter -run '^$' -bench . -benchmem

var benchOrder = order{ID: "o-1", Items: []string{"tea", "cups"}, Total: 12}

func BenchmarkEncodeJSONValues(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Encode("hello", 42, benchOrder, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeJSONValues(b *testing.B) {
	data, _ := Encode("hello", 42, benchOrder, nil)
	var (
		s string
		n int
		o order
		p *order
	)
	b.ReportAllocs()
	for b.Loop() {
		if err := Decode(data, &s, &n, &o, &p); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeBytes(b *testing.B) {
	blob := make([]byte, 1024)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Encode(blob, "name"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeBytes(b *testing.B) {
	data, _ := Encode(make([]byte, 1024), "name")
	var (
		blob []byte
		s    string
	)
	b.ReportAllocs()
	for b.Loop() {
		if err := Decode(data, &blob, &s); err != nil {
			b.Fatal(err)
		}
	}
}
