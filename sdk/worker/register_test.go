package worker_test

// Temporal's registration shapes: a struct's exported methods as
// activities, names with a prefix, dynamic workflows and activities.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/converter"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// Shop's exported methods are activities; a struct registered whole holds
// state (here a currency) its methods share.
type Shop struct{ currency string }

func (s *Shop) Price(ctx context.Context, item string) (string, error) {
	return fmt.Sprintf("%s 3 %s", item, s.currency), nil
}

func (s *Shop) Label(item string) (string, error) { return strings.ToUpper(item), nil }

// Notify has a value receiver: a *Shop has it too.
func (s Shop) Notify() error { return nil }

// helper is unexported: not an activity.
func (s *Shop) helper() {} //nolint:unused // shows that unexported methods are passed over

// ShopFlow calls Shop's methods as Temporal code does: by method value of
// a nil *Shop, and by name.
func ShopFlow(ctx workflow.Context, prefix string) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	var s *Shop
	var price, label string
	if err := workflow.ExecuteActivity(ctx, s.Price, "tea").Get(ctx, &price); err != nil && prefix == "" {
		return "", err
	}
	if prefix != "" {
		if err := workflow.ExecuteActivity(ctx, prefix+"Price", "tea").Get(ctx, &price); err != nil {
			return "", err
		}
	}
	if err := workflow.ExecuteActivity(ctx, prefix+"Label", "tea").Get(ctx, &label); err != nil {
		return "", err
	}
	if err := workflow.ExecuteActivity(ctx, prefix+"Notify").Get(ctx, nil); err != nil {
		return "", err
	}
	return price + ", " + label, nil
}

// RegisterActivity(&Shop{}) registers every exported method under its own
// name; RegisterActivityWithOptions prefixes them with Name.
func TestRegisterActivityStruct(t *testing.T) {
	for _, tc := range []struct {
		name, prefix string
		register     func(worker.Worker)
	}{
		{"methods", "", func(w worker.Worker) { w.RegisterActivity(&Shop{currency: "EUR"}) }},
		{"prefixed", "shop.", func(w worker.Worker) {
			w.RegisterActivityWithOptions(&Shop{currency: "EUR"}, activity.RegisterOptions{Name: "shop."})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := open(t)
			startWorker(t, e, "shop", worker.Options{}, func(w worker.Worker) { w.RegisterWorkflow(ShopFlow) }, tc.register)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			run, err := client.New(service(t, e)).ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: "shop"}, ShopFlow, tc.prefix)
			if err != nil {
				t.Fatal(err)
			}
			var got string
			if err := run.Get(ctx, &got); err != nil {
				t.Fatal(err)
			}
			if got != "tea 3 EUR, TEA" {
				t.Fatalf("result %q", got)
			}
		})
	}
}

// Bad has an exported method that is not an activity.
type Bad struct{}

func (Bad) Fine() error           { return nil }
func (Bad) NotOne() int           { return 0 }
func (Bad) Variadic(...int) error { return nil }

// What cannot be registered makes registration panic with the reason, as
// in Temporal; SkipInvalidStructFunctions passes the bad methods over.
func TestRegisterActivityRefusesWhatIsNotAnActivity(t *testing.T) {
	e := open(t)
	w := worker.New(client.New(service(t, e)), "bad", worker.Options{})
	for _, tc := range []struct {
		name string
		a    any
		opts activity.RegisterOptions
		want string // "" when it registers
	}{
		{"bad method", Bad{}, activity.RegisterOptions{}, "method NotOne of worker_test.Bad"},
		{"skipped", &Bad{}, activity.RegisterOptions{SkipInvalidStructFunctions: true}, ""},
		{"an int", 42, activity.RegisterOptions{}, "a int is neither a function nor a struct"},
		{"nil", nil, activity.RegisterOptions{}, "nil is neither a function nor a struct"},
		{"no methods", &struct{}{}, activity.RegisterOptions{}, "has no exported method that is an activity"},
		{"dynamic of the wrong shape", "dyn", activity.RegisterOptions{}, "must be a func(context.Context, converter.EncodedValues)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := func() (p any) {
				defer func() { p = recover() }()
				if tc.name == "dynamic of the wrong shape" {
					w.RegisterDynamicActivity(func(context.Context) error { return nil }, activity.DynamicRegisterOptions{})
					return nil
				}
				w.RegisterActivityWithOptions(tc.a, tc.opts)
				return nil
			}()
			switch {
			case tc.want == "" && p != nil:
				t.Fatalf("panicked: %v", p)
			case tc.want != "" && (p == nil || !strings.Contains(fmt.Sprint(p), tc.want)):
				t.Fatalf("panic %v, want one saying %q", p, tc.want)
			}
		})
	}
}

