// Package pki makes and checks the certificates of a heddle cluster: a development CA, node and client certificates, and the TLS configurations that require them.
//
// A node certificate names its node in a URI SAN, heddle://node/<id>, and
// is good for both ends of a TLS connection (server and client
// authentication): a node presents it on its Raft port, on its HTTPS API,
// and when it joins a cluster, where the node id it names must be the id it
// joins as. A client certificate names a caller and the role it has,
// heddle://client/<role>/<name>, and authenticates it to the HTTP API as a
// bearer token would. Both are verified against the cluster's CA, never by
// host name alone: a Raft address may change, and the CA's signature on the
// URI is what says who the peer is. Host names and IP addresses in a node
// certificate are for the HTTPS clients that do check them.
package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"os"
	"strings"
	"time"
)

// Sentinel errors, matched with errors.Is.
var (
	// ErrNotNode: a certificate is not a node certificate of the cluster's
	// CA (unsigned by it, expired, or without a heddle://node/ URI).
	ErrNotNode = errors.New("pki: not a node certificate of this cluster")
	// ErrBadCert: a certificate or key file does not hold what it should.
	ErrBadCert = errors.New("pki: bad certificate or key")
)

// URI prefixes of the names certificates carry.
const (
	nodeURIPrefix   = "heddle://node/"
	clientURIPrefix = "heddle://client/"
)

// Validity periods of what New* make: development certificates, renewed
// by making them again.
const (
	CAValidity   = 5 * 365 * 24 * time.Hour
	CertValidity = 365 * 24 * time.Hour
)

// CA is a certificate authority that can sign node and client certificates.
type CA struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
}

// NewCA makes a self-signed CA named name, valid for CAValidity.
func NewCA(name string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: name, Organization: []string{"heddle"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(CAValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, Key: key}, nil
}

// Issued is a certificate and its key, in PEM.
type Issued struct {
	CertPEM, KeyPEM []byte
}

// NodeCert signs a certificate for node id, valid for CertValidity, for
// both server and client authentication; hosts are the DNS names and IP
// addresses HTTPS clients reach the node by.
func (ca *CA) NodeCert(id string, hosts []string) (Issued, error) {
	if err := checkName("node id", id); err != nil {
		return Issued{}, err
	}
	u, err := url.Parse(nodeURIPrefix + url.PathEscape(id))
	if err != nil {
		return Issued{}, err
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: id, Organization: []string{"heddle"}, OrganizationalUnit: []string{"node"}},
		URIs:        []*url.URL{u},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else if h != "" {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	return ca.sign(tmpl)
}

// ClientCert signs a certificate for a caller name with role (one of
// reader, client, worker, admin; the HTTP API checks it), valid for
// CertValidity, for client authentication only.
func (ca *CA) ClientCert(name, role string) (Issued, error) {
	if err := checkName("client name", name); err != nil {
		return Issued{}, err
	}
	if err := checkName("role", role); err != nil {
		return Issued{}, err
	}
	u, err := url.Parse(clientURIPrefix + url.PathEscape(role) + "/" + url.PathEscape(name))
	if err != nil {
		return Issued{}, err
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: name, Organization: []string{"heddle"}, OrganizationalUnit: []string{"client"}},
		URIs:        []*url.URL{u},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	return ca.sign(tmpl)
}

func (ca *CA) sign(tmpl *x509.Certificate) (Issued, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Issued{}, err
	}
	now := time.Now()
	tmpl.SerialNumber = serial()
	tmpl.NotBefore, tmpl.NotAfter = now.Add(-time.Hour), now.Add(CertValidity)
	if tmpl.NotAfter.After(ca.Cert.NotAfter) {
		tmpl.NotAfter = ca.Cert.NotAfter
	}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		return Issued{}, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return Issued{}, err
	}
	return Issued{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

// CertPEM returns the CA's certificate in PEM: the file every node and
// client trusts.
func (ca *CA) CertPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Cert.Raw})
}

// KeyPEM returns the CA's private key in PEM: keep it off the nodes.
func (ca *CA) KeyPEM() ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(ca.Key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// LoadCA reads a CA's certificate and key, as "heddle cert ca" writes them.
func LoadCA(certFile, keyFile string) (*CA, error) {
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("%w: CA %s and %s: %v", ErrBadCert, certFile, keyFile, err)
	}
	key, ok := pair.PrivateKey.(*ecdsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("%w: CA key %s is not an ECDSA key", ErrBadCert, keyFile)
	}
	if !pair.Leaf.IsCA {
		return nil, fmt.Errorf("%w: %s is not a CA certificate", ErrBadCert, certFile)
	}
	return &CA{Cert: pair.Leaf, Key: key}, nil
}

// LoadPool reads the PEM certificates of path (a CA file) into a pool.
func LoadPool(path string) (*x509.CertPool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: CA file: %v", ErrBadCert, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("%w: CA file %s holds no PEM certificate", ErrBadCert, path)
	}
	return pool, nil
}

