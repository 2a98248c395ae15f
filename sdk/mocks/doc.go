// Package mocks holds testify mocks of the client's interfaces, as
// Temporal's go.temporal.io/sdk/mocks does, for testing code that takes a
// client.Client.
//
// Each mock embeds mock.Mock: set expectations with On(method, args...)
// and Return(results...). A variadic method's extra arguments are matched
// one by one, as mockery's mocks match them. Return(nil, err) gives the
// zero value (a nil interface or pointer) for a nil result, and a result
// may be a function of the method's arguments. NewClient(t) and the other
// constructors assert the expectations when the test ends.
//
// mocks.go is generated from the interfaces by internal/mockgen; a test
// fails when it is out of date, and go generate rewrites it.
package mocks

//go:generate go test -run TestGeneratedFileIsCurrent -update .

import (
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/converter"
)

// Each mock implements its interface: a method added to one of them and
// missing here fails the build of this package.
var (
	_ client.Client               = (*Client)(nil)
	_ client.WorkflowRun          = (*WorkflowRun)(nil)
	_ client.WorkflowUpdateHandle = (*WorkflowUpdateHandle)(nil)
	_ client.ScheduleClient       = (*ScheduleClient)(nil)
	_ client.ScheduleHandle       = (*ScheduleHandle)(nil)
	_ client.ScheduleListIterator = (*ScheduleListIterator)(nil)
	_ converter.EncodedValue      = (*Value)(nil)
	_ converter.EncodedValues     = (*Values)(nil)
)
