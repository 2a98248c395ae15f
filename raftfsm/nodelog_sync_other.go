//go:build !linux

package raftfsm

import "os"

// datasync makes f's written bytes durable.
func datasync(f *os.File) error { return f.Sync() }
