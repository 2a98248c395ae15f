package worker

import (
	"context"
	"fmt"
	"reflect"

	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/converter"
	"github.com/heddlewf/heddle/sdk/workflow"
)

var (
	contextType       = reflect.TypeFor[context.Context]()
	errorType         = reflect.TypeFor[error]()
	encodedValuesType = reflect.TypeFor[converter.EncodedValues]()
	workflowCtxType   = reflect.TypeFor[workflow.Context]()
)

func (w *queueWorker) RegisterWorkflow(fn any) {
	w.RegisterWorkflowWithOptions(fn, workflow.RegisterOptions{})
}

func (w *queueWorker) RegisterWorkflowWithOptions(fn any, options workflow.RegisterOptions) {
	name := options.Name
	if name == "" {
		name = workflow.ActivityName(fn)
	}
	w.registerWorkflow(fn, name, !options.DisableAlreadyRegisteredCheck)
}

func (w *queueWorker) RegisterWorkflowWithName(fn any, name string) {
	w.registerWorkflow(fn, name, false)
}

// registerWorkflow registers fn under name; with check, a name registered
// already makes it panic, as in Temporal.
func (w *queueWorker) registerWorkflow(fn any, name string, check bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, taken := w.workflows[name]; taken && check {
		panic(fmt.Sprintf("worker: workflow name %q is already registered (set DisableAlreadyRegisteredCheck to replace it)", name))
	}
	w.workflows[name] = fn
	w.typesChanged()
}

func (w *queueWorker) RegisterDynamicWorkflow(fn any, _ workflow.DynamicRegisterOptions) {
	if err := checkDynamic(fn, workflowCtxType); err != nil {
		panic("worker: RegisterDynamicWorkflow: " + err.Error())
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.dynWorkflow != nil {
		panic("worker: RegisterDynamicWorkflow: a dynamic workflow is already registered")
	}
	w.dynWorkflow = fn
	w.typesChanged()
}

func (w *queueWorker) RegisterActivity(a any) {
	w.RegisterActivityWithOptions(a, activity.RegisterOptions{})
}

func (w *queueWorker) RegisterActivityWithOptions(a any, options activity.RegisterOptions) {
	w.registerActivity(a, options, !options.DisableAlreadyRegisteredCheck)
}

func (w *queueWorker) RegisterActivityWithName(fn any, name string) {
	w.registerActivity(fn, activity.RegisterOptions{Name: name}, false)
}

// registerActivity registers a; with check, a name registered already
// makes it panic, as in Temporal, and nothing of a is registered.
func (w *queueWorker) registerActivity(a any, options activity.RegisterOptions, check bool) {
	fns, err := activitiesOf(a, options)
	if err != nil {
		panic("worker: RegisterActivity: " + err.Error())
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for name := range fns {
		if _, taken := w.activities[name]; taken && check {
			panic(fmt.Sprintf("worker: activity name %q is already registered (set DisableAlreadyRegisteredCheck to replace it)", name))
		}
	}
	for name, fn := range fns {
		w.activities[name] = fn
	}
	w.typesChanged()
}

func (w *queueWorker) RegisterDynamicActivity(fn any, _ activity.DynamicRegisterOptions) {
	if err := checkDynamic(fn, contextType); err != nil {
		panic("worker: RegisterDynamicActivity: " + err.Error())
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.dynActivity != nil {
		panic("worker: RegisterDynamicActivity: a dynamic activity is already registered")
	}
	w.dynActivity = fn
	w.typesChanged()
}

// activitiesOf returns what registering a as an activity adds, by name: a
// function under its name (or options.Name), or a struct's (or a pointer
// to one's) exported methods under options.Name + the method's name. A
// struct method that is not an activity makes it an error, unless
// options.SkipInvalidStructFunctions.
func activitiesOf(a any, options activity.RegisterOptions) (map[string]any, error) {
	v := reflect.ValueOf(a)
	if !v.IsValid() {
		return nil, fmt.Errorf("nil is neither a function nor a struct")
	}
	if v.Kind() == reflect.Func {
		if v.IsNil() {
			return nil, fmt.Errorf("a nil %s is not a function to call", v.Type())
		}
		name := options.Name
		if name == "" {
			name = workflow.ActivityName(a)
		}
		return map[string]any{name: a}, nil
	}
	if t := v.Type(); t.Kind() != reflect.Struct && (t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct) {
		return nil, fmt.Errorf("a %s is neither a function nor a struct", t)
	}
	out := map[string]any{}
	t := v.Type()
	for i := range t.NumMethod() {
		m := t.Method(i)
		if !m.IsExported() {
			continue
		}
		fn := v.Method(i)
		if err := checkActivity(fn.Type()); err != nil {
			if options.SkipInvalidStructFunctions {
				continue
			}
			return nil, fmt.Errorf("method %s of %s: %w (set SkipInvalidStructFunctions to pass it over)", m.Name, t, err)
		}
		out[options.Name+m.Name] = fn.Interface()
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s has no exported method that is an activity", t)
	}
	return out, nil
}

// checkActivity reports a function type that cannot be an activity.
func checkActivity(t reflect.Type) error {
	if n := t.NumOut(); n == 0 || n > 2 || t.Out(n-1) != errorType {
		return fmt.Errorf("%s must return error or (T, error)", t)
	}
	if t.IsVariadic() {
		return fmt.Errorf("%s must not be variadic", t)
	}
	return nil
}

// checkDynamic reports a function that is not func(ctx, args
// converter.EncodedValues) (any, error) with ctx of type ctxType.
func checkDynamic(fn any, ctxType reflect.Type) error {
	t := reflect.TypeOf(fn)
	if t == nil || t.Kind() != reflect.Func || t.NumIn() != 2 || t.In(0) != ctxType || t.In(1) != encodedValuesType ||
		t.NumOut() != 2 || t.Out(1) != errorType {
		return fmt.Errorf("%v must be a func(%s, converter.EncodedValues) (any, error)", t, ctxType)
	}
	return nil
}
