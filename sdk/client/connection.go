package client

import "crypto/tls"

// ConnectionOptions configure how Dial reaches a node over HTTP: the
// fields of Temporal's that mean something without gRPC.
type ConnectionOptions struct {
	// TLS, if set, secures the connection: RootCAs is the CA that signed
	// the node's certificate (heddle's pki), and Certificates, if any, the
	// client certificate a node with client CAs authenticates. With TLS a
	// HostPort without a scheme is dialled as https://. Nil: plain HTTP for
	// host:port, the system's roots for an https:// URL.
	TLS *tls.Config
	// DisableHealthCheck skips Dial's check that the node answers, as
	// Temporal's does; the first call then reports an unreachable node.
	DisableHealthCheck bool
}
