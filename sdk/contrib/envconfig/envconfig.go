// Package envconfig builds client.Options from environment variables, as Temporal's contrib/envconfig does, so that programs calling client.Dial(envconfig.MustLoadDefaultClientOptions()) port by swapping imports.
//
// It reads the address of a heddle node from HEDDLE_ADDR or
// TEMPORAL_ADDRESS, a bearer token from HEDDLE_TOKEN or TEMPORAL_API_KEY,
// TEMPORAL_NAMESPACE (which must be "default": heddle has no namespaces)
// and TEMPORAL_TLS (true turns a host:port into an https:// URL). heddle
// reads no TOML profiles: a config file asked for (ConfigFilePath,
// ConfigFileData or TEMPORAL_CONFIG_FILE) is an error rather than being
// silently ignored.
package envconfig

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/heddlewf/heddle/sdk/client"
)

// ErrConfigFile: a TOML config file was asked for; heddle reads none.
var ErrConfigFile = errors.New("envconfig: heddle reads no config files; set HEDDLE_ADDR or TEMPORAL_ADDRESS instead")

// EnvLookup looks up environment variables; os.LookupEnv is one.
type EnvLookup interface {
	LookupEnv(key string) (string, bool)
}

type osEnv struct{}

func (osEnv) LookupEnv(key string) (string, bool) { return os.LookupEnv(key) }

// LoadClientOptionsRequest configures LoadClientOptions. The zero value
// reads the process's environment.
type LoadClientOptionsRequest struct {
	// ConfigFilePath, ConfigFileData and ConfigFileProfile name a TOML
	// profile in Temporal; heddle reads none, so setting the first two is
	// an error and the profile is ignored.
	ConfigFilePath    string
	ConfigFileData    []byte
	ConfigFileProfile string
	// ConfigFileStrict is accepted and changes nothing.
	ConfigFileStrict bool
	// DisableFile: TEMPORAL_CONFIG_FILE is not looked at.
	DisableFile bool
	// DisableEnv: no environment variable is read; the options are the
	// zero value (client.DefaultHostPort).
	DisableEnv bool
	// EnvLookup replaces the process's environment; nil means os.LookupEnv.
	EnvLookup EnvLookup
}

// MustLoadDefaultClientOptions is LoadDefaultClientOptions that panics on
// error.
func MustLoadDefaultClientOptions() client.Options {
	o, err := LoadDefaultClientOptions()
	if err != nil {
		panic(err)
	}
	return o
}

// LoadDefaultClientOptions reads the options from the process's
// environment.
func LoadDefaultClientOptions() (client.Options, error) {
	return LoadClientOptions(LoadClientOptionsRequest{})
}

// LoadClientOptions reads the options from the environment request names.
func LoadClientOptions(request LoadClientOptionsRequest) (client.Options, error) {
	var o client.Options
	if request.ConfigFilePath != "" || len(request.ConfigFileData) > 0 {
		return o, ErrConfigFile
	}
	if request.DisableEnv {
		return o, nil
	}
	env := request.EnvLookup
	if env == nil {
		env = osEnv{}
	}
	get := func(keys ...string) string {
		for _, k := range keys {
			if v, ok := env.LookupEnv(k); ok && v != "" {
				return v
			}
		}
		return ""
	}
	if f := get("TEMPORAL_CONFIG_FILE"); f != "" && !request.DisableFile {
		return o, fmt.Errorf("%w (TEMPORAL_CONFIG_FILE is %q)", ErrConfigFile, f)
	}
	o.HostPort = get("HEDDLE_ADDR", "TEMPORAL_ADDRESS")
	if first, _, found := strings.Cut(o.HostPort, ","); found {
		o.HostPort = first // HEDDLE_ADDR may list a cluster's nodes; the client follows the leader
	}
	o.Namespace = get("TEMPORAL_NAMESPACE")
	if token := get("HEDDLE_TOKEN", "TEMPORAL_API_KEY"); token != "" {
		o.Credentials = client.NewAPIKeyStaticCredentials(token)
	}
	if s := get("TEMPORAL_TLS"); s != "" {
		tls, err := strconv.ParseBool(s)
		if err != nil {
			return o, fmt.Errorf("envconfig: TEMPORAL_TLS %q is not a boolean", s)
		}
		if tls && o.HostPort != "" && !strings.Contains(o.HostPort, "://") {
			o.HostPort = "https://" + o.HostPort
		}
	}
	return o, o.Validate()
}
