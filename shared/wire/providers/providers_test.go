package providers_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/models/bedrock"
	"github.com/conclave-ai/conclave/shared/models/localmodel"
	"github.com/conclave-ai/conclave/shared/models/openai"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/settings"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/team/budget"
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

var awsCfg = aws.Config{Region: "us-east-1"}

// A MODEL_PROVIDER New does not build is an error naming it and the
// providers it knows. It used to be the local model, so a stage with a
// misspelt or missing provider answered every user with scripted text.
func TestNewRefusesAnUnknownProvider(t *testing.T) {
	for _, tc := range []struct{ name, provider, baseURL, want string }{
		{"misspelt", "bedrok", "", `MODEL_PROVIDER="bedrok" is not a model provider this function builds: want one of bedrock, local`},
		{"unset", "", "", `MODEL_PROVIDER="" is not a model provider this function builds: want one of bedrock, local`},
		{"openai without its endpoint", "openai", "", `MODEL_PROVIDER="openai" is not a model provider this function builds (openai needs OPENAI_BASE_URL): want one of bedrock, local`},
		{"an agent's provider, never a stage's", agents.ProviderA2A, "http://localhost:1", `want one of bedrock, local, openai`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := settings.Config{ModelProvider: tc.provider, OpenAIBaseURL: tc.baseURL}
			m, err := providers.New(cfg, awsCfg, roster{}, budget.Guard{})
			require.Error(t, err)
			assert.Nil(t, m, "no model, not the local one")
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestNewDefaultsToTheConfiguredProvider(t *testing.T) {
	for p, want := range map[string]models.Model{"local": localmodel.Model{}, "bedrock": bedrock.Model{}, "openai": openai.Model{}} {
		m, err := providers.New(settings.Config{ModelProvider: p, OpenAIBaseURL: "http://localhost:1"}, awsCfg, roster{}, budget.Guard{})
		require.NoError(t, err, p)
		sw, ok := m.(models.Switch)
		require.True(t, ok, "no guard store: the bare switch")
		traced, ok := sw.Default.(models.Traced)
		require.True(t, ok, "every provider's calls are traced: %s", p)
		assert.IsType(t, want, traced.Model, p)
		assert.Equal(t, sw.Providers[p], sw.Default, p)
	}
}

// A Bedrock request naming no model asks the stage's tier_1 model
// (MODEL_TIERS): the stage's grants name its tiers' models, so the routing
// default would be refused in a stage that moved tier_1.
func TestBedrocksDefaultModelIsTheStagesTier1(t *testing.T) {
	for tiers, want := range map[string]string{
		"tier_1=amazon.nova-lite-v1:0": "amazon.nova-lite-v1:0",
		"tier_0=amazon.nova-lite-v1:0": "anthropic.claude-3-5-haiku-20241022-v1:0",
		"":                             "anthropic.claude-3-5-haiku-20241022-v1:0",
	} {
		m, err := providers.New(settings.Config{ModelProvider: "bedrock", Tiers: settings.ParsePairs(tiers)}, awsCfg, roster{}, budget.Guard{})
		require.NoError(t, err, tiers)
		assert.Equal(t, want, m.(models.Switch).Providers["bedrock"].(models.Traced).Model.(bedrock.Model).DefaultModelID, tiers)
	}
}
