package main

import (
	"context"
	"net/http"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/httpapi"
	"github.com/heddlewf/heddle/internal/pki"
	"github.com/heddlewf/heddle/raftfsm"
)

// deliverTo is how a node of a sharded cluster sends its cross-shard
// deliveries to the other nodes (docs/sharding.md, "Cross-shard work"):
// over their HTTP API, as itself. With node certificates, its client
// certificate says who it is (the members take it for node:<id>, an
// admin); without, the cluster's token (--token), which every member
// accepts. As the Cluster page's member probes do (security.probe), but
// with no timeout of the client's own: each delivery's context bounds it.
func (s *security) deliverTo() raftfsm.DeliverFunc {
	sender := httpapi.NodeSender{Scheme: "http", Token: s.token}
	if s.cert != nil {
		t := httpapi.NewTransport(nil)
		if s.roots != nil {
			t.TLSClientConfig = pki.ClientTLS(s.roots, s.cert)
			sender.Token = ""
		} else {
			t.TLSClientConfig = pki.ClientTLS(nil, nil)
		}
		sender.Client, sender.Scheme = &http.Client{Transport: t}, "https"
	}
	return func(ctx context.Context, _, httpAddr string, d *engine.Deliver) (*engine.DeliverResult, error) {
		return sender.Deliver(ctx, httpAddr, d)
	}
}
