package demo

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// The order saga's workflows: plain Go against sdk/workflow. They never read the
// clock or touch the demo's state; everything with an effect is an
// activity, run by a worker, whose result the history keeps.

// shipWindow is the durable timer every order waits before shipping.
const shipWindow = 200 * time.Millisecond

// Order is one order's input.
type Order struct {
	ID     string
	Item   string
	Qty    int
	Amount int // cents
	// NeedsApproval makes the order wait for the signal "approved".
	NeedsApproval bool
}

// orderOptions: short retries so that the transient card failure is
// retried within the demo.
var orderOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 5 * time.Second,
	RetryPolicy: &workflow.RetryPolicy{InitialInterval: 20 * time.Millisecond, BackoffCoefficient: 2,
		MaximumAttempts: 4, NonRetryableErrorTypes: []string{"CardDeclined"}},
}

// acts names the activities for ExecuteActivity: a nil *Shop's method
// values carry the names the workers register them under.
var acts *Shop

// OrderWorkflow is the order saga: reserve, charge, confirm, wait out the
// ship window, wait for approval if the order is large, ship through a child
// workflow, and undo the reservation and the charge if shipping fails.
func OrderWorkflow(ctx workflow.Context, o Order) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, orderOptions)

	var reservation string
	if err := workflow.ExecuteActivity(ctx, acts.ReserveInventory, o).Get(ctx, &reservation); err != nil {
		return "", err
	}
	var charge string
	if err := workflow.ExecuteActivity(ctx, acts.ChargeCard, o).Get(ctx, &charge); err != nil {
		return "", compensate(ctx, o, reservation, "", err)
	}
	if err := workflow.ExecuteActivity(ctx, acts.SendConfirmation, o, charge).Get(ctx, nil); err != nil {
		return "", compensate(ctx, o, reservation, charge, err)
	}
	if err := workflow.Sleep(ctx, shipWindow); err != nil {
		return "", compensate(ctx, o, reservation, charge, err)
	}
	var by string
	if o.NeedsApproval {
		workflow.GetSignalChannel(ctx, "approved").Receive(ctx, &by)
	}
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{WorkflowID: o.ID + "-shipment"})
	var tracking string
	if err := workflow.ExecuteChildWorkflow(cctx, ShipmentWorkflow, o, reservation).Get(ctx, &tracking); err != nil {
		return "", compensate(ctx, o, reservation, charge, err)
	}
	receipt := fmt.Sprintf("shipped %dx %s, %s, tracking %s", o.Qty, o.Item, charge, tracking)
	if by != "" {
		receipt += ", approved by " + by
	}
	return receipt, nil
}

// compensate undoes what the saga did, newest first, and returns the error
// the workflow fails with.
func compensate(ctx workflow.Context, o Order, reservation, charge string, cause error) error {
	var errs []error
	if charge != "" {
		errs = append(errs, workflow.ExecuteActivity(ctx, acts.RefundCard, o, charge).Get(ctx, nil))
	}
	if reservation != "" {
		errs = append(errs, workflow.ExecuteActivity(ctx, acts.ReleaseInventory, o, reservation).Get(ctx, nil))
	}
	// The failure is a new ApplicationError: the history keeps an error's
	// type and message, and a wrapped ApplicationError would stand in for
	// the whole chain (see the worker's failure encoding).
	if err := errors.Join(errs...); err != nil {
		return workflow.NewApplicationError(fmt.Sprintf("compensation failed: %v (after: %v)", err, cause), "CompensationFailed", true)
	}
	return workflow.NewApplicationError("compensated (card refunded, inventory released) after: "+cause.Error(), "OrderCompensated", true)
}

// ShipmentWorkflow is the child: pack, then hand to the carrier.
func ShipmentWorkflow(ctx workflow.Context, o Order, reservation string) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, orderOptions)
	var parcel, tracking string
	if err := workflow.ExecuteActivity(ctx, acts.PackOrder, o, reservation).Get(ctx, &parcel); err != nil {
		return "", err
	}
	if err := workflow.ExecuteActivity(ctx, acts.ShipOrder, o, parcel).Get(ctx, &tracking); err != nil {
		return "", err
	}
	return tracking, nil
}

// Say prints one progress line about the workflow wf. The activities and
// the critic of every worker call it, concurrently.
type Say func(wf, format string, a ...any)

// Faults are the failures the demo injects into the shop's activities.
type Faults struct {
	// ChargeFailures: ChargeCard fails transiently this many times per order.
	ChargeFailures map[string]int
	// ShipFails: ShipOrder fails for good for these orders.
	ShipFails map[string]bool
	// HoldConfirmation: the first SendConfirmation of this order blocks
	// until ReleaseHeld is called; Held is closed when it starts blocking.
	HoldConfirmation string
}

// ShopState is what the activities of every worker share: the execution
// counter and the faults the demo injects.
type ShopState struct {
	say Say

	mu sync.Mutex
	// runs counts executions by idempotency key; what names the key.
	runs  map[string]int
	what  map[string]execKey
	order []string // keys in first-run order
	// faults is only read: it is set before any worker starts.
	faults            Faults
	held, release     chan struct{}
	heldOnce, relOnce sync.Once
}

type execKey struct{ order, workflowID, activity string }

// NewShopState returns the shared state of the shop's activities, which
// print through say and fail as faults says.
func NewShopState(say Say, faults Faults) *ShopState {
	return &ShopState{say: say, runs: map[string]int{}, what: map[string]execKey{}, faults: faults,
		held: make(chan struct{}), release: make(chan struct{})}
}

// Held is closed once the held SendConfirmation (Faults.HoldConfirmation)
// has started and blocks.
func (s *ShopState) Held() <-chan struct{} { return s.held }

