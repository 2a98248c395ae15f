package activity

import (
	"context"

	"github.com/heddlewf/heddle/internal/sdkhook"
	"github.com/heddlewf/heddle/sdk/log"
)

// outbound is the method set of interceptor.ActivityOutboundInterceptor that
// this package calls (it cannot import sdk/interceptor, which imports it).
// The worker puts an activity's outbound chain in its context only when it
// has interceptors; without them each function calls its implementation.
type outbound interface {
	GetInfo(ctx context.Context) Info
	GetLogger(ctx context.Context) log.Logger
	RecordHeartbeat(ctx context.Context, details ...any)
	HasHeartbeatDetails(ctx context.Context) bool
	GetHeartbeatDetails(ctx context.Context, d ...any) error
	GetWorkerStopChannel(ctx context.Context) <-chan struct{}
}

func outboundOf(ctx context.Context) outbound {
	o, _ := ctx.Value(sdkhook.ActivityOutboundKey{}).(outbound)
	return o
}

func init() { sdkhook.ActivityOutboundRoot = rootOutbound{} }

// rootOutbound ends every activity outbound chain.
type rootOutbound struct{}

func (rootOutbound) GetInfo(ctx context.Context) Info         { return envOf(ctx).Info() }
func (rootOutbound) GetLogger(ctx context.Context) log.Logger { return getLogger(ctx) }
func (rootOutbound) RecordHeartbeat(ctx context.Context, details ...any) {
	recordHeartbeat(ctx, details...)
}
func (rootOutbound) HasHeartbeatDetails(ctx context.Context) bool {
	return len(envOf(ctx).HeartbeatDetails()) > 0
}
func (rootOutbound) GetHeartbeatDetails(ctx context.Context, d ...any) error {
	return getHeartbeatDetails(ctx, d...)
}
func (rootOutbound) GetWorkerStopChannel(ctx context.Context) <-chan struct{} {
	return envOf(ctx).WorkerStop()
}
