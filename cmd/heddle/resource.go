package main

// This file is "heddle resource": the resource pool that steps lease units
// of (browsers, phones, GPUs, accounts), through the HTTP API. A resource
// offers capabilities and labels; a step that requires them takes one of
// its units, first come first served, and a drained resource finishes its
// leases and takes no new ones.

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/heddlewf/heddle/engine"
	"github.com/spf13/cobra"
)

func newResourceCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "resource",
		Short: "add, list, drain or remove the resources that steps lease",
		Long: "Manages the resource pool of a heddle node or cluster through its HTTP API: the\n" +
			"named resources (a browser, a phone, a GPU, an account) whose units steps lease\n" +
			"when their activity options require capabilities or labels.",
		Args: unknownCommandArgs,
		RunE: missingCommand,
	}
	g := addAPIFlags(cmd)
	cmd.AddCommand(newResourceAddCommand(g), newResourceListCommand(g), newResourceDrainCommand(g), newResourceRemoveCommand(g))
	return cmd
}

// resourceDoc is one resource as -o json prints it.
type resourceDoc struct {
	ID           string            `json:"id"`
	Capabilities []string          `json:"capabilities"`
	Labels       map[string]string `json:"labels"`
	Capacity     int               `json:"capacity"`
	Free         int               `json:"free"`
	Drained      bool              `json:"drained"`
	Holders      []holderDoc       `json:"holders"`
	CreatedAt    string            `json:"created_at"`
	UpdatedAt    string            `json:"updated_at"`
}

// holderDoc is one leased unit: the step holding it.
type holderDoc struct {
	JobID   uint64 `json:"job_id"`
	Step    string `json:"step"`
	Attempt uint32 `json:"attempt"`
	Since   string `json:"since"`
}

func resourceDocOf(r *engine.Resource) resourceDoc {
	d := resourceDoc{ID: r.ID, Capabilities: r.Capabilities, Labels: r.Labels, Capacity: r.Capacity, Free: r.Free(),
		Drained: r.Drained, Holders: []holderDoc{}, CreatedAt: wfRFC3339(r.CreatedMS), UpdatedAt: wfRFC3339(r.UpdatedMS)}
	if d.Capabilities == nil {
		d.Capabilities = []string{}
	}
	if d.Labels == nil {
		d.Labels = map[string]string{}
	}
	for _, h := range r.Holders {
		d.Holders = append(d.Holders, holderDoc{JobID: uint64(h.Job), Step: h.Step, Attempt: h.StepAttempt, Since: wfRFC3339(h.SinceMS)})
	}
	return d
}

// labelsValue is a repeatable --label key=value flag.
type labelsValue struct{ m map[string]string }

func (v *labelsValue) String() string {
	keys := make([]string, 0, len(v.m))
	for k := range v.m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + v.m[k]
	}
	return strings.Join(parts, ",")
}

func (v *labelsValue) Set(s string) error {
	for _, kv := range strings.Split(s, ",") {
		k, val, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return fmt.Errorf("%q is not key=value", kv)
		}
		if v.m == nil {
			v.m = map[string]string{}
		}
		v.m[k] = val
	}
	return nil
}

func (v *labelsValue) Type() string { return "key=value" }

func newResourceAddCommand(g *wfGlobals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "add ID [--capability NAME]... [--label KEY=VALUE]... [--capacity N]",
		Short: "register a resource",
		Long: "Registers resource ID with the capabilities it offers, its labels and its\n" +
			"capacity: how many steps may hold it at once. Steps waiting for what it offers\n" +
			"take its units at once, first come first served.",
		Args: exactArgs("ID"),
	}
	var caps []string
	labels := &labelsValue{}
	var capacity int
	cmd.Flags().StringSliceVarP(&caps, "capability", "c", nil, "a `capability` the resource offers (repeat, or comma-separate)")
	cmd.Flags().VarP(labels, "label", "l", "a label `key=value` (repeat, or comma-separate)")
	cmd.Flags().IntVar(&capacity, "capacity", 1, "how many steps may hold the resource at once")
	cmd.RunE = g.runE(func(c *wfCall, args []string) error {
		if args[0] == "" {
			return usagef("ID must not be empty")
		}
		if capacity < 1 {
			return usagef("--capacity %d must be at least 1", capacity)
		}
		svc, err := c.client()
		if err != nil {
			return err
		}
		res, err := svc.AddResource(c.ctx, engine.AddResource{ID: args[0], Capabilities: caps, Labels: labels.m, Capacity: capacity})
		if err != nil {
			return err
		}
		return resourcePrintOne(c, res.Resource, fmt.Sprintf("Added resource %s", wfCell(args[0])), res.Granted)
	})
	return cmd
}

