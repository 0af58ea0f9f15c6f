package worker

import (
	"context"
	"errors"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// modelError is the attempt's error for a failed model call: the
// context's own end; BudgetExceeded when the team's monthly budget refused
// the call (the task fails as at its own budget, the reason in its
// message, and is not retried); otherwise ModelFailed, which the machine
// retries.
func modelError(ctx context.Context, err error) error {
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, models.ErrBudgetExhausted):
		return workflow.BudgetExceeded{Msg: err.Error()}
	default:
		return workflow.ModelFailed{Msg: err.Error()}
	}
}
