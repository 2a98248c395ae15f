package httpapi

// This file holds the defences against web pages: a page of another site,
// open in the browser of someone who can reach a server, must not drive
// it. Three things stop it: a body must say it is JSON or msgpack (see
// requestFormat), a browser's write from another origin is refused
// (crossOrigin), and a server that listens on loopback answers only to its
// own names (HostGuard), which is what DNS rebinding needs.

import (
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
)

// crossOrigin is the check of serve: a POST, PUT, PATCH or DELETE a
// browser sends from a page of another origin (its Sec-Fetch-Site, or
// else its Origin, says so) is refused. Programs send neither header and
// are let through, and so are a browser's reads, which change nothing
// (and whose answers the browser keeps from the other site's page).
var crossOrigin = http.NewCrossOriginProtection()

// checkOrigin refuses a browser's write from a page of another origin.
func checkOrigin(r *http.Request) error {
	if crossOrigin.Check(r) == nil {
		return nil
	}
	from := r.Header.Get("Origin")
	if from == "" {
		from = "Sec-Fetch-Site: " + r.Header.Get("Sec-Fetch-Site")
	}
	return fmt.Errorf("%w: %s %s came from a web page of another site (%s); a browser's page may write only to the site it came from",
		ErrCrossOrigin, r.Method, r.URL.Path, from)
}

// HostGuard answers only the requests whose Host header names the server
// it guards, and refuses the others with 403 host_not_allowed before they
// reach the handler. A server listening on a loopback address needs it:
// a web page can make its own host name resolve to 127.0.0.1 (DNS
// rebinding) and so reach the server as its own site, with the page's
// name in the Host header, past any check of origins. The development
// servers people trust do the same (they allow-list host names).
//
// It lets through the host names that only this machine can mean:
// "localhost" and the names under ".localhost" (which browsers resolve
// to loopback themselves), loopback IP addresses, and the names given to
// NewHostGuard (the listen address's host, others an operator names). The
// port is not checked: a forwarded port reaches the same server. The zero
// value lets through only those that only this machine can mean.
type HostGuard struct {
	names []string
}

// NewHostGuard returns a guard that lets through names (host names or
// IP addresses, compared without case and without a trailing dot) beside
// the loopback names every guard lets through.
func NewHostGuard(names ...string) *HostGuard {
	g := &HostGuard{}
	for _, n := range names {
		if n = normalHost(n); n != "" && !slices.Contains(g.names, n) {
			g.names = append(g.names, n)
		}
	}
	return g
}

// Allows reports whether host, a Host header (with or without its port),
// names the guarded server.
func (g *HostGuard) Allows(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = normalHost(host)
	switch {
	case host == "":
		return false
	case host == "localhost" || strings.HasSuffix(host, ".localhost"):
		return true
	case slices.Contains(g.names, host):
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Handler wraps h with the guard: a request whose Host the guard does not
// allow is answered 403 with the API's error body (host_not_allowed).
func (g *HostGuard) Handler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if g.Allows(r.Host) {
			h.ServeHTTP(w, r)
			return
		}
		c := &call{w: w, r: r, out: responseFormat(r)}
		status, body := errorFor(fmt.Errorf("%w: this server listens on loopback and answers to its own names only, not to Host %q "+
			"(a web page can make any name lead here: DNS rebinding); use localhost or 127.0.0.1, or allow the name (heddle: --allow-host %s)",
			ErrHostNotAllowed, r.Host, hostOnly(r.Host)))
		c.reply(status, body)
	})
}

// hostOnly strips a Host header's port, if it has one.
func hostOnly(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		return h
	}
	return host
}

// normalHost lower-cases a host name and drops its trailing dot and the
// brackets of an IPv6 address.
func normalHost(h string) string {
	h = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(h)), ".")
	return strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
}
