// Command backup takes a backup of an embedded engine while it runs, restores
// it into a new directory, and carries on there: a run that was waiting when
// the backup was taken finishes on the restored copy. It exits 1 if the
// restored store is not the one backed up.
//
// The two functions an operator needs are backup and restore below; see
// docs/operations.md for when to use them.
package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/heddlewf/heddle/engine"

	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
	"github.com/heddlewf/heddle/storage"
)

// backup writes the engine's whole store, as of one moment, to the file at
// path. The engine goes on applying commands meanwhile; they are not in the
// backup. The file is synced before backup returns.
func backup(e *embedded.Engine, path string) (info storage.SnapshotInfo, err error) {
	f, err := os.Create(path)
	if err != nil {
		return info, err
	}
	defer func() { err = errors.Join(err, f.Close()) }()
	if info, err = e.DB().WriteSnapshot(f); err != nil {
		return info, err
	}
	return info, f.Sync()
}

// restore loads a backup into dir, which must not exist or be empty, and
// syncs it. Open an engine on dir afterwards. A failed restore leaves a
// partial directory behind: delete it and start again.
func restore(path, dir string) (info storage.SnapshotInfo, err error) {
	f, err := os.Open(path)
	if err != nil {
		return info, err
	}
	defer func() { err = errors.Join(err, f.Close()) }()
	db, err := storage.Open(storage.Options{Dir: dir})
	if err != nil {
		return info, err
	}
	defer func() { err = errors.Join(err, db.Close()) }()
	if info, err = db.LoadSnapshot(bufio.NewReader(f)); err != nil {
		return info, err
	}
	return info, db.Sync()
}

// Approval waits for the signal "decision" and returns it.
func Approval(ctx workflow.Context) (string, error) {
	var decision string
	workflow.GetSignalChannel(ctx, "decision").Receive(ctx, &decision)
	return decision, nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "backup:", err)
		os.Exit(1)
	}
}

func run() (err error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	root, err := os.MkdirTemp("", "heddle-backup-")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, os.RemoveAll(root)) }()
	live, copyDir, file := filepath.Join(root, "live"), filepath.Join(root, "restored"), filepath.Join(root, "backup.hdlsnap")

	// The live engine: one run finished, one waiting for its signal.
	e, w, err := start(live)
	if err != nil {
		return err
	}
	c := client.New(e)
	done, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "approval-1", TaskQueue: "approvals"}, Approval)
	if err != nil {
		return errors.Join(err, stop(e, w))
	}
	if err := c.SignalWorkflow(ctx, "approval-1", "", "decision", "yes"); err != nil {
		return errors.Join(err, stop(e, w))
	}
	if err := done.Get(ctx, nil); err != nil {
		return errors.Join(err, stop(e, w))
	}
	if _, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "approval-2", TaskQueue: "approvals"}, Approval); err != nil {
		return errors.Join(err, stop(e, w))
	}
	info, err := backup(e, file)
	if err := errors.Join(err, stop(e, w)); err != nil {
		return err
	}
	fmt.Printf("backed up %d keys (%d bytes) while the engine ran\n", info.Keys, info.Bytes)

	if info, err = restore(file, copyDir); err != nil {
		return err
	}
	fmt.Printf("restored %d keys into a new directory\n", info.Keys)

	// The restored copy is a complete store: it verifies, and its waiting
	// run carries on where it was.
	e, w, err = start(copyDir)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, stop(e, w)) }()
	var problems []error
	if err := e.View(ctx, func(r *storage.Reader) error { problems = machine.Verify(r, 10); return nil }); err != nil {
		return err
	}
	if len(problems) > 0 {
		return fmt.Errorf("the restored store does not verify: %v", errors.Join(problems...))
	}
	c = client.New(e)
	first, err := c.DescribeWorkflow(ctx, "approval-1", "")
	if err != nil {
		return err
	}
	fmt.Printf("approval-1 on the copy: %s\n", first.Status)
	if first.Status != engine.StatusCompleted {
		return fmt.Errorf("approval-1 is %s on the copy, want Completed", first.Status)
	}
	if err := c.SignalWorkflow(ctx, "approval-2", "", "decision", "no"); err != nil {
		return err
	}
	second := c.GetWorkflow(ctx, "approval-2", "")
	var decision string
	if err := second.Get(ctx, &decision); err != nil {
		return err
	}
	fmt.Printf("approval-2 finished on the copy: %q\n", decision)
	if decision != "no" {
		return fmt.Errorf("approval-2 decided %q, want %q", decision, "no")
	}
	return nil
}

// start opens an engine on dir with a worker for Approval. The lease is
// short because a backup records leases too: a run that a worker held when
// the backup was taken is claimed on the restored copy only once that lease
// has expired.
func start(dir string) (*embedded.Engine, worker.Worker, error) {
	e, err := embedded.Open(embedded.Config{Dir: dir})
	if err != nil {
		return nil, nil, err
	}
	w := worker.New(client.New(e), "approvals", worker.Options{LeaseTTL: 2 * time.Second})
	w.RegisterWorkflow(Approval)
	if err := w.Start(); err != nil {
		return nil, nil, errors.Join(err, e.Close())
	}
	return e, w, nil
}

func stop(e *embedded.Engine, w worker.Worker) error {
	return errors.Join(w.Shutdown(context.Background()), e.Close())
}
