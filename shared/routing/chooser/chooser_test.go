package chooser_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/models/localmodel"
	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/routing/cascade"
	"github.com/conclave-ai/conclave/shared/routing/chooser"
)

var req = cascade.ChoiceRequest{TeamID: "team_1", Question: "Is this API design secure against injection?", CurrentAgent: "kyra", Candidates: []cascade.Candidate{
	{Agent: "sage", Name: "Sage", Skill: "security-review", Description: "Threat modelling, vulnerability review"},
	{Agent: "archie", Name: "Archie", Skill: "architecture", Description: "Design systems, APIs\nand data models"},
	{Agent: "kyra", Name: "Kyra", Skill: "general-assistance", Description: "Answer general questions"},
}}

// model answers with a fixed response or error and records the request.
type model struct {
	resp models.Response
	err  error
	got  models.Request
}

func (m *model) Converse(_ context.Context, r models.Request) (models.Response, error) {
	m.got = r
	return m.resp, m.err
}

func call(input string) models.Response {
	return models.Response{ToolCalls: []models.ToolCall{{ID: "c1", Name: chooser.ToolName, Input: input}}, InputTokens: 1000, OutputTokens: 100, ModelID: "amazon.nova-micro-v1:0"}
}

// The request: the tier-0 model, the candidates in the system prompt, the
// question as the user's message, choose_agent the only tool with the
// candidates' slugs as its agent enum.
func TestTheRequestOffersOnlyChooseAgent(t *testing.T) {
	m := &model{resp: call(`{"agent":"archie","skill":"architecture","confidence":0.9,"reason":"design"}`)}
	c := chooser.New(m, routing.TierModels{routing.Tier0: "tiny-0", routing.Tier1: "mid"})
	_, err := c.Choose(context.Background(), req)
	require.NoError(t, err)
	r := m.got
	assert.Equal(t, "tiny-0", r.ModelID)
	assert.Equal(t, []models.Message{{Role: "user", Content: req.Question}}, r.Messages)
	assert.Contains(t, r.System, "- sage (Sage), skill security-review: Threat modelling, vulnerability review\n")
	assert.Contains(t, r.System, "- archie (Archie), skill architecture: Design systems, APIs and data models\n", "one line per candidate")
	assert.Contains(t, r.System, "current agent is kyra")
	assert.Equal(t, "team_1", r.Metadata[models.MetadataTeamID])
	assert.Empty(t, r.Metadata[models.MetadataAgent], "the call is made for no agent")
	require.Len(t, r.Tools, 1)
	tool := r.Tools[0]
	assert.Equal(t, chooser.ToolName, tool.Name)
	props := tool.Schema["properties"].(map[string]any)
	assert.Equal(t, []any{"sage", "archie", "kyra"}, props["agent"].(map[string]any)["enum"])
	assert.Equal(t, []any{"agent", "skill", "confidence", "reason"}, tool.Schema["required"])
	assert.Equal(t, map[string]any{"type": "number", "minimum": 0, "maximum": 1, "description": "how sure you are that this agent is the right one"}, props["confidence"])

	// Without a tier-0 model configured, the default's.
	assert.Equal(t, routing.DefaultTierModels[routing.Tier0], chooser.New(m, routing.TierModels{}).ModelID)
	// No current agent: no hint.
	noHint := req
	noHint.CurrentAgent = ""
	assert.NotContains(t, chooser.Request(noHint, "m").System, "current agent")
}

func TestChooseParsesAndValidatesTheCall(t *testing.T) {
	priced := models.Cost("amazon.nova-micro-v1:0", 1000, 100)
	require.Positive(t, priced)
	for _, tc := range []struct {
		name    string
		resp    models.Response
		want    cascade.Choice
		invalid string
	}{
		{"a valid choice", call(`{"agent":"archie","skill":"architecture","confidence":0.9,"reason":" it is   about design "}`),
			cascade.Choice{Agent: "archie", Skill: "architecture", Confidence: 0.9, Reason: "it is about design"}, ""},
		{"confidence 0 is a confidence", call(`{"agent":"archie","skill":"architecture","confidence":0,"reason":"r"}`),
			cascade.Choice{Agent: "archie", Skill: "architecture", Reason: "r"}, ""},
		{"not JSON", call(`{"agent": "archie`), cascade.Choice{}, "choose_agent input"},
		{"no call: text", models.Response{Text: "archie", InputTokens: 1000, OutputTokens: 100, ModelID: "amazon.nova-micro-v1:0"}, cascade.Choice{}, "did not call choose_agent"},
		{"another tool", models.Response{ToolCalls: []models.ToolCall{{Name: "delegate_task", Input: "{}"}}, InputTokens: 1000, OutputTokens: 100}, cascade.Choice{}, "did not call choose_agent"},
		{"not a candidate", call(`{"agent":"luke","skill":"code-review","confidence":0.9,"reason":"r"}`),
			cascade.Choice{Agent: "luke", Skill: "code-review", Confidence: 0.9, Reason: "r"}, `"luke" is not a candidate`},
		{"confidence above 1", call(`{"agent":"archie","skill":"architecture","confidence":1.5,"reason":"r"}`),
			cascade.Choice{Agent: "archie", Skill: "architecture", Confidence: 1.5, Reason: "r"}, "not in [0, 1]"},
		{"confidence below 0", call(`{"agent":"archie","skill":"architecture","confidence":-0.1,"reason":"r"}`),
			cascade.Choice{Agent: "archie", Skill: "architecture", Confidence: -0.1, Reason: "r"}, "not in [0, 1]"},
		{"no confidence", call(`{"agent":"archie","skill":"architecture","reason":"r"}`), cascade.Choice{Agent: "archie"}, "no confidence"},
		{"confidence as a string", call(`{"agent":"archie","skill":"architecture","confidence":"high","reason":"r"}`), cascade.Choice{}, "choose_agent input"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := chooser.New(&model{resp: tc.resp}, routing.DefaultTierModels).Choose(context.Background(), req)
			// Whatever came of it, the call's model, tokens and cost are known.
			tc.want.ModelID, tc.want.InputTokens, tc.want.OutputTokens, tc.want.CostUSD = "amazon.nova-micro-v1:0", 1000, 100, priced
			assert.Equal(t, tc.want, got)
			if tc.invalid == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, cascade.ErrInvalidChoice)
			assert.ErrorContains(t, err, tc.invalid)
		})
	}
	// A model error is not an invalid choice.
	boom := errors.New("throttled")
	got, err := chooser.New(&model{err: boom}, routing.DefaultTierModels).Choose(context.Background(), req)
	assert.ErrorIs(t, err, boom)
	assert.NotErrorIs(t, err, cascade.ErrInvalidChoice)
	assert.Equal(t, cascade.Choice{ModelID: "amazon.nova-micro-v1:0"}, got)
}

// Over the local model: the request it builds is one the local model
// reads, end to end through the port.
func TestChooseOverTheLocalModel(t *testing.T) {
	got, err := chooser.New(localmodel.New(nil), routing.DefaultTierModels).Choose(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, "archie", got.Agent)
	assert.Equal(t, "architecture", got.Skill)
	assert.Equal(t, 0.8, got.Confidence)
	assert.Equal(t, "Archie shares design with the question", got.Reason)
	assert.Positive(t, got.CostUSD)

	garbage := req
	garbage.Question += " " + localmodel.RouterGarbage
	_, err = chooser.New(localmodel.New(nil), routing.DefaultTierModels).Choose(context.Background(), garbage)
	assert.ErrorIs(t, err, cascade.ErrInvalidChoice)
}
