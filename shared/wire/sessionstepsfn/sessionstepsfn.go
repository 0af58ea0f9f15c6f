// Package sessionstepsfn wires the "session-steps" function: every state
// of the five collaboration machines (begin, plan, stage, decide,
// synthesize, await, complete, fail). It links DynamoDB, EventBridge,
// Step Functions (a stage's task wakes a parent waiting for it) and
// Bedrock.
package sessionstepsfn

import (
	"github.com/conclave-ai/conclave/shared/aws/eventbus"
	"github.com/conclave-ai/conclave/shared/aws/executions"
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/store/agentstore"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/wire/budgetwiring"
	"github.com/conclave-ai/conclave/shared/wire/providers"
	"github.com/conclave-ai/conclave/shared/wire/sessionwiring"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// Build implements lambdafn.Build.
func Build(d lambdafn.Deps) (any, error) {
	core := dynamo.FromConfig(d.AWS, d.Config.TableName)
	agentStore := agentstore.New(core.DB, core.Table)
	model, err := providers.New(d.Config, d.AWS, agentStore, budgetwiring.Guard(d, core, eventbus.FromConfig(d.AWS, d.Config.BusName)))
	if err != nil {
		return nil, err
	}
	svc := sessionwiring.New(d, core, nil, executions.CallbacksFromConfig(d.AWS), model)
	// A stage of an A2A agent outside the team is sent to it and waited
	// for in the session's machine (sessions/remote.go).
	svc.Remote = providers.Remote(d.Config, d.AWS, agentStore)
	// The steps answer their machine whatever the flag says: a session
	// that started runs to its end.
	svc.Enabled = true
	steps := workflow.Steps{}
	for _, m := range workflow.SessionMachines {
		steps[m] = svc.Steps()
	}
	return steps.Handle, nil
}
