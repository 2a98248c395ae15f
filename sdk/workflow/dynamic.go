package workflow

// DynamicRegisterOptions configure worker.RegisterDynamicWorkflow; it has
// no options yet.
type DynamicRegisterOptions struct{}
