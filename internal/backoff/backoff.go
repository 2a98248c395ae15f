// Package backoff spaces the retries of one loop with capped exponential
// backoff and full jitter, so that many clients that failed together do not
// retry together against a server that is coming back.
package backoff

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// Sentinel errors, matched with errors.Is.
var (
	// ErrInvalidConfig: a Backoff field is out of range (see Validate).
	ErrInvalidConfig = errors.New("backoff: invalid config")
)

// Defaults of Backoff's zero fields.
const (
	DefaultInitial = 10 * time.Millisecond
	DefaultMax     = time.Second
)

// Backoff hands out the delays of one retry loop. The n-th delay since the
// last Reset is drawn uniformly from [0, min(Max, Initial·2ⁿ⁻¹)] ("full
// jitter"): the ceiling doubles as failures go on, and the draw spreads the
// retries of many loops over the whole interval instead of bunching them at
// its end, as a fixed or only slightly jittered delay would.
//
// The zero value is valid: ceilings from 10 ms doubling up to 1 s, delays
// drawn from the process-wide random source. Set the fields before the first
// Next and leave them alone after. A Backoff belongs to one retry loop: it
// is not safe for concurrent use.
type Backoff struct {
	// Initial is the ceiling of the first delay. 0 means DefaultInitial
	// (10 ms).
	Initial time.Duration
	// Max caps the ceiling. 0 means DefaultMax (1 s), or Initial when
	// Initial is larger.
	Max time.Duration
	// Rand draws the delays. Nil means math/rand/v2's process-wide source,
	// which is seeded at random and safe for concurrent use; tests pass a
	// seeded one, such as rand.New(rand.NewPCG(1, 2)), to get the same
	// delays on every run.
	Rand *rand.Rand

	ceiling time.Duration // the ceiling of the last delay; 0 after Reset
}

// Validate reports the first field out of range: a negative Initial or Max,
// or an Initial over a nonzero Max.
func (b *Backoff) Validate() error {
	switch {
	case b.Initial < 0:
		return fmt.Errorf("%w: Initial %v is negative", ErrInvalidConfig, b.Initial)
	case b.Max < 0:
		return fmt.Errorf("%w: Max %v is negative", ErrInvalidConfig, b.Max)
	case b.Max != 0 && b.Initial > b.Max:
		return fmt.Errorf("%w: Initial %v is over Max %v", ErrInvalidConfig, b.Initial, b.Max)
	}
	return nil
}

// limits returns Initial and Max with their defaults applied. Values that
// Validate rejects are not trusted: a negative one counts as zero, and Max
// is never below Initial, so Next never returns a negative delay.
func (b *Backoff) limits() (initial, ceilingMax time.Duration) {
	initial, ceilingMax = b.Initial, b.Max
	if initial <= 0 {
		initial = DefaultInitial
	}
	if ceilingMax <= 0 {
		ceilingMax = DefaultMax
	}
	return initial, max(ceilingMax, initial)
}

// Next returns the delay before the next retry: a uniform draw from
// [0, ceiling], where the ceiling is Initial after a Reset and doubles with
// each call up to Max.
func (b *Backoff) Next() time.Duration {
	initial, ceilingMax := b.limits()
	switch {
	case b.ceiling <= 0:
		b.ceiling = initial
	case b.ceiling > ceilingMax/2:
		b.ceiling = ceilingMax // doubling would pass Max (or overflow)
	default:
		b.ceiling *= 2
	}
	// The draw includes the ceiling itself; in uint64, ceiling+1 cannot
	// overflow, and the result fits a Duration.
	n := uint64(b.ceiling) + 1
	if b.Rand != nil {
		return time.Duration(b.Rand.Uint64N(n))
	}
	return time.Duration(rand.Uint64N(n))
}

// Reset starts over after a success: the next delay is drawn under Initial
// again.
func (b *Backoff) Reset() { b.ceiling = 0 }

// Sleep waits for d, or until ctx ends and returns ctx's error.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
