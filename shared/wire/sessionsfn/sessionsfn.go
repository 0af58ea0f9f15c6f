// Package sessionsfn wires the "sessions" HTTP function: create, list,
// read, trace, cancel, approve and resume collaboration sessions. It links
// DynamoDB, EventBridge, Step Functions (to start and stop executions
// and to hand a human's decision to the waiting one) and Secrets Manager
// (a cancel cancels the tasks of A2A agents a stage waits for).
package sessionsfn

import (
	"github.com/conclave-ai/conclave/shared/a2a/remote"
	"github.com/conclave-ai/conclave/shared/api/sessionsapi"
	"github.com/conclave-ai/conclave/shared/aws/executions"
	"github.com/conclave-ai/conclave/shared/platform/httpapi"
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/store/agentstore"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/tools/secretstore"
	"github.com/conclave-ai/conclave/shared/tools/toolpacks"
	"github.com/conclave-ai/conclave/shared/wire/httpfn"
	"github.com/conclave-ai/conclave/shared/wire/sessionwiring"
)

// Build and Router wire the function (Router for tests of its routes).
var Build, Router = httpfn.New(register)

func register(d lambdafn.Deps, core *dynamo.Store, rt *httpapi.Router) {
	svc := sessionwiring.New(d, core, executions.FromConfig(d.AWS, d.Config.StateMachines), executions.CallbacksFromConfig(d.AWS), nil)
	// A cancelled session's stages waiting for A2A agents cancel their
	// remote tasks (sessions/remote.go).
	svc.Remote = &remote.Client{Policy: toolpacks.NetPolicy{LoopbackOnly: d.Config.MCPLoopbackOnly},
		Agents: agentstore.New(core.DB, core.Table), Secrets: secretstore.New(d.AWS)}
	sessionsapi.SessionRoutes(rt, svc)
}
