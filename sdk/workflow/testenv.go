package workflow

import "github.com/heddlewf/heddle/internal/sdkhook"

// testEnvKey carries the sdk/testsuite environment a test run's code runs
// in (sdkhook.TestEnv); production code never has one.
type testEnvKey struct{}

func init() {
	sdkhook.WithTestEnv = func(ctx any, env sdkhook.TestEnv) any {
		return WithValue(ctx.(Context), testEnvKey{}, env)
	}
}

func testEnvOf(ctx Context) sdkhook.TestEnv {
	env, _ := ctx.Value(testEnvKey{}).(sdkhook.TestEnv)
	return env
}
