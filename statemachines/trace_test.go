package statemachines_test

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/manifest"
	"github.com/conclave-ai/conclave/statemachines"
)

// traceRef is how a state names the execution's trace: the "trace" field
// every execution's input has (executions.Starter.Start puts it there).
const traceRef = "$$.Execution.Input.trace"

// One trace per turn (issue 45): every function a machine invokes gets
// the execution's trace in its payload's top-level "trace" field, which
// the function's door continues (tracing.StartInvocation). Task tokens
// cannot carry it and Step Functions propagates nothing, so a state that
// forgets it starts a trace of its own, cut off from the turn.
func TestEveryInvocationCarriesTheTrace(t *testing.T) {
	for _, sm := range manifest.StateMachines {
		t.Run(sm.Name, func(t *testing.T) {
			raw, err := statemachines.Definition(sm.File)
			require.NoError(t, err)
			invocations, problems, err := traceProblems(raw)
			require.NoError(t, err)
			assert.Positive(t, invocations, "the machine invokes functions")
			for _, p := range problems {
				t.Errorf("machine %s (%s): %s", sm.Name, sm.File, p)
			}
		})
	}
}

// The check itself finds each way of losing the trace.
func TestTraceProblemsFindsAMissingTrace(t *testing.T) {
	lambda := func(payload string) string {
		return `{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke","Parameters":{"FunctionName":"${Fn}",` + payload + `},"ResultPath":null`
	}
	for name, c := range map[string]struct{ def, want string }{
		"payload without trace": {`{"StartAt":"A","States":{"A":` + lambda(`"Payload":{"a.$":"$.a"}`) + `,"End":true}}}`, "state A: its Payload has no"},
		"trace from elsewhere":  {`{"StartAt":"A","States":{"A":` + lambda(`"Payload":{"trace.$":"$.trace"}`) + `,"End":true}}}`, "state A: its Payload has no"},
		"no payload":            {`{"StartAt":"A","States":{"A":` + lambda(`"InvocationType":"Event"`) + `,"End":true}}}`, "state A: invokes a function without a Payload"},
		"payload from a path":   {`{"StartAt":"A","States":{"A":` + lambda(`"Payload.$":"$.x"`) + `,"End":true}}}`, `state A: its Payload is "$.x"`},
		"whole state replaced": {`{"StartAt":"P","States":{"P":{"Type":"Pass","Parameters":{"a.$":"$.a"},"Next":"A"},"A":` + lambda(`"Payload.$":"$"`) + `,"End":true}}}`,
			"state A: its Payload is the whole state, which P replaces"},
		"caught into the root": {`{"StartAt":"T","States":{"T":` + lambda(`"Payload":{"trace.$":"`+traceRef+`"}`) + `,"Catch":[{"ErrorEquals":["States.ALL"],"Next":"A"}],"Next":"A"},"A":` + lambda(`"Payload.$":"$"`) + `,"End":true}}}`,
			"state A: its Payload is the whole state, which T replaces"},
		"map item without trace": {`{"StartAt":"M","States":{"M":{"Type":"Map","ItemSelector":{"a.$":"$.a"},"ItemProcessor":{"StartAt":"A","States":{"A":` + lambda(`"Payload.$":"$"`) + `,"End":true}}},"End":true}}}`,
			"state M > A: its Payload is the whole state, whose input"},
		"child execution": {`{"StartAt":"S","States":{"S":{"Type":"Task","Resource":"arn:aws:states:::states:startExecution","Parameters":{"StateMachineArn":"${M}","Input":{"a":1}},"End":true}}}`,
			"state S: its Input has no"},
	} {
		t.Run(name, func(t *testing.T) {
			n, problems, err := traceProblems(c.def)
			require.NoError(t, err)
			assert.Equal(t, 1+strings.Count(c.def, traceRef), n, "invocations")
			require.Len(t, problems, 1)
			assert.Contains(t, problems[0], c.want)
		})
	}

	// The shapes the machines use pass: an object payload with the trace,
	// and the whole state where every way in keeps the execution's input
	// (a result beside it, a caught error beside it, a Choice, a Wait) or
	// where a Map's item selects the trace.
	ok := `{"StartAt":"T","States":{
	  "T":` + lambda(`"Payload":{"trace.$":"`+traceRef+`"}`) + `,"Catch":[{"ErrorEquals":["States.ALL"],"ResultPath":"$.error","Next":"A"}],"Next":"C"},
	  "C":{"Type":"Choice","Choices":[{"Variable":"$.x","IsPresent":true,"Next":"W"}],"Default":"A"},
	  "W":{"Type":"Wait","Seconds":1,"Next":"P"},
	  "P":{"Type":"Pass","Result":{},"ResultPath":"$.outcome","Next":"A"},
	  "A":` + lambda(`"Payload.$":"$"`) + `,"Next":"M"},
	  "M":{"Type":"Map","ItemSelector":{"trace.$":"` + traceRef + `"},"ItemProcessor":{"StartAt":"B","States":{"B":` + lambda(`"Payload.$":"$"`) + `,"End":true}}},"End":true}}}`
	n, problems, err := traceProblems(ok)
	require.NoError(t, err)
	assert.Equal(t, 3, n)
	assert.Empty(t, problems)
}

