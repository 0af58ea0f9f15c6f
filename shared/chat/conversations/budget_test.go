package conversations_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/team/budget"
)

type refusing struct{}

func (refusing) Converse(context.Context, models.Request) (models.Response, error) {
	return models.Response{}, budget.RefusedError(budget.Ledger{Limited: true, Limit: budget.USD(5), Spent: budget.USD(4.99)}, budget.USD(0.02))
}

// A turn whose every agent's call the team's budget refused answers the
// refusal (422 rejected, TeamBudgetExhausted, with the limit and the
// spend), not an upstream failure; the turn is recorded with its note.
func TestATurnTheTeamsBudgetRefusesAnswersTheRefusal(t *testing.T) {
	f := newFixture(t, collaborationOff)
	f.cfg.Model = refusing{}
	f.rebuild()
	c := f.create(t, "kyra")
	res, err := f.svc.Post(context.Background(), team, c.ID, conversations.PostInput{Content: "hello"})
	ae := requireAppErr(t, err, apperr.EREJECTED, budget.ReasonExhausted)
	assert.InDelta(t, 5, ae.Details["monthly_limit_usd"], 1e-9)
	assert.InDelta(t, 4.99, ae.Details["spent_usd"], 1e-9)
	require.Len(t, res.Replies, 1)
	assert.Equal(t, conversations.AuthorSystem, res.Replies[0].Role)
}