// ReleaseHeld lets the held SendConfirmation (and later ones) go on.
func (s *ShopState) ReleaseHeld() { s.relOnce.Do(func() { close(s.release) }) }

// count records one execution and returns how many the key has had.
func (s *ShopState) count(ctx context.Context, o Order) (activity.Info, int) {
	info := activity.GetInfo(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	k := info.IdempotencyKey
	if _, ok := s.what[k]; !ok {
		s.what[k] = execKey{order: o.ID, workflowID: info.WorkflowID, activity: info.ActivityType.Name}
		s.order = append(s.order, k)
	}
	s.runs[k]++
	return info, s.runs[k]
}

// Executions returns how often activity ran for order (summed over keys)
// and under how many keys.
func (s *ShopState) Executions(order, act string) (runs, keys int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, w := range s.what {
		if w.order == order && w.activity == act {
			runs += s.runs[k]
			keys++
		}
	}
	return runs, keys
}

// Counts returns "key activity×n" for each key of order, in first-run order.
func (s *ShopState) Counts(order string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, k := range s.order {
		if w := s.what[k]; w.order == order {
			out = append(out, fmt.Sprintf("%s %s×%d", k, w.activity, s.runs[k]))
		}
	}
	return out
}

// Shop holds the activities; each worker gets its own, named after it.
type Shop struct {
	st     *ShopState
	worker string
}

// NewShop returns the activities of the worker named worker, over st.
func NewShop(st *ShopState, worker string) *Shop { return &Shop{st: st, worker: worker} }

// Register registers every workflow, activity and critic of the demo's
// order sagas and of its steps scenario on w.
func (s *Shop) Register(w worker.Worker) {
	w.RegisterWorkflow(OrderWorkflow)
	w.RegisterWorkflow(ShipmentWorkflow)
	w.RegisterActivity(s.ReserveInventory)
	w.RegisterActivity(s.ChargeCard)
	w.RegisterActivity(s.SendConfirmation)
	w.RegisterActivity(s.PackOrder)
	w.RegisterActivity(s.ShipOrder)
	w.RegisterActivity(s.RefundCard)
	w.RegisterActivity(s.ReleaseInventory)
	s.registerSteps(w)
}

func (s *Shop) say(info activity.Info, o Order, format string, a ...any) {
	where := ""
	if info.WorkflowID != o.ID {
		where = " [child " + info.WorkflowID + "]"
	}
	s.st.say(o.ID, "%-17s attempt %d %s%s (%s)", info.ActivityType.Name, info.Attempt, fmt.Sprintf(format, a...), where, s.worker)
}

// ReserveInventory holds the items.
func (s *Shop) ReserveInventory(ctx context.Context, o Order) (string, error) {
	info, _ := s.st.count(ctx, o)
	r := fmt.Sprintf("RSV-%s-%d%s", o.ID[len(o.ID)-1:], o.Qty, o.Item)
	s.say(info, o, "ok: %s", r)
	return r, nil
}

// ChargeCard charges the customer; the demo makes it fail transiently.
func (s *Shop) ChargeCard(ctx context.Context, o Order) (string, error) {
	info, n := s.st.count(ctx, o)
	if n <= s.st.faults.ChargeFailures[o.ID] {
		s.say(info, o, "FAILED: card network timeout (transient, will be retried)")
		return "", workflow.NewApplicationError("card network timeout", "NetworkTimeout", false)
	}
	c := fmt.Sprintf("CHG-%s-$%d.%02d", o.ID[len(o.ID)-1:], o.Amount/100, o.Amount%100)
	s.say(info, o, "ok: %s", c)
	return c, nil
}

// SendConfirmation mails the customer. The demo holds one order here.
func (s *Shop) SendConfirmation(ctx context.Context, o Order, charge string) error {
	info, n := s.st.count(ctx, o)
	if o.ID == s.st.faults.HoldConfirmation && n == 1 {
		// A hung call to the mail service: it does not watch ctx, so
		// only the demo's go ends it.
		s.say(info, o, "started; the mail service hangs until the demo says go")
		s.st.heldOnce.Do(func() { close(s.st.held) })
		<-s.st.release
		s.say(info, o, "returned late, ctx %v: its result must not count", ctx.Err())
		return nil
	}
	s.say(info, o, "ok: mail sent")
	return nil
}

// PackOrder packs the parcel.
func (s *Shop) PackOrder(ctx context.Context, o Order, reservation string) (string, error) {
	info, _ := s.st.count(ctx, o)
	p := "PCL-" + reservation[4:]
	s.say(info, o, "ok: %s", p)
	return p, nil
}

// ShipOrder hands the parcel to the carrier; the demo makes it fail for
// good for one order.
func (s *Shop) ShipOrder(ctx context.Context, o Order, parcel string) (string, error) {
	info, _ := s.st.count(ctx, o)
	if s.st.faults.ShipFails[o.ID] {
		s.say(info, o, "FAILED: address undeliverable (non-retryable)")
		return "", workflow.NewApplicationError("address undeliverable", "Undeliverable", true)
	}
	t := "TRK-" + parcel[4:]
	s.say(info, o, "ok: %s", t)
	return t, nil
}

// RefundCard undoes ChargeCard.
func (s *Shop) RefundCard(ctx context.Context, o Order, charge string) error {
	info, _ := s.st.count(ctx, o)
	s.say(info, o, "ok: COMPENSATION refunded %s", charge)
	return nil
}

// ReleaseInventory undoes ReserveInventory.
func (s *Shop) ReleaseInventory(ctx context.Context, o Order, reservation string) error {
	info, _ := s.st.count(ctx, o)
	s.say(info, o, "ok: COMPENSATION released %s", reservation)
	return nil
}
