package main

// This file is -o/--output, the format of a command's results: a table (or
// block) for people, one JSON document, or JSON lines, one object per row
// or event, for tools that stream. --json, which came first, stays as
// another name for -o json. The JSON itself is each command's documents
// (snake_case keys, statuses by name, RFC 3339 UTC times).

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// outputFormat is a value of -o.
type outputFormat string

const (
	formatTable outputFormat = "table"
	formatJSON  outputFormat = "json"
	formatJSONL outputFormat = "jsonl"
)

var outputFormats = []outputFormat{formatTable, formatJSON, formatJSONL}

// formatValue is -o as a pflag.Value: a bad format is refused while the
// flags are parsed, like any other bad flag value.
type formatValue struct{ f *outputFormat }

func (v formatValue) String() string { return string(*v.f) }
func (v formatValue) Type() string   { return "format" }

func (v formatValue) Set(s string) error {
	for _, f := range outputFormats {
		if strings.EqualFold(s, string(f)) {
			*v.f = f
			return nil
		}
	}
	return fmt.Errorf("want table, json or jsonl")
}

// jsonAlias is --json: a boolean flag that sets -o json.
type jsonAlias struct{ f *outputFormat }

func (v jsonAlias) String() string   { return strconv.FormatBool(*v.f == formatJSON) }
func (v jsonAlias) Type() string     { return "bool" }
func (v jsonAlias) IsBoolFlag() bool { return true }

func (v jsonAlias) Set(s string) error {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	switch {
	case b:
		*v.f = formatJSON
	case *v.f == formatJSON:
		*v.f = formatTable
	}
	return nil
}

// addOutputFlags defines -o/--output and --json on fs; the format is
// read from the returned pointer once the flags are parsed.
func addOutputFlags(fs *pflag.FlagSet) *outputFormat {
	f := new(outputFormat)
	*f = formatTable
	fs.VarP(formatValue{f}, "output", "o", "output `format`: table (for people), json (one document) or jsonl (one JSON object per line)")
	j := fs.VarPF(jsonAlias{f}, "json", "", "same as -o json")
	j.NoOptDefVal = "true"
	// The string above is the flag's default as help shows it: the
	// zero "false" of a boolean, which help leaves out.
	j.DefValue = "false"
	return f
}

// completeOutput offers the formats when a shell completes -o.
func completeOutput(cmd *cobra.Command) {
	_ = cmd.RegisterFlagCompletionFunc("output", func(_ *cobra.Command, _ []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return completeWords([]string{"table", "json", "jsonl"}, prefix), cobra.ShellCompDirectiveNoFileComp
	})
}

// completeWords returns the words that start with prefix, ignoring case
// (the flags that take them ignore it too).
func completeWords(words []string, prefix string) []cobra.Completion {
	var out []cobra.Completion
	for _, w := range words {
		if strings.HasPrefix(strings.ToLower(w), strings.ToLower(prefix)) {
			out = append(out, w)
		}
	}
	return out
}

// printDoc prints v, a command's one result, as format says: json
// indented, jsonl on one line. It is not called for the table format.
func printDoc(w io.Writer, format outputFormat, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if format != formatJSONL {
		enc.SetIndent("", "  ")
	}
	return enc.Encode(v)
}

// printLines prints rows as JSON lines, one object per line.
func printLines[T any](w io.Writer, rows []T) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, r := range rows {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return nil
}
