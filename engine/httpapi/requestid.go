package httpapi

import (
	"crypto/rand"
	"encoding/hex"
)

// randomID returns prefix and 128 random bits in hex: request ids that two
// clients never share, and query ids a worker cannot guess.
func randomID(prefix string) string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand panics rather than return an error)
	return prefix + hex.EncodeToString(b[:])
}