// Dynamic runs every workflow type no function is registered for.
func Dynamic(ctx workflow.Context, args converter.EncodedValues) (any, error) {
	var who string
	var n int
	if err := args.Get(&who, &n); err != nil {
		return nil, err
	}
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	var act string
	if err := workflow.ExecuteActivity(ctx, "Anything", who, n).Get(ctx, &act); err != nil {
		return nil, err
	}
	return workflow.GetInfo(ctx).WorkflowType.Name + " -> " + act, nil
}

// DynamicActivity runs every activity type no function is registered for.
func DynamicActivity(ctx context.Context, args converter.EncodedValues) (any, error) {
	var who string
	var n int
	if err := args.Get(&who, &n); err != nil {
		return nil, err
	}
	return fmt.Sprintf("%s(%s, %d)", activity.GetInfo(ctx).ActivityType.Name, who, n), nil
}

// A worker with dynamic registrations runs types it has no function for,
// and the code learns the type from its Info.
func TestDynamicWorkflowAndActivity(t *testing.T) {
	forEachCache(t, func(t *testing.T, cache int) {
		e := open(t)
		startWorker(t, e, "dyn", worker.Options{CacheSize: cache}, func(w worker.Worker) {
			w.RegisterDynamicWorkflow(Dynamic, workflow.DynamicRegisterOptions{})
			w.RegisterDynamicActivity(DynamicActivity, activity.DynamicRegisterOptions{})
		})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		run, err := client.New(service(t, e)).ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: "dyn"}, "Anything-Goes", "ada", 3)
		if err != nil {
			t.Fatal(err)
		}
		var got string
		if err := run.Get(ctx, &got); err != nil {
			t.Fatal(err)
		}
		if want := "Anything-Goes -> Anything(ada, 3)"; got != want {
			t.Fatalf("result %q, want %q", got, want)
		}
	})
}

// A name registered twice panics, as in Temporal, unless the second
// registration disables the check; heddle's *WithName shorthands replace.
func TestRegisteringANameTwice(t *testing.T) {
	e := open(t)
	w := worker.New(client.New(service(t, e)), "twice", worker.Options{})
	panics := func(f func()) (p any) {
		defer func() { p = recover() }()
		f()
		return nil
	}
	for _, tc := range []struct {
		name string
		f    func()
		want string // "" when it registers
	}{
		{"a workflow", func() { w.RegisterWorkflow(ShopFlow) }, ""},
		{"the workflow again", func() { w.RegisterWorkflow(ShopFlow) }, `workflow name "ShopFlow" is already registered`},
		{"again, check disabled", func() {
			w.RegisterWorkflowWithOptions(ShopFlow, workflow.RegisterOptions{DisableAlreadyRegisteredCheck: true})
		}, ""},
		{"again by WithName", func() { w.RegisterWorkflowWithName(ShopFlow, "ShopFlow") }, ""},
		{"a struct", func() { w.RegisterActivity(&Shop{}) }, ""},
		{"the struct again", func() { w.RegisterActivity(&Shop{}) }, "is already registered"},
		{"the struct under a prefix", func() { w.RegisterActivityWithOptions(&Shop{}, activity.RegisterOptions{Name: "other."}) }, ""},
		{"a method by WithName", func() { w.RegisterActivityWithName(Quick, "Price") }, ""},
	} {
		p := panics(tc.f)
		switch {
		case tc.want == "" && p != nil:
			t.Errorf("%s: panicked: %v", tc.name, p)
		case tc.want != "" && (p == nil || !strings.Contains(fmt.Sprint(p), tc.want)):
			t.Errorf("%s: panic %v, want one saying %q", tc.name, p, tc.want)
		}
	}
}
