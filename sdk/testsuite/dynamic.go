package testsuite

import (
	"context"
	"fmt"
	"reflect"

	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/converter"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// RegisterDynamicWorkflow registers w, a func(workflow.Context,
// converter.EncodedValues) (T, error), to run every workflow type that has
// no registration of its own, as worker.RegisterDynamicWorkflow does.
// ExecuteWorkflow then takes any type name. A second dynamic workflow
// panics.
func (env *TestWorkflowEnvironment) RegisterDynamicWorkflow(w any, _ workflow.DynamicRegisterOptions) {
	env.mustNotHaveStarted("RegisterDynamicWorkflow")
	if env.dynWorkflow != nil {
		panic("testsuite: RegisterDynamicWorkflow: a dynamic workflow is already registered")
	}
	if err := checkDynamic(w, reflect.TypeFor[workflow.Context]()); err != nil {
		panic("testsuite: RegisterDynamicWorkflow: " + err.Error())
	}
	env.dynWorkflow = &registration{fn: w, wrapped: env.wrapWorkflow("", w)}
}

// RegisterDynamicActivity registers a, a func(context.Context,
// converter.EncodedValues) (T, error), to run every activity type that has
// no registration of its own, as worker.RegisterDynamicActivity does. A
// second dynamic activity panics.
func (env *TestWorkflowEnvironment) RegisterDynamicActivity(a any, _ activity.DynamicRegisterOptions) {
	env.mustNotHaveStarted("RegisterDynamicActivity")
	if env.dynActivity != nil {
		panic("testsuite: RegisterDynamicActivity: a dynamic activity is already registered")
	}
	if err := checkDynamic(a, contextType); err != nil {
		panic("testsuite: RegisterDynamicActivity: " + err.Error())
	}
	env.dynActivity = &registration{fn: a, wrapped: env.wrapActivity("", a)}
}

var (
	contextType       = reflect.TypeFor[context.Context]()
	encodedValuesType = reflect.TypeFor[converter.EncodedValues]()
)

// checkDynamic checks now what the worker checks when it registers fn:
// that it is a func(ctx, converter.EncodedValues) (any, error) with ctx of
// type ctxType.
func checkDynamic(fn any, ctxType reflect.Type) error {
	t := reflect.TypeOf(fn)
	if t == nil || t.Kind() != reflect.Func || t.NumIn() != 2 || t.In(0) != ctxType || t.In(1) != encodedValuesType ||
		t.NumOut() != 2 || t.Out(1) != errorType {
		return fmt.Errorf("%v must be a func(%s, converter.EncodedValues) (any, error)", t, ctxType)
	}
	return nil
}

// registeredOrDynamic is registered, except that a name with no
// registration of its own is the dynamic one's when there is one.
func registeredOrDynamic(from map[string]*registration, dynamic *registration, kind, name string) string {
	if from[name] == nil && dynamic != nil {
		return name
	}
	return registered(from, kind, name).name
}
