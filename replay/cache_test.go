package replay

import (
	"testing"

	"github.com/heddlewf/heddle/engine"
)

func blockedExecution(t *testing.T, job engine.JobID, closed *int) *Execution {
	t.Helper()
	x := NewExecution(job, func(x *Execution, _ []byte) {
		defer func() { *closed++ }()
		x.Dispatcher().Block(func() bool { return false })
	})
	if err := x.Advance([]engine.Event{{Seq: 1, Type: engine.EventJobCreated}}, false); err != nil {
		t.Fatal(err)
	}
	return x
}

func TestCacheBoundAndOwnership(t *testing.T) {
	closed := 0
	c := NewCache(2)
	for job := engine.JobID(1); job <= 3; job++ {
		c.Put(blockedExecution(t, job, &closed))
	}
	if c.Len() != 2 || closed != 1 {
		t.Fatalf("len %d, closed %d; want 2 kept and the oldest closed", c.Len(), closed)
	}
	if c.Take(1) != nil {
		t.Fatal("the least recently used execution was kept")
	}
	x := c.Take(2)
	if x == nil || x.Job != 2 || c.Len() != 1 {
		t.Fatal("take did not hand out job 2")
	}
	if c.Take(2) != nil {
		t.Fatal("an execution was handed out twice")
	}
	c.Put(x)
	c.Evict(3)
	if c.Len() != 1 || closed != 2 {
		t.Fatalf("after evict: len %d, closed %d", c.Len(), closed)
	}
	off := NewCache(0)
	off.Put(blockedExecution(t, 9, &closed))
	if off.Len() != 0 || closed != 3 {
		t.Fatal("a disabled cache kept an execution")
	}
}
