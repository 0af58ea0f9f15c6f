// Package conversationsfn wires the "conversations" HTTP function: chat
// turns routed by the feature flags, the agents' replies through the model
// port with their tools (delegation, reports, sessions, messaging,
// handoff, memories), handoff and the memory context. It links DynamoDB,
// EventBridge, Lambda (the ExpertGate function), Step Functions (a
// delegation or a session started from a reply) and Bedrock.
package conversationsfn

import (
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/conclave-ai/conclave/shared/api"
	"github.com/conclave-ai/conclave/shared/app/consultationsfn"
	"github.com/conclave-ai/conclave/shared/app/httpfn"
	"github.com/conclave-ai/conclave/shared/app/sessionwiring"
	"github.com/conclave-ai/conclave/shared/app/taskwiring"
	"github.com/conclave-ai/conclave/shared/conversations"
	"github.com/conclave-ai/conclave/shared/dispatch"
	"github.com/conclave-ai/conclave/shared/dispatch/routermodel"
	"github.com/conclave-ai/conclave/shared/dynamo"
	"github.com/conclave-ai/conclave/shared/eventbus"
	"github.com/conclave-ai/conclave/shared/executions"
	"github.com/conclave-ai/conclave/shared/expertgate"
	"github.com/conclave-ai/conclave/shared/expertgate/gateclient"
	"github.com/conclave-ai/conclave/shared/httpapi"
	"github.com/conclave-ai/conclave/shared/lambdafn"
	"github.com/conclave-ai/conclave/shared/memory"
	"github.com/conclave-ai/conclave/shared/messaging"
	"github.com/conclave-ai/conclave/shared/models/providers"
	"github.com/conclave-ai/conclave/shared/reports"
	"github.com/conclave-ai/conclave/shared/results"
	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/settings"
	"github.com/conclave-ai/conclave/shared/tasktools"
)

// Build and Router wire the function (Router for tests of its routes).
var Build, Router = httpfn.New(register)

func register(d lambdafn.Deps, store *dynamo.Store, rt *httpapi.Router) {
	api.ConversationRoutes(rt, Service(d, store))
}

// Service builds the chat service the function serves, as its routes get
// it: exported so tests can check what the environment (FEATURE_FLAGS
// above all) turns on, such as the tools its agents are offered, without
// a request through the router.
func Service(d lambdafn.Deps, store *dynamo.Store) *conversations.Service {
	cfg := d.Config
	bus := eventbus.FromConfig(d.AWS, cfg.BusName)
	model := providers.New(cfg, d.AWS, store)
	var gate expertgate.Gate
	if fn := cfg.Functions["expert-gate"]; fn != "" {
		gate = &gateclient.Client{Lambda: lambda.NewFromConfig(d.AWS), FunctionName: fn}
	}
	var synth *routing.Synthesizer
	if cfg.Synthesis != "" {
		synth = &routing.Synthesizer{Model: model, ModelID: cfg.Synthesis}
	}
	flags := cfg.Flags.Effective()
	tiers := routing.TiersOrDefault(cfg.Tiers)
	router := &dispatch.Router{Gate: gate, Tiers: tiers, Log: d.Log,
		Flags: dispatch.Flags{Collaboration: flags.Collaboration, ExpertGate: flags.ExpertGate, Ensemble: flags.Ensemble, RouterModel: flags.RouterModel}}
	if flags.RouterModel {
		// The tier-0 model decides when the gate is unsure, through the
		// same model port (and Bedrock grant) as the agents' replies.
		router.Chooser = routermodel.New(model, tiers)
	}
	mem := &memory.Service{Store: store, Dir: store, Bus: bus}
	svc := &conversations.Service{Store: store, Agents: store, Router: router, Model: model, Synth: synth,
		Memories: mem, Bus: bus, Tools: chatTools(d, store, mem), Tail: store, Log: d.Log,
		// A reply that waited for a delegation and was not stored: its
		// result is posted as the result-poster function would have.
		Results: &results.Poster{Store: store, Log: d.Log}}
	return svc
}

// chatTools are the tools of agents answering in a chat, on the same
// services as the task worker's (delegations and sessions start their
// executions from here).
func chatTools(d lambdafn.Deps, store *dynamo.Store, mem *memory.Service) conversations.Tools {
	starter := executions.FromConfig(d.AWS, d.Config.StateMachines)
	w := taskwiring.New(d, store, starter, nil)
	tools := &tasktools.Tools{Flags: d.Config.Flags, Tasks: w.Tasks, Memories: mem,
		Messages: &messaging.Service{Store: store, Dir: store, Bus: w.Bus},
		Reports:  &reports.Service{Store: store, Tasks: w.Tasks, Conversations: store, Bus: w.Bus, Log: d.Log}}
	// consult_specialist: the same service as POST /v1/consultations.
	tools.Consultations = consultationsfn.Service(d, store, w.Bus)
	if d.Config.Flags.On(settings.FlagSessions) {
		tools.Sessions = sessionwiring.New(d, store, starter, nil, nil)
	}
	return tasktools.Chat{Tools: tools}
}
