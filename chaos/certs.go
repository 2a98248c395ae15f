package chaos

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"

	"github.com/heddlewf/heddle/internal/pki"
)

// runCerts are the certificates of one run's cluster: a CA made for the
// run and each node's certificate, as files the server processes read,
// and the client configuration that trusts the CA.
type runCerts struct {
	dir    string
	ca     string      // the CA certificate's file
	client *tls.Config // trusts the CA, presents nothing
}

func (c *runCerts) cert(id string) string { return filepath.Join(c.dir, id+".crt") }
func (c *runCerts) key(id string) string  { return filepath.Join(c.dir, id+".key") }

// makeCerts makes a CA and a certificate for each node id in dir.
func makeCerts(dir string, ids ...string) (*runCerts, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	ca, err := pki.NewCA("heddle chaos CA")
	if err != nil {
		return nil, err
	}
	c := &runCerts{dir: dir, ca: filepath.Join(dir, "ca.crt")}
	if err := os.WriteFile(c.ca, ca.CertPEM(), 0o644); err != nil {
		return nil, err
	}
	for _, id := range ids {
		is, err := ca.NodeCert(id, []string{"127.0.0.1"})
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(c.cert(id), is.CertPEM, 0o644); err != nil {
			return nil, err
		}
		if err := os.WriteFile(c.key(id), is.KeyPEM, 0o600); err != nil {
			return nil, err
		}
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	c.client = pki.ClientTLS(roots, nil)
	return c, nil
}

// ClientTLS returns the client configuration that trusts the CA in file
// caFile, for a worker process of the workload.
func ClientTLS(caFile string) (*tls.Config, error) {
	roots, err := pki.LoadPool(caFile)
	if err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	return pki.ClientTLS(roots, nil), nil
}
