// Package storage owns heddle's Badger keyspace: opening the database with
// embedding-friendly settings, the key encoding, the versioned msgpack codecs,
// per-command write buffers, group-commit batches and point-in-time snapshots.
//
// The package knows the shape of every key but nothing of job semantics: it
// never decides whether a write is legal, only how it is laid out and made
// durable. It also guards the files under Badger: Open checks a directory
// before Badger reads it (Check, PlanRepair and Repair for the operator),
// and DB.CheckSpace keeps the free-space reserve that writers respect.
package storage
