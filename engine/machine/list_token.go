package machine

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"

	"github.com/heddlewf/heddle/engine"
)

// A page token is a place in a list's order and the way to go from it,
// bound to the query it was made for: base64url (no padding) of
//
//	version:1 order:1 flags:1 digest:8 seg:1 at:8 id:8
//
// flags bit 0: back (the runs before the place), bit 1: inclusive (the
// place itself is on the page's side). digest is listfilter's Digest of the
// query, so a token is refused by any other query or order.
const (
	tokenVersion  = 1
	tokenBytes    = 28
	tokenBack     = 1 << 0
	tokenIncluded = 1 << 1
)

// pageToken is a decoded page token.
type pageToken struct {
	order     engine.ListOrder
	back      bool
	inclusive bool
	digest    uint64
	pos       listPos
}

func (t pageToken) encode() string {
	b := make([]byte, 0, tokenBytes)
	b = append(b, tokenVersion, byte(t.order))
	var flags byte
	if t.back {
		flags |= tokenBack
	}
	if t.inclusive {
		flags |= tokenIncluded
	}
	b = append(b, flags)
	b = binary.BigEndian.AppendUint64(b, t.digest)
	b = append(b, t.pos.seg)
	b = binary.BigEndian.AppendUint64(b, uint64(t.pos.atMS))
	b = binary.BigEndian.AppendUint64(b, t.pos.id)
	return base64.RawURLEncoding.EncodeToString(b)
}

// errBadToken is the error of a token that is not one of List's.
func errBadToken(why string) error {
	return fmt.Errorf("%w: the page token is not one List gave (%s)", engine.ErrInvalidCommand, why)
}

// decodePageToken reads a page token. It trusts nothing of s: a token is
// outside text (a URL parameter), and anything but the exact form is an
// ErrInvalidCommand.
func decodePageToken(s string) (pageToken, error) {
	if len(s) != base64.RawURLEncoding.EncodedLen(tokenBytes) {
		return pageToken{}, errBadToken(fmt.Sprintf("%d characters, want %d", len(s), base64.RawURLEncoding.EncodedLen(tokenBytes)))
	}
	// Strict: trailing bits must be zero, so one token has one spelling.
	b, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil || len(b) != tokenBytes {
		return pageToken{}, errBadToken("not base64url")
	}
	if b[0] != tokenVersion {
		return pageToken{}, errBadToken(fmt.Sprintf("version %d", b[0]))
	}
	t := pageToken{order: engine.ListOrder(b[1]), back: b[2]&tokenBack != 0, inclusive: b[2]&tokenIncluded != 0,
		digest: binary.BigEndian.Uint64(b[3:11])}
	if t.order == engine.ListOrderDefault || t.order > engine.ListCloseAsc {
		return pageToken{}, errBadToken(fmt.Sprintf("order %d", b[1]))
	}
	if b[2]&^(tokenBack|tokenIncluded) != 0 {
		return pageToken{}, errBadToken(fmt.Sprintf("flags %#x", b[2]))
	}
	t.pos = listPos{seg: b[11], atMS: int64(binary.BigEndian.Uint64(b[12:20])), id: binary.BigEndian.Uint64(b[20:28])}
	if t.pos.seg > segOpen || (t.pos.seg == segOpen && !t.order.ByClose()) || (t.pos.atMS != 0 && t.pos.seg != segClosed) ||
		(t.pos.seg == segClosed && t.order.ByClose() && t.pos.atMS < 0) || (t.pos.atMS != 0 && !t.order.ByClose()) {
		return pageToken{}, errBadToken("a place outside its order")
	}
	return t, nil
}
