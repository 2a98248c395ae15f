package engine

import "fmt"

// Limits bound what one command may carry. Apply enforces them, so in a
// cluster every node must run with the same Limits. The zero value is valid:
// each zero field takes its documented default.
type Limits struct {
	// MaxPayloadBytes bounds any single payload (input, event payload, effect,
	// result). 0 means 1 MiB. It must stay below what one storage batch holds.
	MaxPayloadBytes int
	// MaxNameBytes bounds every name: workflow id, type, queue, step, signal,
	// timer id, owner, request id, event type. 0 means 256.
	MaxNameBytes int
	// MaxEventsPerAppend bounds the events of one append. 0 means 1000.
	MaxEventsPerAppend int
	// MaxBatch bounds the jobs one claim, heartbeat, timer firing, reclaim or
	// release handles. 0 means 1000.
	MaxBatch int
	// MaxLeaseMS bounds a lease's length. 0 means one hour.
	MaxLeaseMS int64
	// RequestRetentionMS is how long the result of a request id is kept to
	// answer retries. 0 means one hour.
	RequestRetentionMS int64
}

// WithDefaults returns l with each zero field set to its default.
func (l Limits) WithDefaults() Limits {
	if l.MaxPayloadBytes == 0 {
		l.MaxPayloadBytes = 1 << 20
	}
	if l.MaxNameBytes == 0 {
		l.MaxNameBytes = 256
	}
	if l.MaxEventsPerAppend == 0 {
		l.MaxEventsPerAppend = 1000
	}
	if l.MaxBatch == 0 {
		l.MaxBatch = 1000
	}
	if l.MaxLeaseMS == 0 {
		l.MaxLeaseMS = 3600_000
	}
	if l.RequestRetentionMS == 0 {
		l.RequestRetentionMS = 3600_000
	}
	return l
}

// Validate reports the first field that is negative or out of range.
func (l Limits) Validate() error {
	switch {
	case l.MaxPayloadBytes < 0 || l.MaxPayloadBytes > 64<<20:
		return fmt.Errorf("%w: Limits.MaxPayloadBytes %d is not in [0, 64 MiB]", ErrInvalidCommand, l.MaxPayloadBytes)
	case l.MaxNameBytes < 0 || l.MaxNameBytes > 4096:
		return fmt.Errorf("%w: Limits.MaxNameBytes %d is not in [0, 4096]", ErrInvalidCommand, l.MaxNameBytes)
	case l.MaxEventsPerAppend < 0:
		return fmt.Errorf("%w: Limits.MaxEventsPerAppend %d is negative", ErrInvalidCommand, l.MaxEventsPerAppend)
	case l.MaxBatch < 0:
		return fmt.Errorf("%w: Limits.MaxBatch %d is negative", ErrInvalidCommand, l.MaxBatch)
	case l.MaxLeaseMS < 0:
		return fmt.Errorf("%w: Limits.MaxLeaseMS %d is negative", ErrInvalidCommand, l.MaxLeaseMS)
	case l.RequestRetentionMS < 0:
		return fmt.Errorf("%w: Limits.RequestRetentionMS %d is negative", ErrInvalidCommand, l.RequestRetentionMS)
	}
	return nil
}