// asl is a state or any other object of a definition.
type asl = map[string]any

// traceProblems reads a definition and returns how many states invoke a
// function or start an execution, and each of them that would not pass
// the execution's trace on.
func traceProblems(raw string) (int, []string, error) {
	var def asl
	if err := json.Unmarshal([]byte(raw), &def); err != nil {
		return 0, nil, err
	}
	var c traceCheck
	c.scope("", def, true)
	return c.invocations, c.problems, nil
}

type traceCheck struct {
	invocations int
	problems    []string
}

// scope checks one States object: the machine's (whose input is the
// execution's, trace included) or a Map's or Parallel branch's (whose
// input is what the Map selects: traced when it selects traceRef).
func (c *traceCheck) scope(prefix string, def asl, entryTraced bool) {
	states, _ := def["States"].(asl)
	for _, name := range sortedKeys(states) {
		st, _ := states[name].(asl)
		switch st["Type"] {
		case "Map":
			processor, _ := st["ItemProcessor"].(asl)
			if processor == nil {
				processor, _ = st["Iterator"].(asl)
			}
			selector := st["ItemSelector"]
			if selector == nil {
				selector = st["Parameters"]
			}
			c.scope(prefix+name+" > ", processor, hasTrace(selector))
		case "Parallel":
			branches, _ := st["Branches"].([]any)
			for i, b := range branches {
				branch, _ := b.(asl)
				c.scope(fmt.Sprintf("%s%s[%d] > ", prefix, name, i), branch, hasTrace(st["Parameters"]))
			}
		case "Task":
			if problem, invokes := c.task(def, name, st, entryTraced); invokes {
				c.invocations++
				if problem != "" {
					c.problems = append(c.problems, "state "+prefix+name+": "+problem)
				}
			}
		}
	}
}

// task is what is wrong with the trace of the Task st ("" if nothing),
// and whether it invokes a function or starts an execution at all.
func (c *traceCheck) task(scope asl, name string, st asl, entryTraced bool) (string, bool) {
	resource, _ := st["Resource"].(string)
	params, _ := st["Parameters"].(asl)
	var field string
	switch {
	case strings.HasPrefix(resource, "arn:aws:states:::lambda:invoke"):
		field = "Payload"
	case strings.HasPrefix(resource, "arn:aws:states:::states:startExecution"):
		field = "Input"
	case strings.HasPrefix(resource, "arn:aws:states:::"):
		return "", false // an integration that runs none of Conclave's code
	default:
		// A function's ARN as the resource: its input is Parameters, or
		// the whole state without them.
		if params != nil {
			return wholeOr(hasTrace(params), "its Parameters have no \"trace.$\": \""+traceRef+"\""), true
		}
		return wholeState(scope, name, st, entryTraced), true
	}
	if obj, ok := params[field].(asl); ok {
		return wholeOr(hasTrace(obj), "its "+field+" has no \"trace.$\": \""+traceRef+"\""), true
	}
	switch path, ok := params[field+".$"].(string); {
	case !ok:
		return "invokes a function without a " + field, true
	case path == "$":
		return wholeState(scope, name, st, entryTraced), true
	default:
		return fmt.Sprintf("its %s is %q, which need not hold the trace: select it with \"trace.$\": %q", field, path, traceRef), true
	}
}

