// Package consultationsfn wires the "consultations" HTTP function: help
// requests between agents, the ExpertGate's choice of specialist (in
// process, over the table: one scoring needs no second function call
// inside a request that already waits for a model), the specialist's
// answer through the model port, loop detection, escalations and metrics.
// It links DynamoDB, EventBridge (ConsultationEscalated, MemoryShared),
// Bedrock and Step Functions (a task escalation's resolution acts on the
// task).
package consultationsfn

import (
	"github.com/conclave-ai/conclave/shared/api/consultapi"
	"github.com/conclave-ai/conclave/shared/app/consultwiring"
	"github.com/conclave-ai/conclave/shared/app/httpfn"
	"github.com/conclave-ai/conclave/shared/app/taskwiring"
	"github.com/conclave-ai/conclave/shared/dynamo"
	"github.com/conclave-ai/conclave/shared/eventbus"
	"github.com/conclave-ai/conclave/shared/executions"
	"github.com/conclave-ai/conclave/shared/httpapi"
	"github.com/conclave-ai/conclave/shared/lambdafn"
)

// Build and Router wire the function (Router for tests of its routes).
var Build, Router = httpfn.New(register)

func register(d lambdafn.Deps, core *dynamo.Store, rt *httpapi.Router) {
	svc := consultwiring.Service(d, core, eventbus.FromConfig(d.AWS, d.Config.BusName))
	// Resolving a task's escalation cancels or requeues the task, whose
	// execution (if it has one) is stopped or started again, and a
	// waiting parent woken: the task service with Step Functions.
	svc.Tasks = taskwiring.New(d, core, executions.FromConfig(d.AWS, d.Config.StateMachines), executions.CallbacksFromConfig(d.AWS)).Tasks
	consultapi.ConsultationRoutes(rt, svc)
}
