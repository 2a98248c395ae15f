// Command temporal-port runs small programs written in the shape of
// Temporal's Go samples (helloworld, greetings, retryactivity, and a child
// and external signals): their packages import heddle's sdk/... where
// Temporal's import go.temporal.io/sdk/..., and nothing else changes. This
// program stands in for `temporal server start-dev`: it serves an
// in-memory engine over HTTP and points the samples at it through
// TEMPORAL_ADDRESS, then runs each sample's worker and starter and checks
// what the starter printed.
package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"

	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/engine/httpapi"
	"github.com/heddlewf/heddle/examples/temporal-port/childsignal"
	"github.com/heddlewf/heddle/examples/temporal-port/greetings"
	"github.com/heddlewf/heddle/examples/temporal-port/helloworld"
	"github.com/heddlewf/heddle/examples/temporal-port/retryactivity"
)

// sample is one ported program: its worker, its starter, and what the
// starter must return.
type sample struct {
	name    string
	worker  func(interruptCh <-chan any) error
	starter func() (string, error)
	want    string
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "temporal-port:", err)
		os.Exit(1)
	}
}

func run() (err error) {
	e, err := embedded.Open(embedded.Config{InMemory: true})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, e.Close()) }()
	srv, err := httpapi.NewServer(httpapi.ServerConfig{Service: e})
	if err != nil {
		return err
	}
	defer srv.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: srv}
	go func() { _ = hs.Serve(l) }()
	defer func() { err = errors.Join(err, hs.Close()) }()
	if err := os.Setenv("TEMPORAL_ADDRESS", l.Addr().String()); err != nil {
		return err
	}

	samples := []sample{
		{"helloworld", helloworld.RunWorker, helloworld.RunStarter, "Hello Temporal!"},
		{"greetings", greetings.RunWorker, greetings.RunStarter, "Greeting: Hello Temporal!"},
		{"retryactivity", retryactivity.RunWorker, retryactivity.RunStarter,
			"attempt 2 processed 10..19; card declined (CardDeclined) for 4200 cents: insufficient funds"},
		{"childsignal", childsignal.RunWorker, childsignal.RunStarter,
			"Hello World! (child parent-workflow-child: child greeted World)"},
	}
	for _, s := range samples {
		interrupt := make(chan any)
		stopped := make(chan error, 1)
		go func() { stopped <- s.worker(interrupt) }()
		got, err := s.starter()
		close(interrupt) // as SIGINT does to worker.InterruptCh()
		if werr := <-stopped; werr != nil {
			return fmt.Errorf("%s worker: %w", s.name, werr)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		fmt.Printf("%s: %s\n", s.name, got)
		if !strings.Contains(got, s.want) {
			return fmt.Errorf("%s returned %q, want %q", s.name, got, s.want)
		}
	}
	fmt.Printf("ok: %d Temporal-shaped samples ran\n", len(samples))
	return nil
}
