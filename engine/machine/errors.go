package machine

import (
	"fmt"

	"github.com/heddlewf/heddle/engine"
)

func unknownJob(id engine.JobID) error { return fmt.Errorf("%w: %d", engine.ErrUnknownJob, id) }

func unknownTask(t engine.TaskTarget) error { return fmt.Errorf("%w: %s", engine.ErrUnknownTask, t) }