func wholeOr(ok bool, problem string) string {
	if ok {
		return ""
	}
	return problem
}

// hasTrace reports whether v, an object of a payload, selects the
// execution's trace as its top-level "trace".
func hasTrace(v any) bool {
	obj, _ := v.(asl)
	return obj["trace.$"] == traceRef
}

// wholeState is what is wrong when the state target passes its whole
// input on: the scope's input must carry the trace, and every state on a
// way to target must keep that input (the trace is at its root).
func wholeState(scope asl, target string, st asl, entryTraced bool) string {
	if p, ok := st["InputPath"].(string); ok && p != "$" {
		return fmt.Sprintf("its Payload is the whole state, which its InputPath %q narrows", p)
	}
	if !entryTraced {
		return "its Payload is the whole state, whose input (its Map's ItemSelector) has no \"trace.$\": \"" + traceRef + "\""
	}
	states, _ := scope["States"].(asl)
	into := map[string][]edge{}
	for _, name := range sortedKeys(states) {
		s, _ := states[name].(asl)
		for _, e := range edgesOf(name, s) {
			into[e.to] = append(into[e.to], e)
		}
	}
	seen := map[string]bool{target: true}
	for queue := []string{target}; len(queue) > 0; queue = queue[1:] {
		for _, e := range into[queue[0]] {
			if !e.keeps {
				return "its Payload is the whole state, which " + e.from + " replaces (on its way to " + e.to + ")"
			}
			if !seen[e.from] {
				seen[e.from] = true
				queue = append(queue, e.from)
			}
		}
	}
	return ""
}

// edge is a transition of a scope, and whether the state it leaves keeps
// its input at the root of its output on it.
type edge struct {
	from, to string
	keeps    bool
}

func edgesOf(name string, st asl) []edge {
	var out []edge
	keeps := keepsInput(st)
	for _, next := range nextsOf(st) {
		out = append(out, edge{name, next, keeps})
	}
	catches, _ := st["Catch"].([]any)
	for _, c := range catches {
		catch, _ := c.(asl)
		next, _ := catch["Next"].(string)
		rp, set := catch["ResultPath"]
		// The error replaces the input unless the catcher puts it beside
		// it (or drops it: null).
		out = append(out, edge{name, next, set && rp != "$"})
	}
	return out
}

func nextsOf(st asl) []string {
	var out []string
	if n, ok := st["Next"].(string); ok {
		out = append(out, n)
	}
	if n, ok := st["Default"].(string); ok {
		out = append(out, n)
	}
	choices, _ := st["Choices"].([]any)
	for _, c := range choices {
		if choice, ok := c.(asl); ok {
			if n, ok := choice["Next"].(string); ok {
				out = append(out, n)
			}
		}
	}
	return out
}

// keepsInput reports whether st's output is its input with (at most)
// something put beside it: a result at a path other than the root, or
// nothing (a Choice, a Wait, a Pass with neither Result nor Parameters).
func keepsInput(st asl) bool {
	if p, ok := st["OutputPath"].(string); ok && p != "$" {
		return false
	}
	if rp, set := st["ResultPath"]; set {
		return rp != "$"
	}
	inputKept := true
	if p, ok := st["InputPath"].(string); ok && p != "$" {
		inputKept = false
	}
	switch st["Type"] {
	case "Choice", "Wait", "Succeed", "Fail":
		return inputKept
	case "Pass":
		_, result := st["Result"]
		_, params := st["Parameters"]
		return inputKept && !result && !params
	}
	return false // a Task's, a Map's or a Parallel's result replaces it
}

func sortedKeys(m asl) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
