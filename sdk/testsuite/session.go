package testsuite

import (
	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/internal/sdkhook"
)

// cannotRunHint says what a test must do for a job no worker of the
// environment can run: a session's creation task needs a worker with
// sessions enabled (workflow.CreateSession), anything else a registration.
func cannotRunHint(jobType string) string {
	if jobType == engine.ActivityTypePrefix+sdkhook.SessionCreationActivity {
		return "workflow.CreateSession needs a worker that accepts sessions: env.SetWorkerOptions(worker.Options{EnableSessionWorker: true})"
	}
	return "register it with the TestWorkflowEnvironment"
}

// sessionQueues lists the queues w's session side serves: the environment
// counts them as served by w rather than start workers of its own there.
func sessionQueues(w any) []string {
	if s, ok := w.(interface{ SessionQueues() []string }); ok {
		return s.SessionQueues()
	}
	return nil
}

// ShortSessions marks the environment's workers as ones whose sessions end
// their creation activity once created (sdkhook.ShortSessions).
func (workerClock) ShortSessions() {}
