package localmodel_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/models/localmodel"
	"github.com/conclave-ai/conclave/shared/routing/cascade"
	"github.com/conclave-ai/conclave/shared/routing/chooser"
)

// chooseFor is the router model's request (as the chooser builds it) for
// question among the candidates.
func chooseFor(question string, cands ...cascade.Candidate) models.Request {
	return chooser.Request(cascade.ChoiceRequest{TeamID: "t", Question: question, Candidates: cands}, "amazon.nova-micro-v1:0")
}

var (
	archie = cascade.Candidate{Agent: "archie", Name: "Archie", Skill: "architecture", Description: "Design systems, APIs and data models; evaluate trade-offs and scalability"}
	sage   = cascade.Candidate{Agent: "sage", Name: "Sage", Skill: "security-review", Description: "Threat modelling, vulnerability review, authentication and secrets handling"}
	dana   = cascade.Candidate{Agent: "dana", Name: "Dana", Skill: "data-analysis", Description: "Analyze datasets, metrics and trends; build charts and statistical summaries"}
)

func chosen(t *testing.T, resp models.Response) map[string]any {
	t.Helper()
	require.Len(t, resp.ToolCalls, 1)
	assert.Equal(t, chooser.ToolName, resp.ToolCalls[0].Name)
	var in map[string]any
	require.NoError(t, json.Unmarshal([]byte(resp.ToolCalls[0].Input), &in))
	return in
}

// The local model chooses the candidate sharing the most stemmed words
// with the question (its name and skill description), the first listed of
// equals: 0.8 sure when it shares a word, 0.3 when none does.
func TestTheLocalModelChoosesByTheWordsAQuestionShares(t *testing.T) {
	for _, tc := range []struct {
		name, question string
		cands          []cascade.Candidate
		agent, skill   string
		confidence     float64
		reason         string
	}{
		{"the most shared words", "Design data models for our metrics trends", []cascade.Candidate{sage, dana, archie},
			"archie", "architecture", 0.8, "Archie shares data, design, model with the question"},
		{"stems meet: reviewing and review", "Who is reviewing vulnerabilities?", []cascade.Candidate{archie, dana, sage},
			"sage", "security-review", 0.8, "Sage shares review, vulnerabiliti with the question"},
		{"a tie goes to the first listed", "Design the metrics", []cascade.Candidate{sage, archie, dana},
			"archie", "architecture", 0.8, "Archie shares design with the question"},
		{"the name counts", "Ask Dana", []cascade.Candidate{sage, archie, dana}, "dana", "data-analysis", 0.8, "Dana shares dana with the question"},
		{"nothing shared: the first, unsure", "Good weather today", []cascade.Candidate{sage, archie, dana},
			"sage", "security-review", 0.3, "Sage shares no word with the question"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := localmodel.New(nil).Converse(context.Background(), chooseFor(tc.question, tc.cands...))
			require.NoError(t, err)
			in := chosen(t, resp)
			assert.Equal(t, map[string]any{"agent": tc.agent, "skill": tc.skill, "confidence": tc.confidence, "reason": tc.reason}, in)
			assert.Equal(t, "amazon.nova-micro-v1:0", resp.ModelID)
			assert.Positive(t, resp.InputTokens)
			assert.Positive(t, resp.OutputTokens)
			again, _ := localmodel.New(nil).Converse(context.Background(), chooseFor(tc.question, tc.cands...))
			assert.Equal(t, resp, again, "deterministic")
		})
	}
	// The tie the other way round: dana first.
	resp, err := localmodel.New(nil).Converse(context.Background(), chooseFor("Design the metrics", dana, archie))
	require.NoError(t, err)
	assert.Equal(t, "dana", chosen(t, resp)["agent"])
}

// Markers in the question make the router model misbehave, so the
// fallbacks can be tested end to end.
func TestTheRouterModelMisbehavesOnMarkers(t *testing.T) {
	ctx := context.Background()
	_, err := localmodel.New(nil).Converse(ctx, chooseFor("Is this API design secure? "+localmodel.RouterFail, sage, archie))
	assert.ErrorIs(t, err, models.ErrModel)

	resp, err := localmodel.New(nil).Converse(ctx, chooseFor("Is this API design secure? "+localmodel.RouterGarbage, sage, archie))
	require.NoError(t, err)
	require.Len(t, resp.ToolCalls, 1)
	assert.False(t, json.Valid([]byte(resp.ToolCalls[0].Input)), resp.ToolCalls[0].Input)

	short, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	_, err = localmodel.New(nil).Converse(short, chooseFor("Is this API design secure? "+localmodel.RouterTimeout, sage, archie))
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	// It waited for the context (not a wall-clock figure, which a loaded
	// machine bends: the call returned only once its context had ended).
	assert.ErrorIs(t, short.Err(), context.DeadlineExceeded, "it waited for the context")

	// Without choose_agent the markers mean nothing: an agent answers.
	resp, err = localmodel.New(nil).Converse(ctx, models.Request{Messages: []models.Message{{Role: "user", Content: "hello " + localmodel.RouterFail}}})
	require.NoError(t, err)
	assert.NotEmpty(t, resp.Text)
}
