package activity

// RegisterOptions configure the registration of an activity function, or
// of every exported method of a struct, as Temporal's
// activity.RegisterOptions do.
type RegisterOptions struct {
	// Name is the activity type a function runs as; "" means the name
	// derived from the function. For a struct it is a prefix put before
	// each method's name.
	Name string
	// DisableAlreadyRegisteredCheck lets a registration replace an earlier
	// one of the same name instead of panicking.
	DisableAlreadyRegisteredCheck bool
	// SkipInvalidStructFunctions, for a struct, skips the exported methods
	// that are not activities (that do not return error or (T, error))
	// instead of panicking.
	SkipInvalidStructFunctions bool
}