// LoadKeyPair reads a certificate and its key.
func LoadKeyPair(certFile, keyFile string) (tls.Certificate, error) {
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("%w: %s and %s: %v", ErrBadCert, certFile, keyFile, err)
	}
	return pair, nil
}

// NodeID returns the node id a certificate names, if it names one. It
// does not verify the certificate: see VerifyNode.
func NodeID(cert *x509.Certificate) (string, bool) {
	for _, u := range cert.URIs {
		if s, ok := strings.CutPrefix(u.String(), nodeURIPrefix); ok {
			id, err := url.PathUnescape(s)
			return id, err == nil && id != ""
		}
	}
	return "", false
}

// ClientName returns the caller name and role a client certificate names,
// if it names them. It does not verify the certificate: see Verify.
func ClientName(cert *x509.Certificate) (name, role string, ok bool) {
	for _, u := range cert.URIs {
		if s, found := strings.CutPrefix(u.String(), clientURIPrefix); found {
			r, n, cut := strings.Cut(s, "/")
			if !cut {
				return "", "", false
			}
			var err1, err2 error
			role, err1 = url.PathUnescape(r)
			name, err2 = url.PathUnescape(n)
			return name, role, err1 == nil && err2 == nil && name != "" && role != ""
		}
	}
	return "", "", false
}

// Verify checks that chain (the leaf first, as TLS hands it over) is
// signed by roots and valid now.
func Verify(chain []*x509.Certificate, roots *x509.CertPool) error {
	if len(chain) == 0 {
		return fmt.Errorf("%w: no certificate was presented", ErrNotNode)
	}
	inter := x509.NewCertPool()
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	_, err := chain[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
	return err
}

// VerifyNode checks that chain is a node certificate signed by roots, and
// returns the node id it names.
func VerifyNode(chain []*x509.Certificate, roots *x509.CertPool) (string, error) {
	if err := Verify(chain, roots); err != nil {
		return "", fmt.Errorf("%w: %v", ErrNotNode, err)
	}
	id, ok := NodeID(chain[0])
	if !ok {
		return "", fmt.Errorf("%w: certificate %q names no node (%s<id>)", ErrNotNode, chain[0].Subject.CommonName, nodeURIPrefix)
	}
	return id, nil
}

// PeerTLS returns the TLS configuration of a Raft transport: it presents
// cert and, at either end of a connection, accepts only a peer that
// presents a node certificate signed by roots (TLS 1.3). A peer without
// one is refused in the handshake, before a byte of Raft is read.
func PeerTLS(cert tls.Certificate, roots *x509.CertPool) *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.RequireAnyClientCert,
		// The peer is checked below, against the CA and for its node URI,
		// not against the host name it was dialled by: Raft addresses are
		// not what a node's identity is.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			_, err := VerifyNode(cs.PeerCertificates, roots)
			return err
		},
	}
}

// ServerTLS returns the TLS configuration of a node's HTTPS API: it
// presents cert and asks callers for a certificate, which it verifies
// against clientCAs when one is shown (tls.VerifyClientCertIfGiven): a
// caller with a bearer token needs none, a joining node shows its own.
// clientCAs nil: no certificate is asked for.
func ServerTLS(cert tls.Certificate, clientCAs *x509.CertPool) *tls.Config {
	c := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
	if clientCAs != nil {
		c.ClientAuth, c.ClientCAs = tls.VerifyClientCertIfGiven, clientCAs
	}
	return c
}

// ClientTLS returns the TLS configuration of an HTTPS client that trusts
// roots (nil: the system's) and, when cert is not nil, presents it.
func ClientTLS(roots *x509.CertPool, cert *tls.Certificate) *tls.Config {
	c := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots}
	if cert != nil {
		c.Certificates = []tls.Certificate{*cert}
	}
	return c
}

// CheckNode reports whether cert, a node's own certificate, is a node
// certificate of roots naming id: a node started with another node's
// certificate would be refused by its peers and could not join.
func CheckNode(cert tls.Certificate, roots *x509.CertPool, id string) error {
	chain := make([]*x509.Certificate, 0, len(cert.Certificate))
	for _, der := range cert.Certificate {
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrBadCert, err)
		}
		chain = append(chain, c)
	}
	got, err := VerifyNode(chain, roots)
	if err != nil {
		return err
	}
	if got != id {
		return fmt.Errorf("%w: the certificate names node %q, not %q", ErrNotNode, got, id)
	}
	return nil
}

func checkName(what, s string) error {
	if s == "" || len(s) > 64 || strings.ContainsAny(s, "/ \t\n") {
		return fmt.Errorf("%w: %s %q must be 1 to 64 characters without '/' or spaces", ErrBadCert, what, s)
	}
	return nil
}

// serial returns a random 128-bit serial number.
func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		panic(err) // crypto/rand does not fail
	}
	return n
}
