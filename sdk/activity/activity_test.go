package activity

import (
	"context"
	"strings"
	"testing"
)

// Outside an activity run by a worker there is no activity: IsActivity
// says so, and the rest panics with the reason.
func TestOutsideAnActivity(t *testing.T) {
	ctx := context.Background()
	if IsActivity(ctx) {
		t.Fatal("a bare context is an activity's")
	}
	defer func() {
		if p := recover(); p == nil || !strings.Contains(p.(string), "does not belong to an activity") {
			t.Fatalf("panic %v", p)
		}
	}()
	GetInfo(ctx)
}
