package workflow

// RegisterOptions configure worker.RegisterWorkflowWithOptions.
type RegisterOptions struct {
	// Name is the workflow type; "" means the function's name
	// (ActivityName).
	Name string
	// DisableAlreadyRegisteredCheck lets a name be registered again,
	// replacing the earlier function. heddle never refuses a second
	// registration (the last one wins), so this changes nothing.
	DisableAlreadyRegisteredCheck bool
}

// DynamicRegisterOptions configure worker.RegisterDynamicWorkflow; it has
// no options yet.
type DynamicRegisterOptions struct{}
