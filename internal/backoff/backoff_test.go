package backoff

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// ceilings returns the ceiling of each of n delays of b, found as the
// largest delay a source that always draws the top of the range returns.
func ceilings(b Backoff, n int) []time.Duration {
	b.Rand = rand.New(topSource{})
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = b.Next()
	}
	return out
}

// topSource makes rand.Rand.Int64N(n) return n-1, the top of the range.
type topSource struct{}

func (topSource) Uint64() uint64 { return math.MaxUint64 }

// The ceiling starts at Initial, doubles with each delay and stops at Max;
// zero fields take their documented defaults.
func TestCeilingsDoubleUpToMax(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name string
		b    Backoff
		want []time.Duration
	}{
		{"zero value", Backoff{}, []time.Duration{10 * ms, 20 * ms, 40 * ms, 80 * ms, 160 * ms, 320 * ms, 640 * ms, time.Second, time.Second}},
		{"initial and max", Backoff{Initial: 100 * ms, Max: 250 * ms}, []time.Duration{100 * ms, 200 * ms, 250 * ms, 250 * ms}},
		{"max only", Backoff{Max: 30 * ms}, []time.Duration{10 * ms, 20 * ms, 30 * ms, 30 * ms}},
		{"initial over the default max", Backoff{Initial: 3 * time.Second}, []time.Duration{3 * time.Second, 3 * time.Second}},
		{"initial equals max", Backoff{Initial: 5 * ms, Max: 5 * ms}, []time.Duration{5 * ms, 5 * ms, 5 * ms}},
		{"no overflow near the largest duration", Backoff{Initial: time.Duration(math.MaxInt64/2 + 1), Max: math.MaxInt64},
			[]time.Duration{time.Duration(math.MaxInt64/2 + 1), math.MaxInt64, math.MaxInt64}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.b.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			got := ceilings(tt.b, len(tt.want))
			for i := range tt.want {
				if got[i] != tt.want[i] {
					t.Fatalf("ceilings %v, want %v", got, tt.want)
				}
			}
		})
	}
}

// Reset brings the ceiling back to Initial.
func TestResetStartsOver(t *testing.T) {
	b := Backoff{Initial: time.Millisecond, Max: time.Second, Rand: rand.New(topSource{})}
	for range 5 {
		b.Next()
	}
	b.Reset()
	if d := b.Next(); d != time.Millisecond {
		t.Fatalf("first delay after Reset = %v, want the Initial ceiling 1ms", d)
	}
}

// Every delay lies in [0, ceiling], and the delays of one ceiling spread
// over the whole range: full jitter, not a fixed delay with a little noise.
// Seeds 1 to 5, each printed.
func TestDelaysSpreadOverTheWholeRange(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		t.Logf("seed %d", seed)
		b := Backoff{Initial: time.Second, Max: time.Second, Rand: rand.New(rand.NewPCG(seed, seed))}
		const n = 2000
		var buckets [10]int
		for range n {
			d := b.Next()
			if d < 0 || d > time.Second {
				t.Fatalf("seed %d: delay %v outside [0, 1s]", seed, d)
			}
			buckets[min(int(d*10/time.Second), 9)]++
		}
		// Each tenth of the range expects 200 draws; fewer than 100 in one
		// would be far off a uniform draw.
		for i, c := range buckets {
			if c < 100 {
				t.Fatalf("seed %d: tenth %d of the range got %d of %d delays: %v", seed, i, c, n, buckets)
			}
		}
	}
}

// The same seed gives the same delays: a test can pin them.
func TestSeededSourceIsDeterministic(t *testing.T) {
	run := func() []time.Duration {
		b := Backoff{Rand: rand.New(rand.NewPCG(7, 7))}
		out := make([]time.Duration, 12)
		for i := range out {
			out[i] = b.Next()
		}
		return out
	}
	a, b := run(), run()
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("two runs with seed 7 differ at delay %d: %v and %v", i, a, b)
		}
	}
}

// Many loops that fail at the same moment retry at different moments.
func TestLoopsDoNotRetryInLockstep(t *testing.T) {
	src := rand.New(rand.NewPCG(42, 42))
	seen := map[time.Duration]bool{}
	for range 50 {
		b := Backoff{Rand: src} // one source shared in turn, as the process-wide one is
		for range 4 {
			b.Next()
		}
		seen[b.Next()] = true // the fifth retry of each loop, ceiling 160ms
	}
	if len(seen) < 45 {
		t.Fatalf("50 loops chose only %d distinct fifth delays", len(seen))
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		b    Backoff
		want string // "" for valid
	}{
		{Backoff{}, ""},
		{Backoff{Initial: time.Millisecond}, ""},
		{Backoff{Initial: 2 * time.Second}, ""}, // Max 0 follows Initial
		{Backoff{Initial: time.Millisecond, Max: time.Millisecond}, ""},
		{Backoff{Initial: -1}, "backoff: invalid config: Initial -1ns is negative"},
		{Backoff{Max: -time.Second}, "backoff: invalid config: Max -1s is negative"},
		{Backoff{Initial: time.Second, Max: time.Millisecond}, "backoff: invalid config: Initial 1s is over Max 1ms"},
	}
	for _, tt := range tests {
		err := tt.b.Validate()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%+v: %v, want valid", tt.b, err)
		case tt.want != "" && (err == nil || err.Error() != tt.want || !errors.Is(err, ErrInvalidConfig)):
			t.Errorf("%+v: %v, want %q", tt.b, err, tt.want)
		}
	}
}

// Invalid fields never produce a negative delay: they count as zero.
func TestInvalidFieldsStillGiveValidDelays(t *testing.T) {
	got := ceilings(Backoff{Initial: -5, Max: -5}, 2)
	if got[0] != DefaultInitial || got[1] != 2*DefaultInitial {
		t.Fatalf("ceilings %v, want the defaults", got)
	}
}

func TestSleep(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	if err := Sleep(ctx, time.Millisecond); err != nil {
		t.Fatalf("Sleep: %v", err)
	}
	cancel()
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep under a cancelled context = %v, want context.Canceled", err)
	}
	if err := Sleep(ctx, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep(0) under a cancelled context = %v, want context.Canceled", err)
	}
}
