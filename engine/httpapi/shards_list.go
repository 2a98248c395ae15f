package httpapi

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/heddlewf/heddle/engine"
)

// How a sharded cluster lists runs in one order (docs/sharding.md,
// "Visibility"). Each shard lists its own runs in the query's order, and
// the router merges the shards' pages: it asks every shard for a page of
// the limit from where that shard's part of the listing stands, takes the
// first runs of the merged order up to the limit, and remembers for each
// shard where its part now stands (the place of the last run it gave, from
// ListPage.Places). That is a page token per shard, and the router's page
// token holds them all.
//
// The merged order compares runs by start time (or closing time, the open
// runs last as each shard sorts them) and then by run id. Within a shard
// that is the shard's own order, so the merge keeps every shard's order
// and interleaves the shards by time.
//
// A shard's page cut short by its scan budget (ListPage.Cut) says nothing
// of its runs after the last one it read, so the merged page stops where
// such a shard's runs run out: it may hold fewer runs than the limit, with
// Cut set, and the next page goes on from there.

// mergedTokenVersion is the first byte of a merged page token.
const mergedTokenVersion = 1

// maxMergedStateBytes bounds one shard's part of a merged page token: a
// shard's own page token is far shorter.
const maxMergedStateBytes = 128

// mergedToken is a sharded cluster's page token: the direction of the
// next page and, per shard, that shard's page token from where its part
// of the listing stands. Going forward, "" is the shard's start; going
// back, "" is a shard with nothing before.
type mergedToken struct {
	back   bool
	states []string
}

