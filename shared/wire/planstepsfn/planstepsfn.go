// Package planstepsfn wires the "plan-steps" function: every state of the
// plan machine (begin, start a step, wait for a slot or a step, end a
// step, the next round, synthesize, complete, fail). It links DynamoDB,
// EventBridge, Step Functions (a step is an executed task: its execution
// is started, its end wakes the waiting state) and the models (the lead's
// synthesis).
package planstepsfn

import (
	"github.com/conclave-ai/conclave/shared/aws/eventbus"
	"github.com/conclave-ai/conclave/shared/aws/executions"
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/store/agentstore"
	"github.com/conclave-ai/conclave/shared/store/conversationstore"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/store/reportstore"
	"github.com/conclave-ai/conclave/shared/wire/budgetwiring"
	"github.com/conclave-ai/conclave/shared/wire/planwiring"
	"github.com/conclave-ai/conclave/shared/wire/providers"
	"github.com/conclave-ai/conclave/shared/work/reports"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// Build implements lambdafn.Build.
func Build(d lambdafn.Deps) (any, error) {
	core := dynamo.FromConfig(d.AWS, d.Config.TableName)
	model, err := providers.New(d.Config, d.AWS, agentstore.New(core.DB, core.Table), budgetwiring.Guard(d, core, eventbus.FromConfig(d.AWS, d.Config.BusName)))
	if err != nil {
		return nil, err
	}
	svc := planwiring.New(d, core, executions.FromConfig(d.AWS, d.Config.StateMachines), executions.CallbacksFromConfig(d.AWS), model)
	// A report step's report: the same service as POST /v1/reports, on
	// the plan's task service (its task is a step under the plan's root).
	svc.Reports = &reports.Service{Store: reportstore.New(core.DB, core.Table), Tasks: svc.Tasks,
		Conversations: conversationstore.New(core.DB, core.Table), Bus: svc.Bus, Log: d.Log}
	return workflow.Steps{workflow.PlanMachine: svc.Steps()}.Handle, nil
}
