package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"syscall"
	"testing"

	"github.com/heddlewf/heddle/engine/httpapi"
)

// nodeRefusals ends a call at once only when every named address failed
// to connect before any node answered: a leader a node named that refuses
// counts for nothing, an answer from any node keeps the call going, and
// one address that names no host does not end it while another may answer.
func TestNodeRefusals(t *testing.T) {
	refused := fmt.Errorf("dial: %w", syscall.ECONNREFUSED)
	noHost := &net.DNSError{Err: "no such host", Name: "nosuch.invalid", IsNotFound: true}
	notLeader := &httpapi.RemoteError{Status: http.StatusServiceUnavailable}
	type try struct {
		addr string
		err  error
	}
	for _, tc := range []struct {
		name         string
		named        []string
		countRefused bool
		tries        []try
		allFailed    bool
		noHost       bool
	}{
		{"every named address refuses", []string{"http://a", "http://b"}, true,
			[]try{{"http://a", refused}, {"http://b", refused}}, true, false},
		{"one of two refused so far", []string{"http://a", "http://b"}, true,
			[]try{{"http://a", refused}, {"http://a", refused}}, false, false},
		{"a named node answered, its leader refuses", []string{"http://a"}, true,
			[]try{{"http://a", notLeader}, {"http://leader", refused}, {"http://a", refused}}, false, false},
		{"a leader hint refuses after the named one did", []string{"http://a", "http://b"}, true,
			[]try{{"http://a", refused}, {"http://leader", refused}}, false, false},
		{"one names no host, the other may answer", []string{"http://nosuch.invalid", "http://b"}, true,
			[]try{{"http://nosuch.invalid", noHost}}, false, true},
		{"one names no host, the other refuses", []string{"http://nosuch.invalid", "http://b"}, true,
			[]try{{"http://nosuch.invalid", noHost}, {"http://b", refused}}, true, true},
		{"refusals waited out (--retry-timeout)", []string{"http://a"}, false,
			[]try{{"http://a", refused}}, false, false},
		{"no host, even when refusals are waited out", []string{"http://nosuch.invalid"}, false,
			[]try{{"http://nosuch.invalid", noHost}}, true, true},
		{"another failure is not a refusal", []string{"http://a"}, true,
			[]try{{"http://a", errors.New("i/o timeout")}}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r nodeRefusals
			r.setNamed(tc.named)
			var all, nh bool
			for _, tr := range tc.tries {
				all, nh = r.note(tr.addr, tr.err, tc.countRefused)
			}
			if all != tc.allFailed || nh != tc.noHost {
				t.Fatalf("after %v: all failed %v, no host %v; want %v, %v", tc.tries, all, nh, tc.allFailed, tc.noHost)
			}
		})
	}
}

// A member --addr named with a scheme, that did not answer, is not asked
// again at the address the others list it by.
func TestUnnamedMembersComparesHostAndPort(t *testing.T) {
	views := []clusterView{
		{Addr: "http://127.0.0.1:7070/"}, // down: no status
		{Addr: "127.0.0.1:7072", Status: &clusterStatusDoc{ID: "n2", Members: []clusterMemberDoc{
			{ID: "n1", HTTPAddr: "127.0.0.1:7070"}, {ID: "n2", HTTPAddr: "127.0.0.1:7072"}, {ID: "n3", HTTPAddr: "127.0.0.1:7074"}}}},
	}
	if got := unnamedMembers(views); len(got) != 1 || got[0] != "127.0.0.1:7074" {
		t.Fatalf("unnamedMembers = %q, want only n3's 127.0.0.1:7074", got)
	}
}
