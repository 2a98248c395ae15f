package mocks_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/mock"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/mocks"
)

type request struct{ ID string }

// The pattern of Temporal's request/response samples: an expectation with
// a Run callback that sees the arguments, and an error result.
func TestExpectationRunsAndReturns(t *testing.T) {
	c := mocks.NewClient(t)
	var seen *request
	c.On("SignalWorkflow", mock.Anything, "wf", "", "request", mock.AnythingOfType("*mocks_test.request")).
		Return(nil).
		Run(func(args mock.Arguments) { seen = args.Get(4).(*request) }).
		Once()
	c.On("SignalWorkflow", mock.Anything, "wf", "", "request", mock.Anything).Return(errors.New("full"))
	var cl client.Client = c
	if err := cl.SignalWorkflow(context.Background(), "wf", "", "request", &request{ID: "r1"}); err != nil {
		t.Fatalf("first signal: %v", err)
	}
	if seen == nil || seen.ID != "r1" {
		t.Fatalf("Run saw %+v", seen)
	}
	if err := cl.SignalWorkflow(context.Background(), "wf", "", "request", &request{ID: "r2"}); err == nil || err.Error() != "full" {
		t.Fatalf("second signal: %v, want full", err)
	}
	c.AssertNumberOfCalls(t, "SignalWorkflow", 2)
}

// A variadic method's arguments are matched one by one, and a result may
// be another mock.
func TestVariadicArgumentsAndMockResults(t *testing.T) {
	c := mocks.NewClient(t)
	v := mocks.NewValue(t)
	v.On("Get", mock.AnythingOfType("*string")).Return(nil).Run(func(args mock.Arguments) {
		*args.Get(0).(*string) = "ready"
	})
	c.On("QueryWorkflow", mock.Anything, "wf", "", "state", "verbose", 2).Return(v, nil)
	got, err := c.QueryWorkflow(context.Background(), "wf", "", "state", "verbose", 2)
	if err != nil {
		t.Fatal(err)
	}
	var s string
	if err := got.Get(&s); err != nil || s != "ready" {
		t.Fatalf("Get = %q, %v", s, err)
	}
}

// Return(nil, err) gives the nil of the result's type: a nil interface,
// not an interface holding a nil pointer, and a nil pointer.
func TestNilResultsAreTypedNils(t *testing.T) {
	c := mocks.NewClient(t)
	c.On("ExecuteWorkflow", mock.Anything, mock.Anything, "Greet", "x").Return(nil, errors.New("refused"))
	c.On("DescribeWorkflow", mock.Anything, "gone", "").Return(nil, nil)
	c.On("DescribeWorkflow", mock.Anything, "typed", "").Return((*engine.Job)(nil), nil)
	c.On("ScheduleClient").Return(nil)
	run, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{}, "Greet", "x")
	if run != nil || err == nil {
		t.Fatalf("ExecuteWorkflow = %#v, %v; want a nil WorkflowRun and an error", run, err)
	}
	for _, id := range []string{"gone", "typed"} {
		if job, err := c.DescribeWorkflow(context.Background(), id, ""); job != nil || err != nil {
			t.Fatalf("DescribeWorkflow(%s) = %v, %v", id, job, err)
		}
	}
	if sc := c.ScheduleClient(); sc != nil {
		t.Fatalf("ScheduleClient = %#v, want nil", sc)
	}
}

// A result may be a function of the arguments: one per result, or one
// giving all of them.
func TestFunctionResults(t *testing.T) {
	c := mocks.NewClient(t)
	c.On("GetWorkflow", mock.Anything, mock.Anything, mock.Anything).Return(
		func(_ context.Context, id, runID string) client.WorkflowRun {
			r := &mocks.WorkflowRun{}
			r.On("GetID").Return(id)
			return r
		})
	c.On("ListSteps", mock.Anything, mock.Anything, mock.Anything).Return(
		func(_ context.Context, id, _ string) ([]engine.StepInfo, error) {
			return nil, fmt.Errorf("no steps for %s", id)
		})
	if id := c.GetWorkflow(context.Background(), "wf-3", "").GetID(); id != "wf-3" {
		t.Fatalf("GetID = %q", id)
	}
	if _, err := c.ListSteps(context.Background(), "wf-4", ""); err == nil || err.Error() != "no steps for wf-4" {
		t.Fatalf("ListSteps error %v", err)
	}
}

func TestExpectationWithoutReturnPanicsNamingTheMethod(t *testing.T) {
	r := &mocks.WorkflowRun{}
	r.On("GetRunID")
	defer func() {
		if p := recover(); p == nil || !strings.Contains(fmt.Sprint(p), "GetRunID") {
			t.Fatalf("panic %v, want one naming GetRunID", p)
		}
	}()
	r.GetRunID()
}

// fakeT is the part of testing.T the constructors use, recording failures.
type fakeT struct {
	errors   []string
	cleanups []func()
}

func (f *fakeT) Logf(format string, args ...any) {}
func (f *fakeT) Errorf(format string, args ...any) {
	f.errors = append(f.errors, fmt.Sprintf(format, args...))
}
func (f *fakeT) FailNow()          { f.errors = append(f.errors, "FailNow") }
func (f *fakeT) Cleanup(fn func()) { f.cleanups = append(f.cleanups, fn) }

func TestConstructorAssertsExpectationsAtCleanup(t *testing.T) {
	ft := &fakeT{}
	c := mocks.NewClient(ft)
	c.On("CancelWorkflow", mock.Anything, "wf", "").Return(nil)
	if len(ft.cleanups) != 1 {
		t.Fatalf("%d cleanups registered, want 1", len(ft.cleanups))
	}
	ft.cleanups[0]()
	if len(ft.errors) == 0 {
		t.Fatal("an unmet expectation did not fail the test")
	}
	ft = &fakeT{}
	c = mocks.NewClient(ft)
	c.On("CancelWorkflow", mock.Anything, "wf", "").Return(nil)
	_ = c.CancelWorkflow(context.Background(), "wf", "")
	ft.cleanups[0]()
	if len(ft.errors) != 0 {
		t.Fatalf("a met expectation failed the test: %q", ft.errors)
	}
}
