// Package tasksfn wires the "tasks" HTTP function: the task board,
// delegation and the lifecycle verbs. It links DynamoDB, EventBridge and
// Step Functions (to start and stop task executions).
package tasksfn

import (
	"github.com/conclave-ai/conclave/shared/api"
	"github.com/conclave-ai/conclave/shared/app/taskwiring"
	"github.com/conclave-ai/conclave/shared/executions"
	"github.com/conclave-ai/conclave/shared/httpapi"
	"github.com/conclave-ai/conclave/shared/lambdafn"
)

// Router is the function's router (tests read its route keys).
func Router(d lambdafn.Deps) *httpapi.Router {
	w := taskwiring.New(d, executions.FromConfig(d.AWS, d.Config.StateMachines))
	rt := httpapi.NewRouter(d.Log, w.Store)
	api.TaskRoutes(rt, w.Tasks)
	return rt
}

// Build implements lambdafn.Build.
func Build(d lambdafn.Deps) (any, error) { return Router(d).Serve, nil }