func newResourceListCommand(g *wfGlobals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list",
		Short: "list the resources, their capacity, free units and holders",
		Args:  exactArgs(),
	}
	cmd.RunE = g.runE(func(c *wfCall, _ []string) error {
		svc, err := c.client()
		if err != nil {
			return err
		}
		rs, err := svc.Resources(c.ctx)
		if err != nil {
			return err
		}
		docs := []resourceDoc{}
		for _, r := range rs {
			docs = append(docs, resourceDocOf(r))
		}
		switch c.format {
		case formatJSON:
			return c.doc(struct {
				Resources []resourceDoc `json:"resources"`
			}{docs})
		case formatJSONL:
			return printLines(c.out, docs)
		}
		return resourcePrintList(c.out, docs)
	})
	return cmd
}

func resourcePrintList(w io.Writer, docs []resourceDoc) error {
	if len(docs) == 0 {
		_, err := io.WriteString(w, "No resources.\n")
		return err
	}
	t := newWFTable(w)
	t.row("ID", "CAPABILITIES", "LABELS", "CAPACITY", "FREE", "DRAINED", "HELD BY")
	for _, d := range docs {
		var held []string
		for _, h := range d.Holders {
			held = append(held, fmt.Sprintf("%d/%s#%d", h.JobID, h.Step, h.Attempt))
		}
		drained := "no"
		if d.Drained {
			drained = "yes"
		}
		t.row(wfCell(d.ID), stepDash(wfCell(strings.Join(d.Capabilities, ","))), stepDash(wfCell((&labelsValue{d.Labels}).String())),
			fmt.Sprint(d.Capacity), fmt.Sprint(d.Free), drained, stepDash(strings.Join(held, " ")))
	}
	return t.flush()
}

func newResourceDrainCommand(g *wfGlobals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "drain ID [--undo]",
		Short: "stop a resource taking new leases (its leases finish)",
		Args:  exactArgs("ID"),
	}
	var undo bool
	cmd.Flags().BoolVar(&undo, "undo", false, "let the resource take leases again")
	cmd.RunE = g.runE(func(c *wfCall, args []string) error {
		svc, err := c.client()
		if err != nil {
			return err
		}
		res, err := svc.DrainResource(c.ctx, engine.DrainResource{ID: args[0], Undrain: undo})
		if err != nil {
			return err
		}
		what := "Drained"
		if undo {
			what = "Undrained"
		}
		return resourcePrintOne(c, res.Resource, fmt.Sprintf("%s resource %s", what, wfCell(args[0])), res.Granted)
	})
	return cmd
}

func newResourceRemoveCommand(g *wfGlobals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "remove ID",
		Short: "delete a resource that holds no lease",
		Long:  "Deletes resource ID. One whose units steps still hold is refused: drain it, and\nremove it once its leases ended.",
		Args:  exactArgs("ID"),
	}
	cmd.RunE = g.runE(func(c *wfCall, args []string) error {
		svc, err := c.client()
		if err != nil {
			return err
		}
		if _, err := svc.RemoveResource(c.ctx, engine.RemoveResource{ID: args[0]}); err != nil {
			return err
		}
		if !c.table() {
			return c.doc(struct {
				ID      string `json:"id"`
				Removed bool   `json:"removed"`
			}{args[0], true})
		}
		_, err = fmt.Fprintf(c.out, "Removed resource %s\n", wfCell(args[0]))
		return err
	})
	return cmd
}

// resourcePrintOne prints a resource a command changed, and how many
// waiting steps the change gave a unit.
func resourcePrintOne(c *wfCall, r *engine.Resource, what string, granted int) error {
	if !c.table() {
		return c.doc(struct {
			Resource resourceDoc `json:"resource"`
			Granted  int         `json:"granted"`
		}{resourceDocOf(r), granted})
	}
	msg := fmt.Sprintf("%s: %d of %d units free", what, r.Free(), r.Capacity)
	if granted > 0 {
		msg += fmt.Sprintf(", %d given to waiting steps", granted)
	}
	_, err := fmt.Fprintln(c.out, msg)
	return err
}
