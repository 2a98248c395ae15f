package httpapi

import (
	"context"
	"errors"
	"testing"

	"github.com/heddlewf/heddle/engine"
)

// TestWhoAmI asks the server who each token is: its name and role, 401
// without a token on a server with tokens, and an admin without a name on
// a server without any.
func TestWhoAmI(t *testing.T) {
	e := openEngine(t, engine.Limits{})
	_, hs := serve(t, ServerConfig{Service: e, Tokens: testTokens(t), AuthToken: "shared-token"})
	for _, tc := range []struct {
		token string
		want  WhoAmI
	}{
		{readerToken, WhoAmI{Name: "rita", Role: "reader"}},
		{clientToken, WhoAmI{Name: "carl", Role: "client"}},
		{workerToken, WhoAmI{Name: "wendy", Role: "worker"}},
		{adminToken, WhoAmI{Name: "ada", Role: "admin"}},
		{"shared-token", WhoAmI{Name: sharedTokenName, Role: "admin"}},
	} {
		c, err := NewClient(ClientConfig{Addrs: []string{hs.URL}, Token: tc.token})
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.WhoAmI(context.Background())
		if err != nil || got != tc.want {
			t.Errorf("WhoAmI with the token of %s: %+v, %v; want %+v", tc.want.Name, got, err, tc.want)
		}
	}
	for _, token := range []string{"", "hdl_not-a-token"} {
		c, err := NewClient(ClientConfig{Addrs: []string{hs.URL}, Token: token})
		if err != nil {
			t.Fatal(err)
		}
		if got, err := c.WhoAmI(context.Background()); !errors.Is(err, ErrUnauthorized) {
			t.Errorf("WhoAmI with token %q: %+v, %v; want ErrUnauthorized", token, got, err)
		}
	}

	_, open := serve(t, ServerConfig{Service: e})
	c, err := NewClient(ClientConfig{Addrs: []string{open.URL}})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := c.WhoAmI(context.Background()); err != nil || got != (WhoAmI{Role: "admin"}) {
		t.Errorf("WhoAmI on a server without tokens: %+v, %v; want an admin without a name", got, err)
	}
}
