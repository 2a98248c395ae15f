// Package testsuite runs workflows and activities in unit tests, shaped like
// Temporal's go.temporal.io/sdk/testsuite, on heddle's real in-memory engine
// and worker, with mocked activities and child workflows and a clock that
// skips ahead while every run waits.
package testsuite
