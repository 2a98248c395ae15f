package ui

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/heddlewf/heddle/engine/httpapi"
)

// inProcess is an http.RoundTripper that serves each request with the API
// handler in this process, as if it had come over the network: the handler
// runs its token check, its routes and its forwarding to the leader, and
// nothing is dialled.
type inProcess struct {
	api http.Handler
	// remoteAddr is the browser's address, which the API sees as the
	// caller's: the UI asks on the person's behalf.
	remoteAddr string
	// tls is the browser's TLS connection, nil over plain HTTP: a person
	// whose browser presents a client certificate is who that certificate
	// names, to the API as to any client.
	tls *tls.ConnectionState
}

func (t inProcess) RoundTrip(req *http.Request) (*http.Response, error) {
	in := req.Clone(req.Context())
	in.RequestURI = req.URL.RequestURI()
	in.RemoteAddr = t.remoteAddr
	in.TLS = t.tls
	in.Host = req.URL.Host
	if in.Body == nil {
		in.Body = http.NoBody
	}
	rec := &recorder{header: http.Header{}}
	t.api.ServeHTTP(rec, in)
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	return &http.Response{
		Status:        strconv.Itoa(rec.status) + " " + http.StatusText(rec.status),
		StatusCode:    rec.status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        rec.header,
		Body:          io.NopCloser(bytes.NewReader(rec.body.Bytes())),
		ContentLength: int64(rec.body.Len()),
		Request:       req,
	}, nil
}

// recorder is the http.ResponseWriter of an in-process request.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(b)
}

// apiRetry is how long one of the UI's calls goes on trying while the API
// answers 503 (a cluster electing a leader): a page should say so soon.
const apiRetry = 2 * time.Second

// backend is the API as one request of the UI sees it: the engine's
// service and the cluster routes, with the person's token.
type backend struct {
	*httpapi.Client
	token     string
	transport inProcess
}

// newBackend returns the API for a browser request carrying token.
func (h *Handler) newBackend(r *http.Request, token string) (*backend, error) {
	t := inProcess{api: h.cfg.API, remoteAddr: r.RemoteAddr, tls: r.TLS}
	c, err := httpapi.NewClient(httpapi.ClientConfig{
		// The address is never dialled: the transport serves every
		// request in this process.
		Addrs: []string{"http://in-process"}, Token: token,
		HTTPClient: &http.Client{Transport: t}, RetryTimeout: apiRetry,
	})
	if err != nil {
		return nil, err
	}
	return &backend{Client: c, token: token, transport: t}, nil
}

// get asks the API for path without decoding the answer: its status and
// the error the API answered with, if any (routes the typed client does
// not know, such as an optional part of the API).
func (b *backend) get(ctx context.Context, path string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://in-process"+path, nil)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Accept", "application/json")
	if b.token != "" {
		req.Header.Set("Authorization", "Bearer "+b.token)
	}
	resp, err := b.transport.RoundTrip(req)
	if err != nil {
		return 0, nil, err
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, err
	}
	if resp.StatusCode != http.StatusOK {
		// The API's error body, as the typed client reads it, so that
		// errors.Is matches the sentinel it names (ErrNoRoute, ...).
		re := &httpapi.RemoteError{Status: resp.StatusCode}
		if json.Unmarshal(body, &re.Body) != nil || re.Body.Name == "" {
			re.Body = httpapi.ErrorBody{Message: fmt.Sprintf("GET %s: HTTP %d: %s", path, resp.StatusCode, bytes.TrimSpace(body))}
		}
		return resp.StatusCode, body, re
	}
	return resp.StatusCode, body, nil
}
