package httpapi

import (
	"context"
	"net/http"
)

// WhoAmI is who the server takes a caller to be: GET /v1/whoami answers it,
// so that a program (the web UI among them) can show only what the caller
// may do instead of trying and being refused.
type WhoAmI struct {
	// Name is the token's name in the token file, the client
	// certificate's name, "node:<id>" for a cluster node's certificate,
	// the shared token's name for ServerConfig.AuthToken, or "" on a
	// server without tokens.
	Name string `json:"name"`
	// Role is "reader", "client", "worker" or "admin"; a server without
	// tokens lets everyone be an admin.
	Role string `json:"role"`
}

// whoami answers the caller's own identity; every role may ask.
func (s *Server) whoami(c *call) (any, error) {
	id := identityOf(c.r)
	return &WhoAmI{Name: id.Name, Role: id.Role.String()}, nil
}

// WhoAmI asks the server who it takes this client's token (or certificate)
// to be.
func (c *Client) WhoAmI(ctx context.Context) (WhoAmI, error) {
	var w WhoAmI
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/whoami", out: &w})
	return w, err
}
