package worker_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/team/budget"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// refusing is a model port whose every call the team's budget refuses.
type refusing struct{}

func (refusing) Converse(context.Context, models.Request) (models.Response, error) {
	return models.Response{}, budget.RefusedError(budget.Ledger{Limited: true, Limit: budget.USD(5), Spent: budget.USD(5)}, 1000)
}

// A call the team's budget refuses fails the task as its own budget does
// (not retried), with the reason in the message the task keeps.
func TestTheTeamsBudgetRefusalFailsTheTaskWithItsReason(t *testing.T) {
	w := newWorker(nil)
	w.Model = refusing{}
	_, err := w.Run(context.Background(), payload("ok"))
	var be workflow.BudgetExceeded
	require.ErrorAs(t, err, &be)
	assert.Contains(t, be.Msg, "monthly budget of $5.00 is exhausted")
}
