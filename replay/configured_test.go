package replay

import (
	"testing"

	"github.com/heddlewf/heddle/engine"
)

// A Draft job configured before its activation runs with the configured
// input (the last one before the activation); a job_configured after the
// start, which no engine command writes, changes nothing.
func TestConfiguredInput(t *testing.T) {
	cases := []struct {
		name string
		evs  []engine.Event
		want string
	}{
		{"draft configured twice", []engine.Event{
			{Type: engine.EventJobDrafted, Payload: []byte("first")},
			{Type: engine.EventJobConfigured, Payload: []byte("second")},
			{Type: engine.EventJobConfigured, Payload: []byte("third")},
			{Type: engine.EventJobActivated},
			{Type: engine.EventJobConfigured, Payload: []byte("after activation")},
		}, "third"},
		{"draft not configured", []engine.Event{
			{Type: engine.EventJobDrafted, Payload: []byte("first")},
			{Type: engine.EventJobActivated},
		}, "first"},
		{"created, then a stray job_configured", []engine.Event{
			{Type: engine.EventJobCreated, Payload: []byte("first")},
			{Type: engine.EventJobConfigured, Payload: []byte("stray")},
		}, "first"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got string
			x := NewExecution(1, func(_ *Execution, input []byte) { got = string(input) })
			defer x.Close()
			for i := range c.evs {
				c.evs[i].Seq = uint64(i + 1)
			}
			if err := x.Advance(c.evs, true); err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Fatalf("the code ran with %q, want %q", got, c.want)
			}
		})
	}
}
