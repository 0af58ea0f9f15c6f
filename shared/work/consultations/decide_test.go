package consultations_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/work/consultations"
)

// fixedGate scores as told and keeps the query it was asked.
type fixedGate struct {
	scores []routing.ExpertScore
	query  *string
}

func (g fixedGate) Score(_ context.Context, _, query string, _ []agents.Agent, _ ...string) ([]routing.ExpertScore, error) {
	if g.query != nil {
		*g.query = query
	}
	return g.scores, nil
}

func score(slug string, overall float64) routing.ExpertScore {
	return routing.ExpertScore{AgentSlug: slug, Overall: overall}
}

// The gate weighs the question with the requester's specific concern.
func TestTheGateWeighsTheSpecificConcern(t *testing.T) {
	svc, _, _ := fixture(t)
	var query string
	svc.Gate = fixedGate{scores: []routing.ExpertScore{score("backend", 0.5)}, query: &query}
	in := ask("frontend", "Can you look at this?")
	in.Context.SpecificConcern = "the token expiry"
	_, err := svc.Request(context.Background(), team, in)
	require.NoError(t, err)
	assert.Equal(t, "Can you look at this?\nthe token expiry", query)
}

// Candidates the gate scores alike keep the gate's order; the first is
// chosen.
func TestTiedCandidatesKeepTheGatesOrder(t *testing.T) {
	svc, _, _ := fixture(t)
	svc.Gate = fixedGate{scores: []routing.ExpertScore{score("security", 0.4), score("backend", 0.4)}}
	c, err := svc.Request(context.Background(), team, ask("frontend", "Who knows?"))
	require.NoError(t, err)
	var order []string
	for _, cand := range c.Decision.Candidates {
		order = append(order, cand.Slug)
	}
	assert.Equal(t, []string{"security", "backend"}, order)
	assert.Equal(t, "security", c.ConsultedAgent)
}

// An overridden suggestion's reason quotes the suggestion's own score.
func TestAnOverriddenSuggestionQuotesItsOwnScore(t *testing.T) {
	svc, _, _ := fixture(t)
	svc.Gate = fixedGate{scores: []routing.ExpertScore{score("backend", 0.9), score("security", 0.3)}}
	in := ask("frontend", "Who knows?")
	in.SuggestedAgent = "security"
	c, err := svc.Request(context.Background(), team, in)
	require.NoError(t, err)
	assert.Equal(t, "backend", c.ConsultedAgent)
	assert.Contains(t, c.Decision.Reason, fmt.Sprintf("above the suggestion's %.3f (%.3f + %.2f bonus)", 0.3+consultations.SuggestionBonus, 0.3, consultations.SuggestionBonus))
}

// The specialist asked is the consulted agent, and its JSON answer is
// read field by field; a plain-text answer is the answer, with no next
// steps.
func TestTheConsultedAgentAnswersAndItsReplyIsRead(t *testing.T) {
	svc, _, _ := fixture(t)
	rec := &recorder{}
	svc.Model = rec
	c, err := svc.Request(context.Background(), team, ask("frontend", "What fields does the User model API endpoint return from the database schema?"))
	require.NoError(t, err)
	require.Equal(t, "backend", c.ConsultedAgent)
	assert.Contains(t, rec.all(), "(@backend)")
	require.NotNil(t, c.Response)
	assert.Equal(t, "use the fields", c.Response.Answer)
	assert.Equal(t, []string{"try it"}, c.SuggestedNextSteps)

	svc.Model = answering("  Just use the fields.  ")
	c, err = svc.Request(context.Background(), team, ask("security", "What fields does the User model API endpoint return from the database schema?"))
	require.NoError(t, err)
	assert.Equal(t, "Just use the fields.", c.Response.Answer)
	assert.Equal(t, []string{}, c.SuggestedNextSteps)

	svc.Model = answering(`{"answer":"  ","code_reference":"x.go"}`)
	c, err = svc.Request(context.Background(), team, ask("backend", "Is this JWT authentication token handling secure?"))
	require.NoError(t, err)
	assert.Equal(t, `{"answer":"  ","code_reference":"x.go"}`, c.Response.Answer, "JSON without an answer: the text is the answer")
}

// refusing is a model that declines to answer.
type refusing struct{}

func (refusing) Converse(context.Context, models.Request) (models.Response, error) {
	return models.Response{Refused: true, ModelID: "local-deterministic"}, nil
}

// A specialist whose model refuses to answer escalates the consultation.
func TestARefusedAnswerEscalates(t *testing.T) {
	svc, _, _ := fixture(t)
	svc.Model = refusing{}
	c, err := svc.Request(context.Background(), team, ask("frontend", "What fields does the User model API endpoint return?"))
	require.NoError(t, err)
	assert.Equal(t, consultations.Escalated, c.Status)
	require.NotNil(t, c.Loop)
	assert.True(t, strings.Contains(fmt.Sprint(c.Loop.Evidence["description"]), "refused"), c.Loop.Evidence)
}
