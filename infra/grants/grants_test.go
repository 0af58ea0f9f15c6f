package grants_test

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/infra/grants"
	"github.com/conclave-ai/conclave/shared/platform/manifest"
)

const (
	module  = "github.com/conclave-ai/conclave/"
	fixture = module + "infra/grants/testdata/fixture"
)

// program is every function's main and the fixture, loaded and built once
// (a few seconds) for all the tests here.
var program = sync.OnceValues(func() (*grants.Program, error) {
	return grants.Load("../..", "./functions/...", "./infra/grants/testdata/fixture")
})

func mustProgram(t *testing.T) *grants.Program {
	t.Helper()
	if testing.Short() {
		t.Skip("loads and builds every function's program")
	}
	p, err := program()
	require.NoError(t, err)
	return p
}

func indexNames() []string {
	var out []string
	for _, g := range manifest.MainTable.GSIs {
		out = append(out, g.Name)
	}
	return out
}

// Least privilege, both ways: each function is granted exactly the IAM
// actions its code calls (its main package and everything it reaches),
// Query on exactly the indexes it queries. A grant no call uses fails, and
// so does a call no grant allows (AccessDenied in AWS, where the local
// cloud would have let it through). The stack grants the manifest's
// actions and nothing else (infra/stack TestRolesAllowExactlyWhatIsCalled),
// so this holds for the deployed roles.
func TestGrantsAreExactlyTheCalls(t *testing.T) {
	p := mustProgram(t)
	for _, f := range manifest.Functions {
		t.Run(f.Name, func(t *testing.T) {
			// GIVEN what the function's code calls
			calls, err := p.Calls(module+"functions/"+f.Name, indexNames())
			require.NoError(t, err)
			// WHEN it is compared with its manifest grants
			granted := f.Actions()
			unused, ungranted := diff(granted, calls.Actions), diff(calls.Actions, granted)
			// THEN neither has what the other lacks
			if len(unused) > 0 || len(ungranted) > 0 || !slices.Equal(f.Indexes, calls.Indexes) {
				t.Errorf("functions/%s: grants and calls differ\n"+
					"  granted but never called: %v\n"+
					"  called but not granted:   %v%s\n"+
					"  indexes granted %v, queried %v\n"+
					"  its entry in shared/platform/manifest/functions.go should read:\n%s",
					f.Name, unused, ungranted, explain(ungranted, calls), f.Indexes, calls.Indexes, entry(calls))
			}
		})
	}
}

