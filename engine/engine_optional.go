package engine

// The optional interfaces of Service that *Engine implements
// (service_optional.go).
var _ CancelSafeClaimer = (*Engine)(nil)

// CancelSafeClaims implements CancelSafeClaimer: ClaimWait applies its
// claim under a context that the caller's does not cancel, so it always
// returns what it claimed. This holds for an *Engine over any Log, a
// cluster node's included.
func (e *Engine) CancelSafeClaims() bool { return true }
