package activity

// DynamicRegisterOptions configure worker.RegisterDynamicActivity; it has
// no options yet, as in Temporal.
type DynamicRegisterOptions struct{}
