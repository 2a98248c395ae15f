package main

// This file is "heddle cert", which makes a development CA and the node
// and client certificates it signs, and "heddle token", which makes a
// bearer token and adds its line to a token file.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/heddlewf/heddle/engine/httpapi"
	"github.com/heddlewf/heddle/internal/pki"
	"github.com/spf13/cobra"
)

func newCertCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cert",
		Short: "make a development CA, node certificates and client certificates",
		Long: "Makes the certificates of a heddle cluster with its own development CA (ECDSA\n" +
			"P-256). \"ca\" writes DIR/ca.crt and DIR/ca.key; \"node ID\" writes DIR/ID.crt and\n" +
			"DIR/ID.key, for both the node's HTTPS API and mutual TLS between nodes; \"client\n" +
			"NAME\" writes DIR/NAME.crt and DIR/NAME.key, a certificate that authenticates a\n" +
			"caller with a role. Keys are written readable by their owner only, and no file is\n" +
			"ever overwritten. Keep ca.key off the nodes.",
		Args: unknownCommandArgs,
		RunE: missingCommand,
	}
	var dir string
	cmd.PersistentFlags().StringVar(&dir, "dir", ".", "`directory` of the CA and of the files written")

	ca := &cobra.Command{
		Use:   "ca",
		Short: "make a new CA: DIR/ca.crt and DIR/ca.key",
		Long:  "Makes a new development CA, valid for five years: DIR/ca.crt (give it to every node and client) and DIR/ca.key.",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := pki.NewCA("heddle development CA")
			if err != nil {
				return err
			}
			key, err := c.KeyPEM()
			if err != nil {
				return err
			}
			return writeIssued(cmd.OutOrStdout(), dir, "ca", pki.Issued{CertPEM: c.CertPEM(), KeyPEM: key})
		},
	}

	var hosts string
	node := &cobra.Command{
		Use:   "node ID [--hosts HOSTS]",
		Short: "make node ID's certificate: DIR/ID.crt and DIR/ID.key",
		Long: "Makes the certificate of node ID, signed by DIR/ca.crt and DIR/ca.key and valid for a\n" +
			"year: \"heddle server --id ID --tls-cert DIR/ID.crt --tls-key DIR/ID.key --tls-ca DIR/ca.crt\".\n" +
			"HOSTS are the names and IP addresses clients reach the node's API by.",
		Args: exactArgs("ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := pki.LoadCA(filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key"))
			if err != nil {
				return err
			}
			is, err := c.NodeCert(args[0], splitAddrs(hosts))
			if err != nil {
				return usagef("%v", err)
			}
			return writeIssued(cmd.OutOrStdout(), dir, args[0], is)
		},
	}
	node.Flags().StringVar(&hosts, "hosts", "localhost,127.0.0.1,::1", "comma-separated DNS `names` and IP addresses the node is reached by")

	var role string
	client := &cobra.Command{
		Use:   "client NAME --role ROLE",
		Short: "make a client certificate: DIR/NAME.crt and DIR/NAME.key",
		Long: "Makes a client certificate for NAME with ROLE (reader, client, worker or admin), signed\n" +
			"by DIR/ca.crt and DIR/ca.key and valid for a year. A server started with --tls-ca\n" +
			"takes it, presented without a bearer token, as NAME with ROLE.",
		Args: exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := httpapi.ParseRole(role); err != nil {
				return usagef("--role: %v", err)
			}
			c, err := pki.LoadCA(filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key"))
			if err != nil {
				return err
			}
			is, err := c.ClientCert(args[0], role)
			if err != nil {
				return usagef("%v", err)
			}
			return writeIssued(cmd.OutOrStdout(), dir, args[0], is)
		},
	}
	client.Flags().StringVar(&role, "role", "", "the caller's `role`: reader, client, worker or admin (required)")
	cmd.AddCommand(ca, node, client)
	return cmd
}

// writeIssued writes DIR/name.crt and DIR/name.key (owner-only), refusing
// to overwrite either, and says what it wrote.
func writeIssued(w io.Writer, dir, name string, is pki.Issued) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	crt, key := filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	for _, p := range []string{crt, key} {
		if _, err := os.Stat(p); err == nil {
			return fmt.Errorf("%s exists; remove it first to make a new one", p)
		}
	}
	if err := writeNew(key, is.KeyPEM, 0o600); err != nil {
		return err
	}
	if err := writeNew(crt, is.CertPEM, 0o644); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "wrote %s and %s\n", crt, key)
	return err
}

// writeNew creates path with data; it fails if path exists.
func writeNew(path string, data []byte, perm os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	return errors.Join(err, f.Close())
}

func newTokenCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token --file FILE --name NAME --role ROLE",
		Short: "make a bearer token and add it to a token file",
		Long: "Makes a random bearer token for NAME with ROLE (reader, client, worker or admin),\n" +
			"appends its line \"<role> <name> sha256:<digest>\" to FILE (created readable by its\n" +
			"owner only) and prints the token. The file holds only the token's SHA-256 digest:\n" +
			"the token is printed once, here. Servers read FILE with --token-file at start.",
		Args: noArgs,
	}
	var file, name, role string
	fs := cmd.Flags()
	fs.StringVar(&file, "file", "", "the token `file` to add the line to (required)")
	fs.StringVar(&name, "name", "", "the caller's `name`, recorded with the commands the token issues (required)")
	fs.StringVar(&role, "role", "", "the caller's `role`: reader, client, worker or admin (required)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if file == "" || name == "" {
			return usagef("--file and --name are required")
		}
		r, err := httpapi.ParseRole(role)
		if err != nil {
			return usagef("--role: %v", err)
		}
		token := httpapi.NewToken()
		// The new line must leave a file the server can read: a name
		// already there, or a bad name, is refused before anything is
		// written.
		check := &httpapi.Tokens{}
		old, err := os.ReadFile(file)
		switch {
		case err == nil && grantsAny(old):
			if check, err = httpapi.ParseTokens(bytes.NewReader(old)); err != nil {
				return fmt.Errorf("%s: %w", file, err)
			}
		case err != nil && !errors.Is(err, os.ErrNotExist):
			return err
		}
		if err := check.Add(name, r, token); err != nil {
			return usagef("%v", err)
		}
		f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(f, httpapi.TokenLine(r, name, token))
		if err := errors.Join(err, f.Close()); err != nil {
			return err
		}
		_, err = fmt.Fprintln(cmd.OutOrStdout(), token)
		return err
	}
	return cmd
}

// grantsAny reports whether a token file has a line that is neither blank
// nor a comment.
func grantsAny(b []byte) bool {
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			return true
		}
	}
	return false
}
