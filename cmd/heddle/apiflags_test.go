package main

import (
	"io"
	"testing"

	"github.com/spf13/cobra"
)

// Every command that talks to the HTTP API takes the connection flags, so
// that none is unusable against a cluster with tokens or a private CA
// (schedule and task once lacked --tls-ca). The chaos suite's own worker
// process is left out: the suite starts it, on loopback, without either.
func TestAPICommandsShareTheConnectionFlags(t *testing.T) {
	want := []string{"token", "tls-ca"}
	var walk func(c *cobra.Command)
	seen := 0
	walk = func(c *cobra.Command) {
		if c.Name() == "chaos" {
			return
		}
		if c.Flags().Lookup("addr") != nil || c.InheritedFlags().Lookup("addr") != nil {
			if c.HasSubCommands() {
				for _, s := range c.Commands() {
					walk(s)
				}
				return
			}
			seen++
			for _, name := range want {
				if c.Flags().Lookup(name) == nil && c.InheritedFlags().Lookup(name) == nil {
					t.Errorf("%q takes --addr but not --%s", c.CommandPath(), name)
				}
			}
			return
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(newRootCommand(io.Discard, io.Discard))
	if seen < 30 {
		t.Fatalf("only %d commands take --addr; the walk missed the API commands", seen)
	}
}
