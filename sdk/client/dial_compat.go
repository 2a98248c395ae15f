package client

// NewClient is Dial under the name Temporal's SDK used before Dial; it is
// kept there (deprecated) and here so that older code ports unchanged.
//
// Deprecated: use Dial.
func NewClient(options Options) (Client, error) { return Dial(options) }

// NewLazyClient returns a client without checking that the node answers:
// the first call reaches it, and fails then if it cannot. It is Dial with
// ConnectionOptions.DisableHealthCheck set, as Temporal's is a client
// that connects on first use.
func NewLazyClient(options Options) (Client, error) {
	options.ConnectionOptions.DisableHealthCheck = true
	return Dial(options)
}
