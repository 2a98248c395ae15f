package main

// This file is "heddle version" and "heddle --version": what the Go
// toolchain stamped into the binary, so that a bug report names the build.

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// unknownVersion is the module version of a build that has none: "go run",
// "go build" without version control information, and test binaries. It is
// the Go toolchain's own word for it.
const unknownVersion = "(devel)"

// versionDoc is the JSON document of "heddle version".
type versionDoc struct {
	Version string `json:"version"`
	// Commit and CommitTime are the version control revision and its time,
	// absent when the build recorded none (such as with -buildvcs=false).
	Commit     string `json:"commit,omitempty"`
	CommitTime string `json:"commit_time,omitempty"`
	// Modified: the work tree had uncommitted changes.
	Modified  bool   `json:"modified,omitempty"`
	GoVersion string `json:"go_version"`
	Platform  string `json:"platform"`
}

// readVersion reads the binary's build information.
func readVersion() versionDoc {
	d := versionDoc{Version: unknownVersion, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return d
	}
	if v := bi.Main.Version; v != "" {
		d.Version = v
	}
	if bi.GoVersion != "" {
		d.GoVersion = bi.GoVersion
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			d.Commit = s.Value
		case "vcs.time":
			d.CommitTime = s.Value
		case "vcs.modified":
			d.Modified = s.Value == "true"
		}
	}
	return d
}

// versionText is the version for people, as both spellings print it.
func versionText(d versionDoc) string {
	var b strings.Builder
	fmt.Fprintf(&b, "heddle %s\n", d.Version)
	commit := "unknown"
	if d.Commit != "" {
		commit = d.Commit
		if d.CommitTime != "" {
			commit += " (" + d.CommitTime + ")"
		}
		if d.Modified {
			commit += ", modified"
		}
	}
	fmt.Fprintf(&b, "  commit  %s\n", commit)
	fmt.Fprintf(&b, "  go      %s %s\n", d.GoVersion, d.Platform)
	return b.String()
}

func newVersionCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "version",
		Short: "print heddle's version, commit and Go version",
		Long: "Prints the module version, the version control revision and time, and the Go\n" +
			"version the binary was built with; " + unknownVersion + " when the build recorded no version.",
		Args: noArgs,
	}
	format := addOutputFlags(cmd.Flags())
	completeOutput(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		d := readVersion()
		if *format == formatTable {
			_, err := fmt.Fprint(cmd.OutOrStdout(), versionText(d))
			return err
		}
		return printDoc(cmd.OutOrStdout(), *format, d)
	}
	return cmd
}
