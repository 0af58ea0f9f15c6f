package agenttools_test

import (
	"context"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/work/sessions"
)

func TestStartCollaborationMakesTheCallerTheLead(t *testing.T) {
	f := newFixture(t)
	assert.NotContains(t, names(f.tools.Specs(agents.Agent{Slug: "kyra"})), "start_collaboration", "without sessions the tool is left out")
	svc := &sessions.Service{Store: f.store, Enabled: true}
	f.tools.Sessions = svc
	assert.Contains(t, names(f.tools.Specs(agents.Agent{Slug: "kyra"})), "start_collaboration")

	p := f.working(t, "kyra")
	out := f.call(t, p, "start_collaboration", map[string]any{"pattern": "brainstorm", "goal": "How should we cache?",
		"participants": []any{map[string]any{"slug": "luke", "role": "contributor"}, map[string]any{"slug": "archie", "role": "contributor"}}})
	m := regexp.MustCompile(`session (ses_\w+)`).FindStringSubmatch(out)
	require.Len(t, m, 2, out)
	ses, err := svc.Get(context.Background(), team, m[1])
	require.NoError(t, err)
	assert.Equal(t, "kyra", ses.Lead)
	assert.Equal(t, "agent:kyra", ses.CreatedBy)
	assert.Len(t, ses.Participants, 2)

	out = f.call(t, p, "start_collaboration", map[string]any{"pattern": "peer_review", "goal": "g", "participants": []any{map[string]any{"slug": "luke", "role": "reviewer"}}})
	assert.Contains(t, out, "rejected", "an invalid session is the tool's answer, not an error")
	// participants is always an array of {slug, role, stage}: the seed's
	// JSON string and the API's "agent" are not this tool's shape.
	out = f.call(t, p, "start_collaboration", map[string]any{"pattern": "brainstorm", "goal": "g", "participants": `[{"slug": "luke", "role": "contributor"}]`})
	assert.Contains(t, out, `"error":"invalid_arguments","field":"participants"`)
	out = f.call(t, p, "start_collaboration", map[string]any{"pattern": "brainstorm", "goal": "g", "participants": []any{map[string]any{"agent": "luke", "role": "contributor"}}})
	assert.Contains(t, out, `"field":"participants.agent"`, out)
}

func names(specs []models.Tool) []string {
	var out []string
	for _, s := range specs {
		out = append(out, s.Name)
	}
	return out
}
