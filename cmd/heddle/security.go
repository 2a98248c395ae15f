package main

// This file holds the security flags of "heddle server" and "heddle dev"
// (TLS, the Raft port's mutual TLS, tokens, and the refusal to serve a
// non-loopback address in the clear), and the --tls-ca of the commands
// that call the API.

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"

	"github.com/heddlewf/heddle/engine/httpapi"
	"github.com/heddlewf/heddle/internal/pki"
	"github.com/heddlewf/heddle/internal/ui"
	"github.com/spf13/pflag"
)

// tlsCAUsage is the help of every client command's --tls-ca.
const tlsCAUsage = "PEM `file` of the CA to trust for the API's TLS; addresses without a scheme then mean https (default $HEDDLE_TLS_CA)"

// secFlags are the security flags of a server.
type secFlags struct {
	tlsCert, tlsKey, tlsCA string
	tokenFile, token       string
	insecure               bool
	allowHosts             []string
}

// addSecFlags adds the security flags; node adds what only a cluster node
// has (the Raft port is secured by --tls-ca).
func addSecFlags(fs *pflag.FlagSet, f *secFlags, node bool) {
	fs.StringVar(&f.tlsCert, "tls-cert", "", "PEM `file` of this server's certificate: the API is served over TLS")
	fs.StringVar(&f.tlsKey, "tls-key", "", "PEM `file` of the key of --tls-cert")
	if node {
		fs.StringVar(&f.tlsCA, "tls-ca", "", "PEM `file` of the cluster's CA: Raft runs over mutual TLS, --tls-cert must be this node's certificate (heddle cert node), and joins must show the joining node's")
	} else {
		fs.StringVar(&f.tlsCA, "tls-ca", "", "PEM `file` of a CA whose client certificates (heddle cert client) authenticate callers")
	}
	fs.StringVar(&f.tokenFile, "token-file", "", "`file` of the tokens the API accepts, one \"<role> <name> sha256:<digest>\" per line (heddle token makes them)")
	fs.StringVar(&f.token, "token", "", tokenUsage)
	fs.BoolVar(&f.insecure, "insecure", false, "serve a non-loopback address without TLS or tokens (anyone who reaches it can do anything)")
	fs.StringSliceVar(&f.allowHosts, "allow-host", nil, "another host `name` the API and UI answer to when they listen on loopback, beside localhost, "+
		"loopback addresses and --http-addr's host (a name in /etc/hosts, a proxy's); repeat or comma-separate")
}

// security is what a server's flags load.
type security struct {
	cert     *tls.Certificate // --tls-cert and --tls-key
	roots    *x509.CertPool   // --tls-ca
	tokens   *httpapi.Tokens  // --token-file
	token    string           // --token or $HEDDLE_TOKEN
	insecure bool
	// allowHosts are the --allow-host names.
	allowHosts []string
}

