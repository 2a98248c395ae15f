// Package temporal holds what workflow and activity code share for failing and retrying, shaped like Temporal's go.temporal.io/sdk/temporal: the typed errors, their constructors and the retry policy.
//
// The errors cross a workflow's history as failure payloads and come back
// as the same types: an activity that returns NewApplicationError("declined",
// "CardDeclined", details) fails its workflow's future with an
// *ActivityError whose cause is an *ApplicationError of type "CardDeclined"
// with those details, and a client's WorkflowRun.Get of a failed run returns
// a *WorkflowExecutionError wrapping what the workflow returned. Match them
// with errors.As, as in Temporal.
package temporal
