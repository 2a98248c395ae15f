// Package replay executes workflow code deterministically from its history:
// a dispatcher that runs the code's coroutines one at a time, the matching of
// what the code does against what the history recorded, typed
// nondeterminism errors, effect catch-up and the cache of live workflows.
package replay
