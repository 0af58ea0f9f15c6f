// Package consultationsfn wires the "consultations" HTTP function: help
// requests between agents, the ExpertGate's choice of specialist (the
// expert-gate function, so a specialist is ranked as a chat turn's agent
// is, with the same embedder and examples), the specialist's answer
// through the model port, loop detection, escalations and metrics. It
// links DynamoDB, EventBridge (ConsultationEscalated, MemoryShared),
// Bedrock, Lambda (the gate) and Step Functions (a task escalation's
// resolution acts on the task).
package consultationsfn

import (
	"context"

	"github.com/conclave-ai/conclave/shared/api/consultationsapi"
	"github.com/conclave-ai/conclave/shared/aws/eventbus"
	"github.com/conclave-ai/conclave/shared/aws/executions"
	"github.com/conclave-ai/conclave/shared/platform/httpapi"
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/wire/consultationswiring"
	"github.com/conclave-ai/conclave/shared/wire/httpfn"
	"github.com/conclave-ai/conclave/shared/wire/taskwiring"
)

// Build and Router wire the function (Router for tests of its routes).
var Build, Router = httpfn.NewFallible(register)

func register(d lambdafn.Deps, core *dynamo.Store, rt *httpapi.Router) error {
	svc, err := consultationswiring.Service(d, core, eventbus.FromConfig(d.AWS, d.Config.BusName))
	if err != nil {
		return err
	}
	// Resolving a task's escalation cancels or requeues the task, whose
	// execution (if it has one) is stopped or started again, and a
	// waiting parent woken: the task service with Step Functions.
	svc.Tasks = taskwiring.New(d, core, executions.FromConfig(d.AWS, d.Config.StateMachines), executions.CallbacksFromConfig(d.AWS)).Tasks
	// A request's conversation_id must be the team's (one read, only
	// when it names one); the chat's tools pass their own, unchecked.
	svc.Conversations = conversationCheck{core}
	consultationsapi.ConsultationRoutes(rt, svc)
	return nil
}

// conversationCheck reads a request's conversation on the table: its
// item alone, so the function links no conversation store (or domain).
type conversationCheck struct{ core *dynamo.Store }

func (c conversationCheck) CheckConversation(ctx context.Context, teamID, id string) error {
	return dynamo.Exists(ctx, c.core, dynamo.Key(dynamo.TeamPK(teamID), dynamo.ConvSK(id)), "conversation", id)
}
