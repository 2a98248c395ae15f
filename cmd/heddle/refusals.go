package main

import (
	"errors"
	"net"
	"sync"
	"syscall"

	"github.com/heddlewf/heddle/engine/httpapi"
)

// nodeRefusals decides when a call that reached no node may end at once
// instead of at its retry timeout: when every address the command was
// given has refused the connection or names no host, and no node has
// answered anything. A node that answered is up, and may have named a
// leader that is down while another is elected: the call goes on. The
// addresses are the client's base URLs (httpapi.Client.Addrs), which are
// what the client's OnRetry is given; a leader a node named is not one of
// them and counts for nothing.
type nodeRefusals struct {
	mu       sync.Mutex
	named    map[string]bool // set once the client exists (setNamed)
	failed   map[string]bool // named addresses that refused or named no host
	noHost   bool            // one of them names no host
	answered bool
}

// setNamed records the client's base URLs; call it before the client's
// first call.
func (r *nodeRefusals) setNamed(bases []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.named, r.failed = map[string]bool{}, map[string]bool{}
	for _, b := range bases {
		r.named[b] = true
	}
}

// note records a try at addr that failed with err. It counts a refused
// connection only when countRefused (with --retry-timeout given, nodes
// that refuse may be starting). It returns whether every named address has
// now failed to connect with no node answering, and whether one of them
// names no host.
func (r *nodeRefusals) note(addr string, err error, countRefused bool) (allFailed, noHost bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var dns *net.DNSError
	switch {
	case errors.As(err, new(*httpapi.RemoteError)):
		r.answered = true
	case !r.named[addr]:
	case errors.As(err, &dns) && dns.IsNotFound:
		r.failed[addr], r.noHost = true, true
	case countRefused && errors.Is(err, syscall.ECONNREFUSED):
		r.failed[addr] = true
	}
	return !r.answered && len(r.named) > 0 && len(r.failed) == len(r.named), r.noHost
}