// load reads the files the flags name. nodeID, when not empty, is the id
// of the node whose certificate --tls-cert must be once --tls-ca is given.
func (f *secFlags) load(nodeID string) (*security, error) {
	s := &security{token: envDefault(f.token, "HEDDLE_TOKEN", ""), insecure: f.insecure, allowHosts: f.allowHosts}
	switch {
	case (f.tlsCert == "") != (f.tlsKey == ""):
		return nil, usagef("--tls-cert and --tls-key go together")
	case f.tlsCA != "" && f.tlsCert == "":
		return nil, usagef("--tls-ca needs --tls-cert and --tls-key")
	}
	if f.tlsCert != "" {
		c, err := pki.LoadKeyPair(f.tlsCert, f.tlsKey)
		if err != nil {
			return nil, err
		}
		s.cert = &c
	}
	if f.tlsCA != "" {
		var err error
		if s.roots, err = pki.LoadPool(f.tlsCA); err != nil {
			return nil, err
		}
		if nodeID != "" {
			if err := pki.CheckNode(*s.cert, s.roots, nodeID); err != nil {
				return nil, fmt.Errorf("--tls-cert %s: %w (make one with: heddle cert node %s)", f.tlsCert, err, nodeID)
			}
		}
	}
	if f.tokenFile != "" {
		var err error
		if s.tokens, err = httpapi.LoadTokens(f.tokenFile); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// auth reports whether the API requires credentials.
func (s *security) auth() bool { return s.token != "" || s.tokens != nil }

// serverTLS is the API's TLS configuration, nil for plain HTTP.
func (s *security) serverTLS() *tls.Config {
	if s.cert == nil {
		return nil
	}
	return pki.ServerTLS(*s.cert, s.roots)
}

// peerTLS is the Raft transport's, nil for plain TCP.
func (s *security) peerTLS() *tls.Config {
	if s.cert == nil || s.roots == nil {
		return nil
	}
	return pki.PeerTLS(*s.cert, s.roots)
}

// clientTLS is the configuration this node calls other nodes' APIs with:
// it trusts --tls-ca (else the system's roots) and, as a join must, shows
// this node's certificate. Nil when the API is plain HTTP.
func (s *security) clientTLS() *tls.Config {
	if s.cert == nil {
		return nil
	}
	return pki.ClientTLS(s.roots, s.cert)
}

// probe is how the UI's cluster page asks the other members for their
// status: as this node, never with the person's token. Over TLS with
// --tls-ca, by this node's certificate (the members take it for
// node:<id>), checking theirs against the CA; over TLS without it, with
// this node's --token if it has one, checking the members' certificates
// against the system's roots; over plain HTTP (loopback, or --insecure),
// with this node's --token if it has one.
func (s *security) probe() (client *http.Client, scheme, token string) {
	if s.cert == nil {
		return nil, "http", s.token
	}
	t := httpapi.NewTransport(nil)
	if s.roots != nil {
		t.TLSClientConfig = pki.ClientTLS(s.roots, s.cert)
	} else {
		t.TLSClientConfig, token = pki.ClientTLS(nil, nil), s.token
	}
	return &http.Client{Transport: t, Timeout: ui.DefaultProbeTimeout}, "https", token
}

// apply fills in cfg's tokens, client CAs and forwarding.
func (s *security) apply(cfg httpapi.ServerConfig) httpapi.ServerConfig {
	cfg.Tokens, cfg.AuthToken, cfg.ClientCAs = s.tokens, s.token, s.roots
	if s.cert != nil {
		// Forwarded requests carry the caller's token, never this node's
		// certificate: the leader must not take them for this node's.
		t := httpapi.NewTransport(nil)
		t.TLSClientConfig = pki.ClientTLS(s.roots, nil)
		cfg.ForwardClient, cfg.ForwardScheme = &http.Client{Transport: t}, "https"
	}
	return cfg
}

// hostGuard is the Host check of an API listening on ln, which httpAddr
// asked for: on a loopback address, the server answers to this machine's
// own names only (localhost, loopback addresses, httpAddr's host and the
// --allow-host names), so that a web page cannot reach it under a name of
// its own that resolves to 127.0.0.1 (DNS rebinding). Nil on any other
// address, whose names the server cannot know; such a server needs TLS
// and tokens (checkExposure), which a page cannot borrow.
func (s *security) hostGuard(ln net.Listener, httpAddr string) *httpapi.HostGuard {
	a, ok := ln.Addr().(*net.TCPAddr)
	if !ok || !a.IP.IsLoopback() {
		return nil
	}
	names := append([]string(nil), s.allowHosts...)
	if host, _, err := net.SplitHostPort(httpAddr); err == nil {
		names = append(names, host)
	}
	return httpapi.NewHostGuard(names...)
}

// checkExposure refuses to serve an address others can reach without TLS
// and credentials, or a Raft port others can reach without mutual TLS,
// unless the operator passed --insecure. raftAddr is "" for a server
// without Raft.
func (s *security) checkExposure(httpAddr, raftAddr string) error {
	if s.insecure {
		return nil
	}
	if !loopback(httpAddr) && (s.cert == nil || !s.auth()) {
		return usagef("--http-addr %s is not a loopback address: serve it with --tls-cert and --tls-key and require tokens "+
			"(--token-file or --token), or pass --insecure to let anyone who reaches it do anything", httpAddr)
	}
	if raftAddr != "" && !loopback(raftAddr) && s.peerTLS() == nil {
		return usagef("--raft-addr %s is not a loopback address: secure it with --tls-cert, --tls-key and --tls-ca "+
			"(mutual TLS between nodes), or pass --insecure to let anyone who reaches it vote in the cluster", raftAddr)
	}
	return nil
}

// loopback reports whether addr (host:port) is reachable from this
// machine alone: a loopback IP or "localhost". An empty host, which
// listens on every interface, is not.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// clientTLSFor returns the TLS configuration of a client command's
// --tls-ca (else $HEDDLE_TLS_CA), nil when neither names a file.
func clientTLSFor(caFile string) (*tls.Config, error) {
	caFile = envDefault(caFile, "HEDDLE_TLS_CA", "")
	if caFile == "" {
		return nil, nil
	}
	roots, err := pki.LoadPool(caFile)
	if err != nil {
		return nil, usagef("--tls-ca: %v", err)
	}
	return pki.ClientTLS(roots, nil), nil
}
