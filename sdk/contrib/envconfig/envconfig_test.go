package envconfig

import (
	"errors"
	"strings"
	"testing"

	"github.com/heddlewf/heddle/sdk/client"
)

type mapEnv map[string]string

func (m mapEnv) LookupEnv(k string) (string, bool) { v, ok := m[k]; return v, ok }

func TestLoadClientOptions(t *testing.T) {
	for _, tc := range []struct {
		name     string
		req      LoadClientOptionsRequest
		env      mapEnv
		hostPort string
		ns       string
		token    bool
		err      string
	}{
		{name: "nothing set: the default node", env: mapEnv{}},
		{name: "Temporal's address", env: mapEnv{"TEMPORAL_ADDRESS": "node:7280"}, hostPort: "node:7280"},
		{name: "heddle's address wins", env: mapEnv{"TEMPORAL_ADDRESS": "a:1", "HEDDLE_ADDR": "b:2,c:3"}, hostPort: "b:2"},
		{name: "TLS", env: mapEnv{"TEMPORAL_ADDRESS": "node:443", "TEMPORAL_TLS": "true"}, hostPort: "https://node:443"},
		{name: "bad TLS", env: mapEnv{"TEMPORAL_TLS": "maybe"}, err: "TEMPORAL_TLS"},
		{name: "API key", env: mapEnv{"TEMPORAL_API_KEY": "k"}, token: true},
		{name: "default namespace", env: mapEnv{"TEMPORAL_NAMESPACE": "default"}, ns: "default"},
		{name: "other namespace", env: mapEnv{"TEMPORAL_NAMESPACE": "billing"}, err: "no namespaces"},
		{name: "config file", env: mapEnv{"TEMPORAL_CONFIG_FILE": "/etc/t.toml"}, err: "reads no config files"},
		{name: "config file, disabled", req: LoadClientOptionsRequest{DisableFile: true}, env: mapEnv{"TEMPORAL_CONFIG_FILE": "/etc/t.toml"}},
		{name: "config data", req: LoadClientOptionsRequest{ConfigFileData: []byte("x")}, env: mapEnv{}, err: "reads no config files"},
		{name: "env disabled", req: LoadClientOptionsRequest{DisableEnv: true}, env: mapEnv{"TEMPORAL_ADDRESS": "node:1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.req.EnvLookup = tc.env
			o, err := LoadClientOptions(tc.req)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if o.HostPort != tc.hostPort || o.Namespace != tc.ns || (o.Credentials != nil) != tc.token {
				t.Fatalf("options %+v", o)
			}
		})
	}
	if _, err := LoadClientOptions(LoadClientOptionsRequest{ConfigFilePath: "x"}); !errors.Is(err, ErrConfigFile) {
		t.Fatalf("a config file path: %v", err)
	}
	// The test's own environment names no config file: the default
	// options load without a panic.
	if o := MustLoadDefaultClientOptions(); o.Namespace != "" && o.Namespace != client.DefaultNamespace {
		t.Fatalf("default options %+v", o)
	}
}
