package main

// This file is "heddle repair": the operator's way out when a data
// directory fails the integrity checks that opening it runs. It says what
// is damaged and what a repair would drop, and does it only with --yes.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/heddlewf/heddle/raftfsm"
	"github.com/heddlewf/heddle/storage"
	"github.com/spf13/cobra"
)

// repairPasses bounds the check-repair rounds of one run: clearing a log
// header can reveal damage in the records after it, which the next round
// plans; a third round finding more would be a bug, not a disk.
const repairPasses = 3

func newRepairCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "repair --dir DIR [--yes]",
		Short: "check a stopped node's data directory and, with --yes, truncate or rebuild what is damaged",
		Long: "Checks the data directory of a stopped heddle (the --dir of \"heddle dev\" or of a\n" +
			"server node) as opening it does, and prints each damaged file and what a repair\n" +
			"would do about it:\n" +
			"  - a write-ahead or value log damaged before its end, or cut short, is truncated\n" +
			"    where Badger stops reading, dropping what follows (counted);\n" +
			"  - a missing or unreadable MANIFEST is rebuilt from the tables; nothing is dropped;\n" +
			"  - a damaged or missing table cannot be repaired in place: restore a backup.\n" +
			"A server node rebuilds a damaged state from its cluster at start on its own.\n" +
			"Nothing changes without --yes. Exit status 0: the directory is sound or was\n" +
			"repaired; 1: damage remains.",
		Args: noArgs,
	}
	fs := cmd.Flags()
	var dir string
	var yes bool
	fs.StringVar(&dir, "dir", "", "the data `directory` to check (required)")
	fs.BoolVar(&yes, "yes", false, "carry out the repair the check describes, dropping what it says")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if dir == "" {
			return usagef("--dir is required")
		}
		out := newPrinter(cmd.OutOrStdout())
		err := repairDir(out, dir, yes)
		return errors.Join(err, out.err())
	}
	return cmd
}

// repairDir checks dir (a database directory, or a server node's, whose
// live state database it finds) and repairs it when yes.
func repairDir(out *printer, dir string, yes bool) error {
	db, node, err := databaseDir(dir)
	if err != nil {
		return err
	}
	if node {
		out.printf("%s is a server node's directory; checking its state database %s\n", dir, db)
		out.printf("(a node rebuilds a damaged state from its cluster at start; repair only a node that cannot)\n")
	}
	for pass := 1; ; pass++ {
		plan, err := storage.PlanRepair(db)
		if err != nil {
			return err
		}
		if len(plan.Actions) == 0 {
			if pass == 1 {
				out.printf("%s: no damage found\n", db)
			} else {
				out.printf("%s: repaired; no damage remains\n", db)
			}
			return nil
		}
		printPlan(out, plan)
		switch {
		case !plan.Repairable():
			out.printf("\nnothing was changed: a repair cannot make this directory open\n")
			return exitError{code: 1}
		case !yes:
			out.printf("\nnothing was changed; to do this, run: heddle repair --dir %s --yes\n", dir)
			return exitError{code: 1}
		case pass > repairPasses:
			return fmt.Errorf("%s still damaged after %d repairs", db, repairPasses)
		}
		if err := storage.Repair(plan); err != nil {
			return err
		}
		out.printf("\nrepaired %s, dropping %d bytes; checking again\n\n", count(len(plan.Actions), "file"), plan.DropBytes())
	}
}

// printPlan lists each damaged file and what a repair does about it.
func printPlan(out *printer, plan *storage.RepairPlan) {
	out.printf("%s: %s damaged\n", plan.Dir, count(len(plan.Actions), "file"))
	for _, a := range plan.Actions {
		d := *a.Damage
		d.More = 0
		what := strings.TrimPrefix(d.Error(), "storage: damaged data directory: ")
		out.printf("\n%s\n", what)
		if a.Unrepairable != "" {
			out.printf("  cannot repair: %s\n", a.Unrepairable)
		} else {
			out.printf("  repair: %s\n", a.Do)
		}
	}
}

// databaseDir returns the database directory dir names: dir itself, or
// for a server node's directory its live state database: a node of one
// Raft group's (which holds state/ and raft/), or a sharded node's store,
// which holds every replica's state. A sharded node of the layout before
// the store holds one database per shard replica: it is refused, naming
// them, since a repair acts on one database.
func databaseDir(dir string) (db string, node bool, err error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return "", false, err
	}
	if !fi.IsDir() {
		return "", false, fmt.Errorf("%s is not a directory", dir)
	}
	nd, err := raftfsm.ReadNodeDir(dir)
	switch {
	case errors.Is(err, raftfsm.ErrNotNodeDir):
		return dir, false, nil
	case err != nil:
		return "", false, err
	case nd.Placement != nil && nd.Store != "":
		return nd.Store, true, nil
	case nd.Placement != nil:
		var each []string
		for _, k := range nd.Shards() {
			each = append(each, filepath.Join(dir, "shards", fmt.Sprintf("%04d", k)))
		}
		return "", false, fmt.Errorf("%s is a sharded node's directory, with a state database per shard replica: name one shard's directory (%s)",
			dir, strings.Join(each, ", "))
	}
	if parent := filepath.Dir(filepath.Clean(dir)); filepath.Base(parent) == "shards" {
		if owner, err := raftfsm.ReadNodeDir(filepath.Dir(parent)); err == nil && owner.Store != "" && !isDir(filepath.Join(dir, "state")) {
			return "", false, fmt.Errorf("%s is a shard replica's directory, and its node keeps every replica's state in one database: name the node's directory (%s)",
				dir, filepath.Dir(parent))
		}
	}
	return nd.States[0].Dir, true, nil
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// count spells n things: "1 file", "2 files".
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
