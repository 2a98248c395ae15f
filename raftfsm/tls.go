package raftfsm

import (
	"crypto/tls"
	"crypto/x509"

	"github.com/heddlewf/heddle/internal/pki"
)

// PeerTLS returns a configuration for Config.TLS: it presents cert, this
// node's certificate, and at either end of a Raft connection accepts only
// a peer that presents a node certificate (one naming heddle://node/<id>)
// signed by roots, the cluster's CA, over TLS 1.3. A peer is checked
// against the CA and for its node URI, never by the host name it was
// dialled by, since a Raft address is not an identity. "heddle cert node"
// makes such certificates (docs/security.md).
//
// It is here, beside the field it fills, so that a program that runs a
// node itself needs no package of heddle's certificates: those are
// internal, and every other TLS configuration a program needs (the HTTPS
// API's, a client's) is plain crypto/tls.
func PeerTLS(cert tls.Certificate, roots *x509.CertPool) *tls.Config {
	return pki.PeerTLS(cert, roots)
}
