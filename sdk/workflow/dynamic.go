package workflow

// DynamicRegisterOptions configure worker.RegisterDynamicWorkflow.
type DynamicRegisterOptions struct {
	// LoadDynamicRuntimeOptions, as Temporal's, gives the runtime options
	// of a workflow type the dynamic workflow runs. Temporal's worker asks
	// it for the versioning behavior it reports with each workflow task
	// when worker versioning (deployments, build ids) is on. heddle has no
	// worker versioning, so the worker accepts it and does not call it:
	// nothing it could answer would change how a run is dispatched.
	LoadDynamicRuntimeOptions func(details LoadDynamicRuntimeOptionsDetails) (DynamicRuntimeOptions, error)
}

// LoadDynamicRuntimeOptionsDetails is what LoadDynamicRuntimeOptions is
// asked about: the workflow type.
type LoadDynamicRuntimeOptionsDetails struct {
	WorkflowType Type
}

// DynamicRuntimeOptions are the runtime options of a type a dynamic
// workflow runs.
type DynamicRuntimeOptions struct {
	// VersioningBehavior is the type's versioning behavior under worker
	// versioning, which heddle does not have (see VersioningBehavior).
	VersioningBehavior VersioningBehavior
}

// VersioningBehavior says, under Temporal's worker versioning, whether a
// run stays on the build it started on or moves to the newest. heddle has
// no worker versioning (every worker of a queue may take any run, and
// workflow.GetVersion is how code changes safely), so the values are
// accepted for code that sets them and have no effect.
type VersioningBehavior int

// The versioning behaviors, with Temporal's values.
const (
	// VersioningBehaviorUnspecified leaves the behavior to the worker's
	// default.
	VersioningBehaviorUnspecified VersioningBehavior = iota
	// VersioningBehaviorPinned keeps a run on the build it started on.
	VersioningBehaviorPinned
	// VersioningBehaviorAutoUpgrade moves a run to the newest build at its
	// next workflow task.
	VersioningBehaviorAutoUpgrade
)
