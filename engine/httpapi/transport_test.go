package httpapi

import (
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
)

// NewTransport keeps the connections of many concurrent requests to one
// node for the next ones (net/http's default keeps 2 and closes the rest,
// so a loaded forwarder opened connections as fast as it sent requests).
func TestNewTransportKeepsConnectionsOfConcurrentRequests(t *testing.T) {
	var opened atomic.Int64
	release := make(chan struct{})
	var arrived sync.WaitGroup
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived.Done()
		<-release // every request of a round is in flight at once
	}))
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			opened.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	const concurrent = 16
	client := &http.Client{Transport: NewTransport(nil)}
	round := func() {
		arrived.Add(concurrent)
		var done sync.WaitGroup
		for range concurrent {
			done.Add(1)
			go func() {
				defer done.Done()
				resp, err := client.Get(srv.URL)
				if err != nil {
					t.Error(err)
					return
				}
				_ = resp.Body.Close()
			}()
		}
		arrived.Wait()
		for range concurrent {
			release <- struct{}{}
		}
		done.Wait()
	}
	round()
	first := opened.Load()
	round()
	if first != concurrent || opened.Load() != first {
		t.Fatalf("connections opened: %d for the first round of %d requests, %d in all after the second; want %d, none more",
			first, concurrent, opened.Load(), concurrent)
	}
}
