package httpapi

import (
	"encoding/json"
	"errors"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/heddlewf/heddle/engine"
)

// A JSON body past streamJSONMax is decoded where it lies: an 8 MiB start
// allocates about its payload (base64 decoded, three quarters of the body)
// rather than the five times its size the json.Decoder's growing copy took.
// It is still refused for an unknown field, wherever the field is, and for
// a second value after the first.
func TestLargeJSONBodiesDecodeWithoutCopies(t *testing.T) {
	payload := strings.Repeat("eHh4", 2<<20) // 8 MiB of base64
	body := []byte(`{"type":"T","queue":"q","input":"` + payload + `","retry":{"initial_interval_ms":5}}`)
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	var got engine.CreateJob
	if err := decodeBody(formatJSON, body, &got); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&m1)
	if alloc := m1.TotalAlloc - m0.TotalAlloc; alloc > 2*uint64(len(body)) {
		t.Errorf("decoding a %d-byte body allocated %d bytes (%.2f times)", len(body), alloc, float64(alloc)/float64(len(body)))
	}
	if got.Type != "T" || len(got.Input) != 6<<20 || got.Retry == nil || got.Retry.InitialIntervalMS != 5 {
		t.Fatalf("decoded %q %q %d bytes %+v", got.Type, got.Queue, len(got.Input), got.Retry)
	}

	for _, c := range []struct{ name, body, want string }{
		{"unknown field after the payload", `{"type":"T","input":"` + payload + `","retry":{"initial_interval_ms":5,"jitter":1}}`, `unknown field "jitter"`},
		{"caller named in the body", `{"by":"mallory","type":"T","input":"` + payload + `"}`, `unknown field "by"`},
		{"two values", `{"type":"T","input":"` + payload + `"} {}`, "invalid character '{' after top-level value"},
		{"payload that is not base64", `{"type":"T","input":"` + payload + `!"}`, "illegal base64"},
		{"string for a number", `{"type":"T","input":"` + payload + `","retry":{"initial_interval_ms":"5"}}`, "initial_interval_ms"},
	} {
		err := decodeBody(formatJSON, []byte(c.body), new(engine.CreateJob))
		if !errors.Is(err, engine.ErrInvalidCommand) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrInvalidCommand containing %q", c.name, err, c.want)
		}
	}
}

// The skeleton keeps keys, structure and short strings, escapes included,
// and empties the long string values.
func TestJSONSkeleton(t *testing.T) {
	in := `{ "a" : "` + strings.Repeat("x", 9) + `", "long\"key\\": [ "ab\"", {"k":"` + strings.Repeat("y", 9) + `\\"} ], "n": -1.5e3, "t": true, "z": null }`
	want := `{"a":"","long\"key\\":["ab\"",{"k":""}],"n":-1.5e3,"t":true,"z":null}`
	if got := string(jsonSkeleton([]byte(in), 8)); got != want {
		t.Fatalf("skeleton\n%s\nwant\n%s", got, want)
	}
}

// FuzzLargeJSONAgrees: decodeLargeJSON gives decodeStrictJSON's answer for
// any body, type and blanking length: both refuse it, or both decode the
// same value.
func FuzzLargeJSONAgrees(f *testing.F) {
	fuzzSeeds(f)
	f.Add(uint8(0), false, []byte(`{"type":"T","input":"eHh4eHh4","retry":{"initial_interval_ms":5,"jitter":1}}`))
	f.Add(uint8(0), false, []byte(`{"type":"T","reuse_policy":"reject_duplicate","input":"eHh4"} `))
	f.Add(uint8(1), false, []byte(`{"queue":"q","owner":"o","max":1,"lease_ms":5,"types":["a","b\""]}`))
	types := len(bodyTypes())
	f.Fuzz(func(t *testing.T, which uint8, _ bool, b []byte) {
		strict, large := bodyTypes()[int(which)%types], bodyTypes()[int(which)%types]
		errStrict := decodeStrictJSON(b, strict, "value")
		errLarge := decodeLargeJSON(b, large, "value", int(which%8))
		if (errStrict == nil) != (errLarge == nil) {
			t.Fatalf("%s: strict %v, large %v", b, errStrict, errLarge)
		}
		if errStrict == nil && !reflect.DeepEqual(strict, large) {
			s, _ := json.Marshal(strict)
			l, _ := json.Marshal(large)
			t.Fatalf("%s: strict decoded %s, large %s", b, s, l)
		}
	})
}
