package cloud

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func export(t *testing.T, tr *Traces, body string) int {
	t.Helper()
	rec := httptest.NewRecorder()
	tr.serveOTLP(rec, httptest.NewRequest(http.MethodPost, OTLPTracesPath, strings.NewReader(body)))
	return rec.Code
}

func spanJSON(trace, id, parent, name string) string {
	return fmt.Sprintf(`{"traceId":%q,"spanId":%q,"parentSpanId":%q,"name":%q,"kind":2,"startTimeUnixNano":"1000000","endTimeUnixNano":"3500000",`+
		`"attributes":[{"key":"gen_ai.usage.input_tokens","value":{"intValue":"12"}}],"status":{"code":2,"message":"boom"}}`, trace, id, parent, name)
}

func exportOf(service string, spans ...string) string {
	return `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"` + service + `"}}]},` +
		`"scopeSpans":[{"scope":{"name":"x"},"spans":[` + strings.Join(spans, ",") + `]}]}]}`
}

// Spans sent by two services in two exports are one tree: a child under
// its parent whatever sent it, with its service, duration, attributes and
// failure.
func TestTheEdgeKeepsATraceAsATree(t *testing.T) {
	var tr Traces
	id := strings.Repeat("a", 32)
	require.Equal(t, 200, export(t, &tr, exportOf("conversations", spanJSON(id, "0000000000000001", "", "POST /v1/x"))))
	require.Equal(t, 200, export(t, &tr, exportOf("expert-gate", spanJSON(id, "0000000000000002", "0000000000000001", "expert-gate"))))
	assert.Equal(t, 400, export(t, &tr, `not json`))

	tree, ok := tr.Tree(id)
	require.True(t, ok)
	assert.Equal(t, 2, tree.Spans)
	require.Len(t, tree.Roots, 1)
	root := tree.Roots[0]
	assert.Equal(t, "conversations", root.Service)
	assert.InDelta(t, 2.5, root.DurationMS, 1e-9)
	assert.True(t, root.Failed)
	assert.Equal(t, "boom", root.Error)
	require.Len(t, root.Children, 1)
	assert.Equal(t, "expert-gate", root.Children[0].Service)
	assert.EqualValues(t, 12, root.Children[0].Attributes["gen_ai.usage.input_tokens"])
	_, ok = tr.Tree(strings.Repeat("b", 32))
	assert.False(t, ok)
}

// The edge keeps the last MaxTraces traces: the one past it drops the
// oldest, and a trace it still holds keeps gaining spans.
func TestTheEdgeKeepsTheLastThousandTraces(t *testing.T) {
	var tr Traces
	idOf := func(n int) string { return fmt.Sprintf("%032x", n+1) }
	for n := range MaxTraces {
		export(t, &tr, exportOf("s", spanJSON(idOf(n), "0000000000000001", "", "root")))
	}
	_, first := tr.Tree(idOf(0))
	assert.True(t, first, "at the limit, every trace is kept")
	export(t, &tr, exportOf("s", spanJSON(idOf(0), "0000000000000002", "0000000000000001", "late child")))
	export(t, &tr, exportOf("s", spanJSON(idOf(MaxTraces), "0000000000000001", "", "root")))
	_, first = tr.Tree(idOf(0))
	assert.False(t, first, "one past the limit drops the oldest")
	_, second := tr.Tree(idOf(1))
	assert.True(t, second)
	_, newest := tr.Tree(idOf(MaxTraces))
	assert.True(t, newest)
}
