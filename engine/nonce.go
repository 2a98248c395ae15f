package engine

import "crypto/rand"

// Nonces. Apply draws no randomness, so whoever proposes a command that
// hands out leases (a claim) or names a parent run gives it fresh random
// bytes in Header.Nonce first (StampNonce), as the log gives it its time,
// and Apply derives the leases' tokens from them (see the lease tokens of
// package engine/machine).

// NonceBytes is the length of the nonce the Engine gives each claim.
const NonceBytes = 16

// newNonce returns NonceBytes random bytes.
func newNonce() []byte {
	b := make([]byte, NonceBytes)
	rand.Read(b) // never fails (crypto/rand panics rather than return an error)
	return b
}

// StampNonce gives a command that hands out leases a fresh nonce,
// replacing whatever the caller put there: a caller that chose the nonce
// could compute the tokens. A create naming a parent gets one too, which
// marks it as proposed by an Engine that fences parents (see
// LegacyParent): a caller cannot take the mark off. The Engine stamps
// every command it proposes.
func StampNonce(cmd Command) {
	switch c := cmd.(type) {
	case *Claim, *ClaimReviews:
		cmd.Head().Nonce = newNonce()
	case *CreateJob:
		if c.ParentID != 0 {
			c.Nonce = newNonce()
		}
	case *CreateReview:
		if c.ParentJob != 0 {
			c.Nonce = newNonce()
		}
	}
}

// LegacyParent reports a create that names a parent without its lease and
// without the Engine's nonce: an entry of a Raft log written before
// parent leases existed, which applies as it did then (the parent must
// only be open), so that a node replaying such a log decides as the nodes
// that applied it. Every create that reaches Apply through an Engine of
// this version carries a nonce, and without a parent lease is refused.
func LegacyParent(h *Header, parent JobID, pl *LeaseRef) bool {
	return parent != 0 && pl == nil && len(h.Nonce) == 0
}
