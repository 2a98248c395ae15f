package main

// This file mounts the web UI (package ui) beside the HTTP API: every
// server and dev node serves it at /ui/ on the API's address.

import (
	"net"
	"net/http"

	"github.com/heddlewf/heddle/internal/ui"
)

// withUI returns a handler that serves the UI under ui.Path and everything
// else with api. The UI calls api in-process with the signed-in token, and
// asks the other members of a cluster for their status as this node
// (sec.probe).
func withUI(api http.Handler, sec *security) (http.Handler, error) {
	cfg := ui.Config{API: api}
	cfg.ProbeClient, cfg.ProbeScheme, cfg.ProbeToken = sec.probe()
	h, err := ui.New(cfg)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle(ui.Path+"/", h)
	mux.Handle(ui.Path, h)
	mux.Handle("/", api)
	return mux, nil
}

// uiURL is the UI's address for a node listening on addr, for the line a
// server prints when it starts: an unspecified host is shown as loopback,
// and the scheme is https when the API is served over TLS.
func uiURL(addr string, overTLS bool) string {
	scheme := "http://"
	if overTLS {
		scheme = "https://"
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return scheme + addr + ui.Path + "/"
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return scheme + net.JoinHostPort(host, port) + ui.Path + "/"
}

// uiURL is the UI's address on s.
func (s *apiServer) uiURL() string { return uiURL(s.addr(), s.overTLS) }
