package localmodelwiring_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/models/localmodel"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/wire/localmodelwiring"
	"github.com/conclave-ai/conclave/shared/wire/providers"
)

// roster is an agent store of one team, "t".
type roster map[string]agents.Agent

func (r roster) GetAgent(_ context.Context, team, slug string) (agents.Agent, error) {
	a, ok := r[slug]
	if team != "t" || !ok {
		return agents.Agent{}, apperr.NotFound("agent", slug)
	}
	return a, nil
}

// The local model reads an agent record through Agents as it read
// the record itself: name, script, skills (internal ones marked), errors
// as they come.
func TestLocalAgentsReadsTheAgentRecord(t *testing.T) {
	r := roster{
		"luke": {Name: "Luke", Model: &agents.Model{Provider: "local", Script: "tools:2"},
			Skills: []agents.Skill{{Name: "triage", Description: "Sort work", InternalOnly: true}, {Name: "code-review", Description: "Review code"}}},
		"dana": {Name: "Dana"},
	}
	got, err := localmodelwiring.Agents{Reader: r}.GetAgent(context.Background(), "t", "luke")
	require.NoError(t, err)
	assert.Equal(t, localmodel.Agent{Name: "Luke", Script: "tools:2", Skills: []localmodel.Skill{
		{Name: "triage", Description: "Sort work", InternalOnly: true}, {Name: "code-review", Description: "Review code"}}}, got)

	got, err = localmodelwiring.Agents{Reader: r}.GetAgent(context.Background(), "t", "dana")
	require.NoError(t, err)
	assert.Equal(t, localmodel.Agent{Name: "Dana"}, got, "no model: no script")

	_, err = localmodelwiring.Agents{Reader: r}.GetAgent(context.Background(), "t", "ghost")
	assert.True(t, apperr.Is(err, apperr.ENOTFOUND), "the local model answers an unknown agent plainly: it must see ENOTFOUND")
}

func TestLocalAnswersInTheAgentsVoice(t *testing.T) {
	r := roster{"luke": {Name: "Luke", Skills: []agents.Skill{{Name: "code-review", Description: "Review code for bugs"}}}}
	req := models.Request{Messages: []models.Message{{Role: "user", Content: "check my loop"}},
		Metadata: map[string]string{models.MetadataTeamID: "t", models.MetadataAgent: "luke"}}
	resp, err := localmodelwiring.New(r).Converse(context.Background(), req)
	require.NoError(t, err)
	assert.Contains(t, resp.Text, "As Luke, on code review: review code for bugs.")

	resp, err = providers.Local(nil).Converse(context.Background(), req)
	require.NoError(t, err)
	assert.NotContains(t, resp.Text, "Luke", "no agent store: a plain answer")
}
