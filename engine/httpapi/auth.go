package httpapi

import (
	"bufio"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strings"
)

// Role is what a caller may do. Roles are ordered: each may do everything
// the roles below it may, so a worker (which starts child workflows and asks
// remote activities to cancel) may do what a client may.
type Role uint8

// The roles, lowest first. RoleNone is no role: an unauthenticated caller.
const (
	RoleNone Role = iota
	// RoleReader reads: describe, list, history (long polls included),
	// effects, closed waits and the cluster's status.
	RoleReader
	// RoleClient starts, signals, queries, cancels, asks to cancel,
	// suspends, resumes and activates workflows.
	RoleClient
	// RoleWorker runs them: claims, heartbeats, appends, commits steps,
	// waits, completes, fails, requeues, continues as new, and answers
	// queries.
	RoleWorker
	// RoleAdmin changes the cluster (joins, removals, leadership
	// transfers) and terminates workflows.
	RoleAdmin
)

var roleNames = [...]string{"none", "reader", "client", "worker", "admin"}

func (r Role) String() string {
	if int(r) < len(roleNames) {
		return roleNames[r]
	}
	return fmt.Sprintf("Role(%d)", uint8(r))
}

// ParseRole reads a role by its name: "reader", "client", "worker" or "admin".
func ParseRole(s string) (Role, error) {
	for i, n := range roleNames {
		if n == s && Role(i) != RoleNone {
			return Role(i), nil
		}
	}
	return RoleNone, fmt.Errorf("%w: role %q is not one of reader, client, worker, admin", ErrInvalidConfig, s)
}

// Identity is an authenticated caller: a token's name and role.
type Identity struct {
	Name string
	Role Role
}

// digestPrefix starts a token's digest in a token file.
const digestPrefix = "sha256:"

// Tokens are the bearer tokens a Server accepts, each with a name and a
// role. Only the SHA-256 digest of each token is held, in memory and in
// the file it was read from: a token is 32 random bytes (NewToken), so a
// plain digest cannot be reversed, and a leaked file gives no access.
// A Tokens is read-only once built and safe for concurrent use.
type Tokens struct {
	byDigest map[[sha256.Size]byte]Identity
	names    map[string]bool
}

// NewToken returns a new random token: "hdl_" and 32 random bytes in
// unpadded base64url.
func NewToken() string {
	var b [32]byte
	rand.Read(b[:]) // never fails (crypto/rand panics rather than return an error)
	return "hdl_" + base64.RawURLEncoding.EncodeToString(b[:])
}

// TokenDigest returns the digest of token as a token file writes it:
// "sha256:" and 64 lowercase hex digits.
func TokenDigest(token string) string {
	sum := sha256.Sum256([]byte(token))
	return digestPrefix + hex.EncodeToString(sum[:])
}

// TokenLine returns the token file line that grants token to name with role.
func TokenLine(role Role, name, token string) string {
	return role.String() + " " + name + " " + TokenDigest(token)
}

// Add grants token to name with role. Names and tokens must be unique.
func (t *Tokens) Add(name string, role Role, token string) error {
	if token == "" {
		return fmt.Errorf("%w: the token of %q is empty", ErrInvalidConfig, name)
	}
	return t.add(name, role, sha256.Sum256([]byte(token)))
}

func (t *Tokens) add(name string, role Role, digest [sha256.Size]byte) error {
	if t.byDigest == nil {
		t.byDigest, t.names = map[[sha256.Size]byte]Identity{}, map[string]bool{}
	}
	switch {
	case !validTokenName(name):
		return fmt.Errorf("%w: token name %q: use 1 to 64 letters, digits, '.', '_', '-' or '@'", ErrInvalidConfig, name)
	case role == RoleNone || int(role) >= len(roleNames):
		return fmt.Errorf("%w: token %q has no role", ErrInvalidConfig, name)
	case t.names[name]:
		return fmt.Errorf("%w: token name %q appears twice", ErrInvalidConfig, name)
	}
	if _, dup := t.byDigest[digest]; dup {
		return fmt.Errorf("%w: the token of %q is also another name's token", ErrInvalidConfig, name)
	}
	t.byDigest[digest] = Identity{Name: name, Role: role}
	t.names[name] = true
	return nil
}

func validTokenName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, c := range s {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("._-@", c)
		if !ok {
			return false
		}
	}
	return true
}

// Len returns how many tokens t holds.
func (t *Tokens) Len() int { return len(t.byDigest) }

// lookup returns the identity token belongs to. It looks the token's
// digest up, never the token: how long the lookup takes depends on the
// digest's bytes, which a guesser cannot steer towards a real token's, so
// response times say nothing about how much of a guess was right.
func (t *Tokens) lookup(token string) (Identity, bool) {
	if t == nil {
		return Identity{}, false
	}
	id, ok := t.byDigest[sha256.Sum256([]byte(token))]
	return id, ok
}

// ParseTokens reads a token file. Each line that is not blank or a comment
// ('#' first) grants one token:
//
//	<role> <name> sha256:<64 hex digits>
//
// role is reader, client, worker or admin; name (1 to 64 letters, digits,
// '.', '_', '-', '@') is what the server records as the caller of the
// commands the token issues; the last field is the token's SHA-256 digest
// (TokenDigest), never the token. "heddle token" makes a token and its
// line. Errors name the line.
func ParseTokens(r io.Reader) (*Tokens, error) {
	t := &Tokens{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 3 {
			return nil, fmt.Errorf("%w: token file line %d has %d fields; want <role> <name> sha256:<hex>", ErrInvalidConfig, n, len(f))
		}
		role, err := ParseRole(f[0])
		if err != nil {
			return nil, fmt.Errorf("token file line %d: %w", n, err)
		}
		hexDigest, ok := strings.CutPrefix(f[2], digestPrefix)
		raw, herr := hex.DecodeString(hexDigest)
		if !ok || herr != nil || len(raw) != sha256.Size {
			return nil, fmt.Errorf("%w: token file line %d: the third field is not sha256: and 64 hex digits (the file holds a token's digest, never the token)", ErrInvalidConfig, n)
		}
		if err := t.add(f[1], role, [sha256.Size]byte(raw)); err != nil {
			return nil, fmt.Errorf("token file line %d: %w", n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading the token file: %w", err)
	}
	if t.Len() == 0 {
		return nil, fmt.Errorf("%w: the token file grants no token", ErrInvalidConfig)
	}
	return t, nil
}

// LoadTokens reads the token file at path (see ParseTokens).
func LoadTokens(path string) (*Tokens, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: token file: %v", ErrInvalidConfig, err)
	}
	defer func() { _ = f.Close() }() // read-only: closing cannot lose anything
	t, err := ParseTokens(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}
