package httpapi

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestPollCutsEarly: a cut that finds no poll waiting is kept for the next
// poll under its id, which takes it once; it expires after earlyCutTTL,
// and however many cuts come, at most maxEarlyCuts are kept.
func TestPollCutsEarly(t *testing.T) {
	p := newPollCuts()
	now := time.Unix(1000, 0)
	p.now = func() time.Time { return now }
	ended := func(ctx context.Context) bool { return ctx.Err() != nil }

	if n := p.cut("a"); n != 0 {
		t.Fatalf("a cut with no poll ended %d", n)
	}
	ctx, end := p.begin(context.Background(), "a")
	if !ended(ctx) {
		t.Fatal("a poll after its cut is still waiting")
	}
	end()
	ctx, end = p.begin(context.Background(), "a")
	if ended(ctx) {
		t.Fatal("a second poll took a cut already taken")
	}
	if n := p.cut("a"); n != 1 || !ended(ctx) {
		t.Fatalf("a cut of a waiting poll ended %d, its wait ended %v", n, ended(ctx))
	}
	end()
	if len(p.waiting) != 0 || len(p.early) != 0 {
		t.Fatalf("left after the polls ended: %d waiting, %d early cuts", len(p.waiting), len(p.early))
	}

	p.cut("b")
	now = now.Add(earlyCutTTL + time.Millisecond)
	ctx, end = p.begin(context.Background(), "b")
	if ended(ctx) {
		t.Fatal("an expired cut ended a poll")
	}
	end()

	for i := range 3 * maxEarlyCuts {
		p.cut(fmt.Sprintf("x%d", i))
		now = now.Add(time.Microsecond)
	}
	if len(p.early) > maxEarlyCuts {
		t.Fatalf("%d early cuts kept, bound %d", len(p.early), maxEarlyCuts)
	}
	last := fmt.Sprintf("x%d", 3*maxEarlyCuts-1)
	if _, ok := p.early[last]; !ok {
		t.Fatal("the newest cut was dropped, not the oldest")
	}
}