// encode writes t as base64url (no padding) of: version, direction
// (0 forward, 1 back), then each shard's state as a uvarint length and
// its bytes.
func (t mergedToken) encode() string {
	b := []byte{mergedTokenVersion, 0}
	if t.back {
		b[1] = 1
	}
	for _, s := range t.states {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// maxMergedTokenLen is the longest merged token of a cluster of count
// shards, in characters.
func maxMergedTokenLen(count int) int {
	return base64.RawURLEncoding.EncodedLen(2 + count*(binary.MaxVarintLen16+maxMergedStateBytes))
}

// decodeMergedToken reads a merged page token of a cluster of count
// shards. It trusts nothing of s, which is outside text (a URL
// parameter): anything but the exact form is an ErrInvalidCommand.
func decodeMergedToken(s string, count int) (mergedToken, error) {
	bad := func(why string) (mergedToken, error) {
		return mergedToken{}, fmt.Errorf("%w: the page token is not one this sharded cluster's List gave (%s)", engine.ErrInvalidCommand, why)
	}
	if len(s) > maxMergedTokenLen(count) {
		return bad(fmt.Sprintf("%d characters, at most %d for %d shards", len(s), maxMergedTokenLen(count), count))
	}
	// The decoder skips \r and \n, which no token this node wrote holds.
	b, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil || len(b) < 2 || strings.ContainsAny(s, "\r\n") {
		return bad("not base64url")
	}
	if b[0] != mergedTokenVersion {
		return bad(fmt.Sprintf("version %d", b[0]))
	}
	if b[1] > 1 {
		return bad(fmt.Sprintf("direction %d", b[1]))
	}
	t := mergedToken{back: b[1] == 1, states: make([]string, 0, count)}
	rest := b[2:]
	for len(rest) > 0 {
		if len(t.states) == count {
			return bad(fmt.Sprintf("more than %d shards", count))
		}
		n, w := binary.Uvarint(rest)
		// One token has one spelling: a length in more bytes than it needs
		// is refused.
		if w <= 0 || w != len(binary.AppendUvarint(nil, n)) || n > maxMergedStateBytes || n > uint64(len(rest)-w) {
			return bad(fmt.Sprintf("shard %d's part", len(t.states)))
		}
		t.states = append(t.states, string(rest[w:w+int(n)]))
		rest = rest[w+int(n):]
	}
	if len(t.states) != count {
		return bad(fmt.Sprintf("%d shards, not %d", len(t.states), count))
	}
	return t, nil
}

// listMerged is List of a query that spans the shards, in its order.
func (r *ShardRouter) listMerged(ctx context.Context, q engine.ListQuery, limit int) (*engine.ListPage, error) {
	from := mergedToken{states: make([]string, r.count)}
	if q.PageToken != "" {
		var err error
		if from, err = decodeMergedToken(q.PageToken, r.count); err != nil {
			return nil, err
		}
	}
	pages := make([]*engine.ListPage, r.count)
	for k := range r.count {
		if from.back && from.states[k] == "" {
			continue // nothing before in this shard
		}
		sq := q
		sq.PageToken, sq.Limit, sq.Places = from.states[k], limit, true
		svc, rctx, err := r.reader(ctx, k)
		if err != nil {
			return nil, err
		}
		p, err := svc.List(rctx, sq)
		if err != nil {
			return nil, err
		}
		if len(p.Places) != len(p.Jobs) {
			return nil, fmt.Errorf("httpapi: shard %d listed %d runs with %d places", k, len(p.Jobs), len(p.Places))
		}
		pages[k] = p
	}
	return mergePages(from, pages, limit), nil
}

// mergePages merges the shards' pages read from the states of from (nil
// for a shard not asked: one with nothing before, going back) into one
// page of at most limit runs, and the tokens that go on from it.
func mergePages(from mergedToken, pages []*engine.ListPage, limit int) *engine.ListPage {
	order := engine.ListStartDesc
	for _, p := range pages {
		if p != nil {
			order = p.Order
			break
		}
	}
	page := &engine.ListPage{Jobs: []*engine.Job{}, Order: order}
	for _, p := range pages {
		if p != nil {
			page.Scanned += p.Scanned
		}
	}
	// taken[k] counts the runs of shard k on the merged page: a prefix of
	// its page going forward, a suffix going back.
	taken := make([]int, len(pages))
	left := func(k int) int { return len(pages[k].Jobs) - taken[k] }
	// head is the next run of shard k in the direction of the merge.
	head := func(k int) *engine.Job {
		if from.back {
			return pages[k].Jobs[left(k)-1]
		}
		return pages[k].Jobs[taken[k]]
	}
	var picked []*engine.Job
	for len(picked) < limit {
		best := -1
		stop := false
		for k, p := range pages {
			if p == nil {
				continue
			}
			if left(k) == 0 {
				// A shard cut short knows nothing past what it read: no run
				// of another shard may come after its last.
				stop = stop || p.Cut
				continue
			}
			if best < 0 {
				best = k
				continue
			}
			c := compareRuns(order, head(k), head(best))
			if (!from.back && c < 0) || (from.back && c > 0) {
				best = k
			}
		}
		if stop {
			page.Cut = true
			break
		}
		if best < 0 {
			break
		}
		picked = append(picked, head(best))
		taken[best]++
	}
	if from.back {
		slices.Reverse(picked)
	}
	page.Jobs = append(page.Jobs, picked...)

	next := mergedToken{states: make([]string, len(pages))}
	prev := mergedToken{back: true, states: make([]string, len(pages))}
	moreNext, morePrev := false, false
	for k, p := range pages {
		switch {
		case p == nil:
			// Going back, a shard with nothing before: going forward it
			// starts at its start, after this page.
			next.states[k], prev.states[k] = "", ""
			moreNext = true
		case !from.back:
			prev.states[k] = p.PrevPageToken
			switch {
			case left(k) > 0 && taken[k] == 0:
				next.states[k] = from.states[k] // nothing of it taken
			case left(k) > 0 || p.NextPageToken == "" && taken[k] > 0:
				next.states[k] = p.Places[taken[k]-1]
			default:
				// The whole page taken: its own next token goes on, past the
				// runs a cut page read without a match too (or, at the
				// shard's end, stays where it was).
				next.states[k] = cmp.Or(p.NextPageToken, from.states[k])
			}
			moreNext = moreNext || left(k) > 0 || p.NextPageToken != ""
			morePrev = morePrev || prev.states[k] != ""
		default:
			next.states[k] = p.NextPageToken
			switch {
			case left(k) > 0 && taken[k] == 0:
				prev.states[k] = from.states[k]
			case left(k) > 0 || p.PrevPageToken == "" && taken[k] > 0:
				prev.states[k] = p.Places[left(k)]
			default:
				prev.states[k] = cmp.Or(p.PrevPageToken, from.states[k])
			}
			morePrev = morePrev || left(k) > 0 || p.PrevPageToken != ""
			moreNext = true
		}
	}
	if moreNext {
		page.NextPageToken = next.encode()
	}
	if morePrev {
		page.PrevPageToken = prev.encode()
	}
	return page
}

// compareRuns orders two runs of different shards in order: by start
// time, or in a closing-time order the ended runs by closing time and then
// the open ones by start time (each shard sorts its open runs last in both
// directions), and then by run id, so that no two runs are equal.
func compareRuns(order engine.ListOrder, a, b *engine.Job) int {
	if order.ByClose() {
		aOpen, bOpen := !a.Status.Terminal(), !b.Status.Terminal()
		if aOpen != bOpen {
			if aOpen {
				return 1 // open runs come last, whichever the direction
			}
			return -1
		}
		if !aOpen {
			c := cmp.Or(cmp.Compare(a.ClosedMS, b.ClosedMS), cmp.Compare(a.ID, b.ID))
			if order == engine.ListCloseDesc {
				c = -c
			}
			return c
		}
	}
	c := cmp.Or(cmp.Compare(a.CreatedMS, b.CreatedMS), cmp.Compare(a.ID, b.ID))
	if order == engine.ListStartDesc || order == engine.ListCloseDesc {
		c = -c
	}
	return c
}
