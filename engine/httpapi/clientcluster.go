package httpapi

import (
	"context"
	"net/http"
)

var _ Cluster = (*Client)(nil)

// Status implements Cluster: the status of the node that answers.
func (c *Client) Status(ctx context.Context) (ClusterStatus, error) {
	var st ClusterStatus
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/cluster", out: &st})
	return st, err
}

// Join implements Cluster; any node forwards it to the leader.
func (c *Client) Join(ctx context.Context, id, raftAddr, httpAddr string) error {
	return c.do(ctx, request{method: http.MethodPost, path: "/v1/cluster/members", command: true,
		body: &ClusterMember{ID: id, RaftAddr: raftAddr, HTTPAddr: httpAddr, Voter: true}})
}

// Remove implements Cluster; any node forwards it to the leader.
func (c *Client) Remove(ctx context.Context, id string) error {
	return c.do(ctx, request{method: http.MethodDelete, path: "/v1/cluster/members/" + escapeSegment(id), command: true})
}

// TransferLeader implements Cluster; any node forwards it to the leader.
func (c *Client) TransferLeader(ctx context.Context) error {
	return c.do(ctx, request{method: http.MethodPost, path: "/v1/cluster/leader/transfer", command: true})
}
