package httpapi

import (
	"errors"
	"testing"

	"github.com/heddlewf/heddle/engine"
)

// unheldSet is a node of a cluster of two shards that holds neither.
type unheldSet struct{}

func (unheldSet) ShardCount() int                    { return 2 }
func (unheldSet) ShardEngine(int) engine.Service     { return nil }
func (unheldSet) LeadsShard(int) bool                { return false }
func (unheldSet) ShardLeader(k int) (string, string) { return "n1", "127.0.0.1:1" }
func (unheldSet) ShardReplicas(int) []string         { return []string{"127.0.0.1:1", "127.0.0.1:2"} }
func (unheldSet) NoteShardLeader(int, string)        {}
func (unheldSet) ShardsChanged() <-chan struct{}     { return nil }
func (unheldSet) ShardMap() engine.ShardMap          { return engine.ShardMap{} }
func (unheldSet) PlacementVersion() uint64           { return 1 }

// A request for a shard the node holds no replica of is forwarded with
// the shard it belongs to, and the node that takes it teaches the shard's
// leader; a create whose shard is a turn does not, since the node it goes
// to takes a turn of its own.
func TestUnheldShardTeachesOnlyItsOwnShard(t *testing.T) {
	r := NewShardRouter(unheldSet{})
	for _, tc := range []struct {
		name    string
		cmd     engine.Command
		teaches bool
	}{
		{"a create naming its workflow id", &engine.CreateJob{WorkflowID: "wf-1", Type: "t", Queue: "q"}, true},
		{"a create naming its request id", &engine.CreateJob{Header: engine.Header{RequestID: "r-1"}, Type: "t", Queue: "q"}, true},
		{"a create naming neither", &engine.CreateJob{Type: "t", Queue: "q"}, false},
		{"a signal", &engine.Signal{Target: engine.Target{WorkflowID: "wf-1"}, Name: "s"}, true},
	} {
		_, err := r.of(tc.cmd)
		var unheld *unheldShardError
		if !errors.As(err, &unheld) || !errors.Is(err, engine.ErrNotLeader) {
			t.Fatalf("%s: %v, want the not-leader error of a shard this node does not hold", tc.name, err)
		}
		if unheld.teaches != tc.teaches {
			t.Errorf("%s: teaches %v, want %v", tc.name, unheld.teaches, tc.teaches)
		}
	}
}
