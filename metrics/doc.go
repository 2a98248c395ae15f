// Package metrics defines heddle's Prometheus metrics and records them for the engine, the Raft node, the worker and the HTTP API.
//
// One *Metrics holds every family, registered on the prometheus.Registerer
// given to New. Pass it to embedded.Config.Metrics, raftfsm.Config.Metrics,
// worker.Options.Metrics and httpapi.ServerConfig.Metrics; a nil *Metrics
// (the zero value of those fields) records nothing and costs nothing, and
// every method here is a no-op on a nil receiver.
//
// Labels are few and bounded: command kinds, statuses, task queues,
// registered workflow and activity types, route patterns, status codes.
// No label ever carries a job id, a workflow id or a step, so the number
// of series does not grow with the work done.
//
// Use one Metrics per engine or node. A process that runs several nodes
// (tests, "heddle cluster up") gives each its own registry, or wraps one
// registry with prometheus.WrapRegistererWith and a node label.
package metrics
