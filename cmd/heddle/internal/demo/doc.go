// Package demo holds what the workers of "heddle demo" run: the order saga
// (OrderWorkflow with its child ShipmentWorkflow, and the shop's activities,
// into which the demo injects faults), the steps scenario (ListingWorkflow:
// a critic, a pool of browsers with a broken one, a captcha for a person),
// and the review demo (ReviewPipeline, its agent and its reviewer).
//
// It is plain workflow and activity code against the SDK, apart from the
// commands that run it: package main in cmd/heddle parses the flags, starts
// the engine, the workers and the runs, plays the people, checks the story
// and prints it, so what a workflow author would write is read here alone.
package demo