// diff is what a has and b lacks.
func diff(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// explain says how the code reaches each ungranted action's operation.
func explain(actions []string, calls grants.Calls) string {
	var b strings.Builder
	for _, op := range calls.Operations {
		chain, ok := calls.Via[op]
		if !ok {
			continue
		}
		svc, name, _ := strings.Cut(op, ".")
		for _, a := range actions {
			if strings.HasSuffix(a, ":"+name) || (svc == "dynamodb" && name == "TransactWriteItems" && strings.HasPrefix(a, "dynamodb:")) ||
				(svc == "lambda" && a == manifest.ActionInvokeFunction) || (svc == "bedrockruntime" && a == string(manifest.GrantModels)) ||
				(op == "bedrockruntime.ConverseStream" && a == string(manifest.GrantModelsStream)) {
				if len(chain) > 6 {
					chain = chain[:6]
				}
				fmt.Fprintf(&b, "\n    %s: %s", op, strings.Join(chain, " ← "))
				break
			}
		}
	}
	return b.String()
}

// grantNames are the manifest's names of the grants, to print an entry.
var grantNames = map[string]string{}

func init() {
	for name, g := range map[string]manifest.Grant{
		"GrantGetItem": manifest.GrantGetItem, "GrantPutItem": manifest.GrantPutItem, "GrantUpdateItem": manifest.GrantUpdateItem,
		"GrantDeleteItem": manifest.GrantDeleteItem, "GrantQuery": manifest.GrantQuery, "GrantBatchGetItem": manifest.GrantBatchGetItem, "GrantConditionCheckItem": manifest.GrantConditionCheckItem,
		"GrantDescribeTable": manifest.GrantDescribeTable, "GrantBusPut": manifest.GrantBusPut, "GrantDescribeEventBus": manifest.GrantDescribeEventBus,
		"GrantStartExecution": manifest.GrantStartExecution, "GrantStopExecution": manifest.GrantStopExecution, "GrantCallback": manifest.GrantCallback,
		"GrantDescribeStateMachine": manifest.GrantDescribeStateMachine, "GrantModels": manifest.GrantModels,
		"GrantModelsStream": manifest.GrantModelsStream, "GrantGetSecret": manifest.GrantGetSecret, "GrantCreateSecret": manifest.GrantCreateSecret,
		"GrantPutSecret": manifest.GrantPutSecret, "GrantDeleteSecret": manifest.GrantDeleteSecret,
		"GrantDeadLetter": manifest.GrantDeadLetter, "GrantGetQueueAttributes": manifest.GrantGetQueueAttributes,
	} {
		grantNames[string(g)] = name
	}
}

// entry is the Grants and Indexes lines of a manifest entry for calls
// (lambda:InvokeFunction is the Invokes field's; manifest.TracingGrants
// every function has without listing them).
func entry(calls grants.Calls) string {
	var gs []string
	for _, a := range calls.Actions {
		switch name, ok := grantNames[a]; {
		case slices.Contains(manifest.TracingGrants, manifest.Grant(a)):
			continue
		case a == manifest.ActionInvokeFunction:
			gs = append(gs, "/* and Invokes: the functions it calls */")
		case ok:
			gs = append(gs, name)
		default:
			gs = append(gs, fmt.Sprintf("Grant(%q) /* new: the stack must learn to scope it */", a))
		}
	}
	out := "\t\tGrants: []Grant{" + strings.Join(gs, ", ") + "},"
	if len(calls.Indexes) > 0 {
		out += fmt.Sprintf("\n\t\tIndexes: %#v,", calls.Indexes)
	}
	return out
}

// Every main under functions/ is a function of the manifest, so none
// escapes the comparison.
func TestEveryFunctionIsCompared(t *testing.T) {
	var want []string
	for _, f := range manifest.Functions {
		want = append(want, module+"functions/"+f.Name)
	}
	want = append(want, fixture)
	sort.Strings(want)
	assert.Equal(t, want, mustProgram(t).Mains())
}

// The analysis finds exactly the calls of a program written to test it
// (testdata/fixture): a method called through a port and a handler called
// through reflection are calls, and so is one in a method only the
// standard library calls (sort.Sort's Less, read without its body); an
// exported method nobody calls, on a type
// held in an interface, is not; neither is the method of a type only a
// compile-time assertion names. A transaction is the actions of its
// writes; an index is the constant that names it.
func TestAnalysisFindsExactlyTheCalls(t *testing.T) {
	// GIVEN the fixture's program
	p := mustProgram(t)
	// WHEN its calls are found
	calls, err := p.Calls(fixture, []string{"gsi1", "gsi2", "gsi3"})
	require.NoError(t, err)
	// THEN they are exactly the ones it makes
	assert.Equal(t, []string{
		"dynamodb:ConditionCheckItem", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query", "states:SendTaskSuccess", "states:StartExecution",
	}, calls.Actions)
	assert.Equal(t, []string{"gsi2"}, calls.Indexes)
	assert.NotContains(t, calls.Operations, "dynamodb.DeleteItem", "exported, held in an interface, never called")
	assert.NotContains(t, calls.Operations, "sfn.StopExecution", "only a compile-time assertion names the type")
	assert.Contains(t, calls.Operations, "dynamodb.TransactWriteItems")
	// AND each is explained by the chain that reaches it
	assert.Equal(t, "(*github.com/conclave-ai/conclave/infra/grants/testdata/fixture.store).Get", calls.Via["dynamodb.GetItem"][0])
}

// The span export is an AWS call without the SDK: every function reaches
// the tracing exporter through the tracer provider lambdafn makes for it,
// so each calls xray:PutSpans and is granted it (manifest.TracingGrants);
// the test above fails a function granted it whose code never exports,
// or one exporting without the grant.
func TestEveryFunctionExportsItsSpans(t *testing.T) {
	p := mustProgram(t)
	for _, f := range manifest.Functions {
		calls, err := p.Calls(module+"functions/"+f.Name, indexNames())
		require.NoError(t, err)
		// THEN it calls PutSpans, through the tracer provider its door
		// (lambdafn) makes and flushes
		assert.Contains(t, calls.Actions, string(manifest.GrantPutSpans), f.Name)
		via := strings.Join(calls.Via["xray.PutSpans"], " ← ")
		assert.Contains(t, via, "shared/platform/tracing/otlp.NewProvider", f.Name)
		assert.Contains(t, via, "shared/platform/lambdafn.", f.Name)
		// AND its manifest entry has it, added by the manifest, not listed
		assert.Contains(t, f.Grants, manifest.GrantPutSpans, f.Name)
		assert.NotContains(t, entry(calls), "PutSpans", f.Name)
	}
	// AND the fixture, which sets up no tracing, exports nothing
	calls, err := p.Calls(fixture, nil)
	require.NoError(t, err)
	assert.NotContains(t, calls.Operations, "xray.PutSpans")
}
