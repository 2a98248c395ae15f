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
