package workflow

// RegisterOptions configure the registration of a workflow function, as
// Temporal's workflow.RegisterOptions do.
type RegisterOptions struct {
	// Name is the workflow type the function runs as; "" means the name
	// derived from the function (as ActivityName derives it).
	Name string
	// DisableAlreadyRegisteredCheck lets a registration replace an earlier
	// one of the same name instead of panicking.
	DisableAlreadyRegisteredCheck bool
}
