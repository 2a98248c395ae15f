package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/httpapi"
	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
	"github.com/spf13/cobra"
)

// Greet is the example workflow "heddle worker" runs: two activities and
// a durable timer between them, so a node killed mid-run shows the
// workflow finishing on the next leader without repeating a step.
func Greet(ctx workflow.Context, name string) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Second,
		RetryPolicy: &workflow.RetryPolicy{InitialInterval: 100 * time.Millisecond, MaximumAttempts: 5}})
	var title string
	if err := workflow.ExecuteActivity(ctx, LookupTitle, name).Get(ctx, &title); err != nil {
		return "", err
	}
	if err := workflow.Sleep(ctx, 500*time.Millisecond); err != nil {
		return "", err
	}
	var greeting string
	if err := workflow.ExecuteActivity(ctx, ComposeGreeting, title, name).Get(ctx, &greeting); err != nil {
		return "", err
	}
	return greeting, nil
}

// LookupTitle is Greet's first activity.
func LookupTitle(ctx context.Context, name string) (string, error) {
	logActivity(ctx, "LookupTitle", name)
	if strings.HasPrefix(strings.ToLower(name), "dr") {
		return "", nil
	}
	return "friend", nil
}

// ComposeGreeting is Greet's second activity.
func ComposeGreeting(ctx context.Context, title, name string) (string, error) {
	logActivity(ctx, "ComposeGreeting", name)
	if title == "" {
		return "hello, " + name, nil
	}
	return "hello, " + title + " " + name, nil
}

// activityLog is where the example activities report, with their
// idempotency key, so a reader can see that no finished step ran twice. A
// line that could not be written is kept in the printer, for the worker
// command to report when it stops; the activity itself succeeded.
var activityLog struct {
	sync.Mutex
	p *printer
}

func logActivity(ctx context.Context, name, arg string) {
	info := activity.GetInfo(ctx)
	activityLog.Lock()
	defer activityLog.Unlock()
	if activityLog.p != nil {
		activityLog.p.printf("ran %s(%q) for %s, attempt %d, key %s\n", name, arg, info.WorkflowID, info.Attempt, info.IdempotencyKey)
	}
}

// newWorkerCommand is "heddle worker": a remote worker for the example
// workflow against a server or a cluster.
func newWorkerCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "worker [--addr ADDRS] [-t QUEUE]",
		Short: "run a remote worker for the example workflow Greet",
		Long: "Runs a remote worker for the example workflow \"Greet\" (two activities and a\n" +
			"timer) against a heddle server or cluster, through the HTTP API. Start one with\n" +
			"  heddle workflow start --type Greet -t greetings --input '\"ada\"' --wait",
		Args: noArgs,
	}
	fs := cmd.Flags()
	var (
		addr, token, queue, tlsCA string
		concurrency               int
	)
	fs.StringVar(&addr, "addr", "", "HTTP `addresses` of the server or cluster members, comma-separated (default $HEDDLE_ADDR, else "+defaultAddr+")")
	fs.StringVar(&token, "token", "", "bearer `token` of the HTTP API (default $HEDDLE_TOKEN)")
	fs.StringVar(&tlsCA, "tls-ca", "", tlsCAUsage)
	fs.StringVarP(&queue, "task-queue", "t", "greetings", "task `queue` to serve (also --queue)")
	fs.StringVar(&queue, "queue", "greetings", "the same as --task-queue")
	_ = fs.MarkHidden("queue")
	fs.IntVar(&concurrency, "concurrency", 64, "workflow and activity tasks run at once")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if concurrency < 1 {
			return usagef("--concurrency %d must be at least 1", concurrency)
		}
		// What cannot be printed does not stop the worker; it makes the
		// exit status say so once the worker has stopped.
		stdout, stderr := newPrinter(cmd.OutOrStdout()), newPrinter(cmd.ErrOrStderr())
		addrs := splitAddrs(envDefault(addr, "HEDDLE_ADDR", defaultAddr))
		tlsConfig, err := clientTLSFor(tlsCA)
		if err != nil {
			return err
		}
		svc, err := httpapi.NewClient(httpapi.ClientConfig{Addrs: addrs, Token: envDefault(token, "HEDDLE_TOKEN", ""), TLS: tlsConfig})
		if err != nil {
			return usagef("--addr: %v", err)
		}
		host, _ := os.Hostname()
		w := worker.New(client.New(svc), queue, worker.Options{MaxConcurrentJobs: concurrency,
			Identity: fmt.Sprintf("%s-%d", host, os.Getpid()),
			OnError:  func(job engine.JobID, err error) { stderr.printf("heddle worker: job %d: %v\n", job, err) }})
		w.RegisterWorkflow(Greet)
		w.RegisterActivity(LookupTitle)
		w.RegisterActivity(ComposeGreeting)
		activityLog.Lock()
		activityLog.p = stdout
		activityLog.Unlock()
		ctx, stop := untilSignal()
		defer stop()
		if err := w.Start(); err != nil {
			return err
		}
		// The worker answers the node's queries for the queue itself; one
		// it cannot serve (a bad token, a server without the route) reaches
		// OnError, and the worker goes on without answering queries.
		stdout.printf("heddle worker: serving queue %q on %s\n", queue, strings.Join(addrs, ","))
		<-ctx.Done()
		drain, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err = w.Shutdown(drain)
		stdout.printf("heddle worker: stopped (%v)\n", err)
		return errors.Join(stdout.err(), stderr.err())
	}
	return cmd
}
