package workflow_test

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/manifest"
	"github.com/conclave-ai/conclave/statemachines"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// aslState is the part of an ASL state the error test reads; nested
// machines (Parallel branches, Map processors) are walked too.
type aslState struct {
	Type       string
	Parameters map[string]any
	Retry      []struct{ ErrorEquals []string }
	Catch      []struct{ ErrorEquals []string }
	Branches   []aslMachine
	Iterator   *aslMachine
	Processor  *aslMachine `json:"ItemProcessor"`
}

type aslMachine struct{ States map[string]aslState }

func walk(m aslMachine, visit func(name string, st aslState)) {
	for name, st := range m.States {
		visit(name, st)
		for _, b := range st.Branches {
			walk(b, visit)
		}
		for _, sub := range []*aslMachine{st.Iterator, st.Processor} {
			if sub != nil {
				walk(*sub, visit)
			}
		}
	}
}

func (st aslState) names() []string {
	var out []string
	for _, r := range st.Retry {
		out = append(out, r.ErrorEquals...)
	}
	for _, c := range st.Catch {
		out = append(out, c.ErrorEquals...)
	}
	return out
}

// Go error types by the name aws-lambda-go reports for them.
func goErrors(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, e := range workflow.Errors {
		out[reflect.TypeOf(e).Name()] = true
	}
	return out
}

// Every ErrorEquals name in every ASL file is a Go error type of this
// package (or a States.* name), and every error a function returns on
// purpose is named by a Retry or Catch of every state that invokes it.
func TestASLErrorNamesMatchGoErrors(t *testing.T) {
	known := goErrors(t)
	invoked := map[string]bool{}
	for _, sm := range manifest.StateMachines {
		raw, err := statemachines.Definition(sm.File)
		require.NoError(t, err)
		var def aslMachine
		require.NoError(t, json.Unmarshal([]byte(raw), &def))
		walk(def, func(name string, st aslState) {
			for _, n := range st.names() {
				if !strings.HasPrefix(n, "States.") {
					assert.True(t, known[n], "%s/%s matches %q, which no Go error type is", sm.Name, name, n)
				}
			}
			fn := invokedFunction(sm, st)
			if fn == "" {
				return
			}
			invoked[fn] = true
			for _, want := range workflow.Returns[fn] {
				assert.Contains(t, st.names(), want, "%s/%s invokes %s, which returns %s, but neither retries nor catches it by name", sm.Name, name, fn, want)
			}
		})
	}
	for fn, errs := range workflow.Returns {
		assert.True(t, invoked[fn], "workflow.Returns lists %s, which no state invokes", fn)
		for _, e := range errs {
			assert.True(t, known[e], "%s returns %s, which is not a workflow error type", fn, e)
		}
	}
}

// invokedFunction is the manifest function a Task state invokes through a
// substitution ("FunctionName": "${WorkerFunctionArn}").
func invokedFunction(sm manifest.StateMachine, st aslState) string {
	if st.Type != "Task" {
		return ""
	}
	ref, _ := st.Parameters["FunctionName"].(string)
	key := strings.TrimSuffix(strings.TrimPrefix(ref, "${"), "}")
	fn, ok := strings.CutPrefix(sm.Substitutions[key], "function:")
	if !ok {
		return ""
	}
	return fn
}

// The names are what aws-lambda-go will report: the Go type names.
func TestErrorTypeNamesAreStable(t *testing.T) {
	names := make([]string, 0, len(workflow.Errors))
	for n := range goErrors(t) {
		names = append(names, n)
	}
	slices.Sort(names)
	assert.Equal(t, []string{"AgentBusy", "BudgetExceeded", "BudgetExhausted", "InvalidTask", "ModelFailed", "ProtocolViolation", "SessionNotRunnable", "TaskNotRunnable", "TaskTimedOut"}, names)
}

func TestStepsDispatchByMachine(t *testing.T) {
	var got string
	steps := workflow.Steps{workflow.Delegation: func(_ context.Context, in json.RawMessage) (any, error) {
		got = string(in)
		return "ok", nil
	}}
	out, err := steps.Handle(context.Background(), json.RawMessage(`{"machine":"delegation","action":"start"}`))
	require.NoError(t, err)
	assert.Equal(t, "ok", out)
	assert.JSONEq(t, `{"machine":"delegation","action":"start"}`, got)

	_, err = steps.Handle(context.Background(), json.RawMessage(`{"machine":"pipeline"}`))
	assert.IsType(t, workflow.InvalidTask{}, err, "a machine without steps is an invalid payload, not retried")
	_, err = steps.Handle(context.Background(), json.RawMessage(`[`))
	assert.IsType(t, workflow.InvalidTask{}, err)
}
