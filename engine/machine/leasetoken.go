package machine

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"encoding/hex"
)

// Lease tokens. An attempt number is public (it is in every job_leased
// event, in describe, in the UI), so a write fenced by (job, attempt)
// alone can be made by anyone who may call the command. A claim therefore
// also hands its claimer an unguessable lease token, and every fenced write
// of the job must present it.
//
// Apply is deterministic and runs on every Raft node, so it cannot draw
// the randomness itself: the Engine puts NonceBytes random bytes in the
// claim's Header.Nonce before proposing it, as the log puts the time in
// Header.NowMS, and Apply derives each claimed job's token from that nonce
// with leaseToken. The job record keeps only the token's SHA-256
// (Job.LeaseDigest), so a record read by describe, a snapshot or the UI
// gives nothing to write with; the nonce itself stays in the Raft log,
// which is as trusted as the nodes.
//
// A claim without a nonce (applied from a log written before tokens
// existed, or proposed straight to Apply by a test) issues no token: that
// lease is fenced by its attempt alone, as every lease was before, and its
// job_leased says so (Event.TokenIssued is false).

// leaseToken derives the token of attempt of job from a claim's nonce:
// 128 bits of SHA-256 over a domain tag, the nonce, the job and the
// attempt, in hex. Each job of one claim gets its own token; nobody who
// lacks the nonce can compute any of them. "" without a nonce.
func leaseToken(nonce []byte, kind string, id, attempt uint64) string {
	if len(nonce) == 0 {
		return ""
	}
	h := sha256.New()
	h.Write([]byte("heddle lease token\x00" + kind + "\x00"))
	h.Write(nonce)
	var n [16]byte
	binary.BigEndian.PutUint64(n[:8], id)
	binary.BigEndian.PutUint64(n[8:], attempt)
	h.Write(n[:])
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// leaseDigest is what a record keeps of a token: its SHA-256, or nothing
// for no token.
func leaseDigest(token string) []byte {
	if token == "" {
		return nil
	}
	d := sha256.Sum256([]byte(token))
	return d[:]
}

// tokenMatches reports whether token is the one whose digest a record
// keeps, in constant time. A record without a digest holds a lease issued
// without a token, which only the empty token matches.
func tokenMatches(digest []byte, token string) bool {
	if len(digest) == 0 {
		return token == ""
	}
	d := sha256.Sum256([]byte(token))
	return subtle.ConstantTimeCompare(d[:], digest) == 1
}
