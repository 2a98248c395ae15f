package engine

import "context"

// ResourceWaiterReader lists the steps waiting in the resource queue.
// *embedded.Engine implements it; package engine/httpapi serves it (GET
// /v1/resources/waiters) and implements it over HTTP. It is apart from
// Service so that a Service written before the waiter list still is one.
// Safe for concurrent use.
type ResourceWaiterReader interface {
	// ResourceWaiters returns up to limit steps waiting for a resource
	// unit (0: MaxPage), first come first.
	ResourceWaiters(ctx context.Context, limit int) ([]ResourceWaiter, error)
}

// ResourceWaiter is one step in the resource waiter queue: what it needs
// of a resource, and where it stands in the queue.
type ResourceWaiter struct {
	// Seq is the step's place in the queue; lower is served first.
	Seq      uint64 `json:"seq" msgpack:"q"`
	Job      JobID  `json:"job_id" msgpack:"j"`
	Step     string `json:"step" msgpack:"s"`
	Activity string `json:"activity,omitempty" msgpack:"n,omitempty"`
	// Attempt is the try that waits.
	Attempt      uint32            `json:"attempt,omitempty" msgpack:"a,omitempty"`
	Capabilities []string          `json:"capabilities,omitempty" msgpack:"cp,omitempty"`
	Selector     map[string]string `json:"selector,omitempty" msgpack:"sl,omitempty"`
	// Avoid lists the resources that failed the step, which it is never
	// leased again.
	Avoid []string `json:"avoid,omitempty" msgpack:"av,omitempty"`
	// UpdatedMS is the step record's last write: when it began to wait.
	UpdatedMS int64 `json:"updated_ms" msgpack:"up"`
}

// ResourceWaitersPage is the HTTP API's answer listing the waiter queue.
type ResourceWaitersPage struct {
	Waiters []ResourceWaiter `json:"waiters" msgpack:"w"`
}
