package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/heddlewf/heddle/engine"
)

// Every sentinel crosses the wire: the server names it, the client's
// RemoteError matches it again and keeps the server's message.
func TestEverySentinelRoundTrips(t *testing.T) {
	for _, w := range wireErrors {
		err := fmt.Errorf("%w: some detail", w.err)
		status, body := errorFor(err)
		if status != w.status || body.Name != w.name {
			t.Errorf("%v: status %d name %q, want %d %q", w.err, status, body.Name, w.status, w.name)
		}
		re := &RemoteError{Status: status, Body: body}
		if !errors.Is(re, w.err) || re.Error() != err.Error() {
			t.Errorf("%v: the remote error %q does not match it", w.err, re)
		}
		for _, other := range wireErrors {
			if other.err != w.err && errors.Is(re, other.err) && !errors.Is(w.err, other.err) {
				t.Errorf("%s also matches %s", w.name, other.name)
			}
		}
	}
	if got := len(wireErrors); got != 48 {
		t.Errorf("%d wire errors; a new sentinel needs a row here and a test", got)
	}
}

func TestTypedErrorsKeepCodeAndLeader(t *testing.T) {
	status, body := errorFor(&engine.StaleAttemptError{Job: 3, Attempt: 1, Current: 2, Command: "Complete"})
	re := &RemoteError{Status: status, Body: body}
	if status != http.StatusConflict || re.Code() != engine.StaleAttemptCode || !errors.Is(re, engine.ErrStaleAttempt) {
		t.Fatalf("stale attempt: %d %+v", status, body)
	}
	status, body = errorFor(fmt.Errorf("proposing: %w", &engine.NotLeaderError{LeaderID: "n2", LeaderHTTP: "10.0.0.2:8080"}))
	re = &RemoteError{Status: status, Body: body}
	var nl *engine.NotLeaderError
	if status != http.StatusServiceUnavailable || !errors.As(re, &nl) || nl.LeaderHTTP != "10.0.0.2:8080" || !errors.Is(re, engine.ErrNotLeader) {
		t.Fatalf("not leader: %d %+v", status, body)
	}
	status, body = errorFor(&engine.CrossShardError{Command: "CreateJob", What: "parent job 7", From: 1, To: 0})
	re = &RemoteError{Status: status, Body: body}
	if status != http.StatusUnprocessableEntity || re.Code() != engine.CrossShardCode || !errors.Is(re, engine.ErrCrossShard) {
		t.Fatalf("cross shard: %d %+v", status, body)
	}
	status, body = errorFor(errors.New("disk on fire"))
	if status != http.StatusInternalServerError || body.Name != nameInternal {
		t.Fatalf("unknown error: %d %+v", status, body)
	}
	if re := decodeError(http.StatusBadGateway, "text/html", []byte("<h1>bad gateway</h1>")); !retryable(re) || errors.Unwrap(re) != nil {
		t.Fatalf("a proxy's 502 %v is not retryable", re)
	}
}
