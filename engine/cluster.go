package engine

// ClusterStatus is one node's view of its cluster, as a Raft node reports
// it and the HTTP API serves it. The engine defines it so that the node
// (raftfsm) and the API (engine/httpapi) share it without knowing each
// other.
type ClusterStatus struct {
	ID           string          `json:"id" msgpack:"id"`
	State        string          `json:"state" msgpack:"state"` // "Leader", "Follower", "Candidate", ...
	Term         uint64          `json:"term" msgpack:"term"`
	LeaderID     string          `json:"leader_id,omitempty" msgpack:"leader_id,omitempty"`
	LeaderHTTP   string          `json:"leader_http,omitempty" msgpack:"leader_http,omitempty"`
	CommitIndex  uint64          `json:"commit_index,omitempty" msgpack:"commit_index,omitempty"`
	AppliedIndex uint64          `json:"applied_index" msgpack:"applied_index"`
	LastIndex    uint64          `json:"last_index,omitempty" msgpack:"last_index,omitempty"`
	Members      []ClusterMember `json:"members,omitempty" msgpack:"members,omitempty"`
	// ShardCount, PlacementVersion and Shards describe a sharded cluster
	// (docs/sharding.md); they are empty on a cluster of one Raft group.
	// The fields above then describe the metadata group, and Shards the
	// shards this node holds a replica of.
	ShardCount       int           `json:"shard_count,omitempty" msgpack:"shard_count,omitempty"`
	PlacementVersion uint64        `json:"placement_version,omitempty" msgpack:"placement_version,omitempty"`
	Shards           []ShardStatus `json:"shards,omitempty" msgpack:"shards,omitempty"`
}

// IsLeader reports whether the node that gave the status leads.
func (s ClusterStatus) IsLeader() bool { return s.ID != "" && s.LeaderID == s.ID }

// ClusterMember is one member of a cluster, and the body of a join.
type ClusterMember struct {
	ID       string `json:"id" msgpack:"id"`
	RaftAddr string `json:"raft_addr" msgpack:"raft_addr"`
	HTTPAddr string `json:"http_addr,omitempty" msgpack:"http_addr,omitempty"`
	Voter    bool   `json:"voter,omitempty" msgpack:"voter,omitempty"`
	Leader   bool   `json:"leader,omitempty" msgpack:"leader,omitempty"`
}

// ShardStatus is one node's view of one shard of a sharded cluster: its
// Raft group as this node's replica sees it, and the placement's wishes
// for it. A node reports the shards it holds a replica of; the lag of a
// replica is its leader's CommitIndex less its own AppliedIndex.
type ShardStatus struct {
	Shard int `json:"shard" msgpack:"shard"`
	// State is this node's replica's Raft state ("Leader", "Follower", …).
	State        string `json:"state" msgpack:"state"`
	Term         uint64 `json:"term" msgpack:"term"`
	LeaderID     string `json:"leader_id,omitempty" msgpack:"leader_id,omitempty"`
	LeaderHTTP   string `json:"leader_http,omitempty" msgpack:"leader_http,omitempty"`
	CommitIndex  uint64 `json:"commit_index,omitempty" msgpack:"commit_index,omitempty"`
	AppliedIndex uint64 `json:"applied_index" msgpack:"applied_index"`
	LastIndex    uint64 `json:"last_index,omitempty" msgpack:"last_index,omitempty"`
	// Replicas are the nodes the placement puts the shard on, and
	// DesiredLeader the one it wants to lead it (leaders spread over the
	// nodes); the nodes hand leadership there when they can.
	Replicas      []string `json:"replicas,omitempty" msgpack:"replicas,omitempty"`
	DesiredLeader string   `json:"desired_leader,omitempty" msgpack:"desired_leader,omitempty"`
	// MoveFrom and MoveTo are set while a replica of the shard moves from
	// one node to another (docs/sharding.md, "Moving a replica"); MoveTo's
	// replica is not in Replicas until the move ends.
	MoveFrom string `json:"move_from,omitempty" msgpack:"move_from,omitempty"`
	MoveTo   string `json:"move_to,omitempty" msgpack:"move_to,omitempty"`
	// MoveCancelling: an operator cancelled the move, and the shard's
	// leader is taking MoveTo out of the group again.
	MoveCancelling bool `json:"move_cancelling,omitempty" msgpack:"move_cancelling,omitempty"`
}

// ShardMap is what a client needs to route by shard (GET
// /v1/cluster/shards): the shard count, the nodes' HTTP addresses and, per
// shard, the node the answering node believes leads it. Version is the
// placement's; a client refreshes its map when a node reports a newer one,
// or when a request it routed by the map had to be forwarded.
type ShardMap struct {
	Version uint64      `json:"version" msgpack:"version"`
	Shards  int         `json:"shards" msgpack:"shards"`
	Nodes   []ShardNode `json:"nodes" msgpack:"nodes"`
	// Leaders holds, for each shard in order, the id of its leader as
	// the answering node knows it: the Raft leader where it holds a
	// replica, else the placement's desired leader ("" when unknown).
	Leaders []string `json:"leaders" msgpack:"leaders"`
}

// ShardNode is a node of a ShardMap.
type ShardNode struct {
	ID       string `json:"id" msgpack:"id"`
	HTTPAddr string `json:"http_addr" msgpack:"http_addr"`
}
