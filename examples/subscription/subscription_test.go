package main

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/suite"

	"github.com/heddlewf/heddle/sdk/testsuite"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// BillingSuite tests Billing the way Temporal's samples test workflows: a
// testify suite with a fresh test environment per test, activities
// mocked, and every expectation checked after each test.
type BillingSuite struct {
	suite.Suite
	testsuite.WorkflowTestSuite
	env *testsuite.TestWorkflowEnvironment
}

func TestBilling(t *testing.T) { suite.Run(t, new(BillingSuite)) }

const month = 30 * 24 * time.Hour

var signedUp = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func (s *BillingSuite) SetupTest() {
	s.env = s.NewTestWorkflowEnvironment()
	s.env.SetStartTime(signedUp)
}

func (s *BillingSuite) AfterTest(suiteName, testName string) { s.env.AssertExpectations(s.T()) }

// A year of monthly charges runs in milliseconds: the clock skips each
// month while the workflow waits.
func (s *BillingSuite) TestAYear() {
	s.env.OnActivity(SendEmail, mock.Anything, "ann", "welcome").Return(nil).Once()
	s.env.OnActivity(Charge, mock.Anything, "ann", 999).Return("receipt", nil).Times(12)
	s.env.OnActivity(SendEmail, mock.Anything, "ann", "goodbye").Return(nil).Once()
	s.env.ExecuteWorkflow(Billing, Plan{Customer: "ann", Period: month, MaxCharges: 12, Cents: 999})
	s.True(s.env.IsWorkflowCompleted())
	var charges int
	s.NoError(s.env.GetWorkflowResult(&charges))
	s.Equal(12, charges)
	s.Equal(signedUp.Add(12*month), s.env.Now())
}

// A "cancel" signal ends the billing: sent from a delayed callback two
// and a half months in, after a query.
func (s *BillingSuite) TestCancel() {
	s.env.OnActivity(SendEmail, mock.Anything, "bob", mock.Anything).Return(nil).Twice()
	s.env.OnActivity(Charge, mock.Anything, "bob", 500).Return("receipt", nil).Twice()
	s.env.RegisterDelayedCallback(func() {
		v, err := s.env.QueryWorkflow("charges")
		s.Require().NoError(err)
		var n int
		s.NoError(v.Get(&n))
		s.Equal(2, n)
		s.env.SignalWorkflow("cancel", nil)
	}, 75*24*time.Hour)
	s.env.ExecuteWorkflow(Billing, Plan{Customer: "bob", Period: month, MaxCharges: 12, Cents: 500})
	var charges int
	s.NoError(s.env.GetWorkflowResult(&charges))
	s.Equal(2, charges)
}

// A declined card fails the charge for good on its third try; the retries
// wait a minute, then two, on the skipping clock.
func (s *BillingSuite) TestDeclined() {
	s.env.OnActivity(SendEmail, mock.Anything, "cy", "welcome").Return(nil).Once()
	s.env.OnActivity(Charge, mock.Anything, "cy", mock.Anything).Return("", errors.New("card declined")).Times(3)
	s.env.ExecuteWorkflow(Billing, Plan{Customer: "cy", Period: month, MaxCharges: 12, Cents: 100})
	var ae *workflow.ApplicationError
	s.Require().ErrorAs(s.env.GetWorkflowError(), &ae)
	s.Contains(ae.Message(), "card declined")
	s.Equal(signedUp.Add(month+3*time.Minute), s.env.Now())
}
