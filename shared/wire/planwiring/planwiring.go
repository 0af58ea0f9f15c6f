// Package planwiring builds the plan service the plan functions share
// (plans, plan-steps, conversations) from the store, the task service and,
// where granted, Step Functions and the models.
package planwiring

import (
	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/store/planstore"
	"github.com/conclave-ai/conclave/shared/wire/taskwiring"
	"github.com/conclave-ai/conclave/shared/work/plans"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// New builds the plan service of d on core. workflows starts the plan
// machine and the steps' executions (nil where not granted); callbacks
// wakes waiting states; model is the lead's synthesis (nil where no model
// is called).
func New(d lambdafn.Deps, core *dynamo.Store, workflows workflow.Starter, callbacks workflow.Callbacks, model models.Model) *plans.Service {
	w := taskwiring.New(d, core, workflows, callbacks)
	return &plans.Service{Store: planstore.New(core.DB, core.Table), Tasks: w.Tasks, Model: model, Workflows: workflows,
		Callbacks: callbacks, Bus: w.Bus, Log: d.Log}
}
