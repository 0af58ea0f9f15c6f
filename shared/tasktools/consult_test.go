package tasktools_test

import (
	"context"
	"io"
	"log/slog"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/consultations"
	"github.com/conclave-ai/conclave/shared/models/localmodel"
	"github.com/conclave-ai/conclave/shared/paging"
	"github.com/conclave-ai/conclave/shared/toolset"
)

var consultedRE = regexp.MustCompile(`^consultation (cons_\S+) with ([a-z-]+) is (in_progress|escalated)`)

// consult_specialist is the API's service with the working agent as the
// requester: the gate chooses (never the caller), and the tool is offered
// only when the service is wired.
func TestConsultSpecialistAsksThroughTheService(t *testing.T) {
	f := newFixture(t)
	kyra, err := f.store.GetAgent(context.Background(), team, "kyra")
	require.NoError(t, err)
	names := func() []string {
		var out []string
		for _, sp := range f.tools.Specs(kyra) {
			out = append(out, sp.Name)
		}
		return out
	}
	assert.NotContains(t, names(), toolset.ConsultSpecialist, "not wired: not offered")
	svc := consultations.New(f.store, localmodel.New(f.store), f.bus, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	f.tools.Consultations = svc
	assert.Contains(t, names(), toolset.ConsultSpecialist)

	p := f.working(t, "kyra")
	out := f.call(t, p, toolset.ConsultSpecialist, map[string]any{"question": "Is our JWT authentication vulnerable to token replay attacks?", "suggested_agent": "kyra",
		"context": map[string]any{"current_task": "auth review", "error_messages": []string{"token=abc123secretvalue rejected"}}})
	m := consultedRE.FindStringSubmatch(out)
	require.NotNil(t, m, out)
	assert.NotEqual(t, "kyra", m[2], "never the caller")
	assert.Contains(t, out, "Answer:")
	list, _, err := svc.List(context.Background(), team, consultations.Filter{Agent: "kyra"}, paging.Page{})
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, "kyra", list[0].RequestingAgent)
	assert.NotContains(t, list[0].Context.ErrorMessages[0], "abc123secretvalue")
	assert.Contains(t, f.call(t, p, toolset.ConsultSpecialist, map[string]any{"question": ""}), "rejected: question")
}
