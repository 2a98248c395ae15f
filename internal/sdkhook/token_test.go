package sdkhook

import (
	"bytes"
	"testing"

	"github.com/heddlewf/heddle/engine"
)

// A task token is bytes a caller hands back: any input decodes to a token
// or an error without panicking, and a decoded token encodes and decodes to
// itself, lease token included.
func FuzzDecodeTaskToken(f *testing.F) {
	f.Add(TaskToken{Job: 7, Attempt: 2, LeaseToken: "0123456789abcdef0123456789abcdef", WorkflowID: "wf/7/1", ActivityID: "1"}.Encode())
	f.Add([]byte(`{"job":7,"attempt":2}`))
	f.Add([]byte(`{"job":7,"attempt":2,"lease_token":null}`))
	f.Add(append(bytes.Repeat([]byte("["), 10_000), ']'))
	f.Add([]byte("nonsense"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tok, err := DecodeTaskToken(data)
		if err != nil {
			return
		}
		if tok.Job == 0 || tok.Attempt == 0 {
			t.Fatalf("decoded %+v without a job or an attempt", tok)
		}
		back, err := DecodeTaskToken(tok.Encode())
		if err != nil || back != tok {
			t.Fatalf("round trip of %+v gave %+v, %v", tok, back, err)
		}
		if l := tok.Lease(); l != (engine.LeaseRef{Job: tok.Job, Attempt: tok.Attempt, Token: tok.LeaseToken}) {
			t.Fatalf("lease %+v of %+v", l, tok)
		}
	})
}
