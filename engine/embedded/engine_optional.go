package embedded

import "github.com/heddlewf/heddle/engine"

// The optional interfaces of engine.Service that *Engine implements
// (engine/service_optional.go).
var _ engine.CancelSafeClaimer = (*Engine)(nil)

// CancelSafeClaims implements engine.CancelSafeClaimer: ClaimWait applies its
// claim under a context that the caller's does not cancel, so it always
// returns what it claimed. This holds for an *Engine over any Log, a
// cluster node's included.
func (e *Engine) CancelSafeClaims() bool { return true }
