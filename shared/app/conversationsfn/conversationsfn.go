// Package conversationsfn wires the "conversations" HTTP function: chat
// turns routed by the feature flags, the agents' replies through the model
// port, handoff and the memory context. It links DynamoDB, EventBridge,
// Lambda (the ExpertGate function) and Bedrock.
package conversationsfn

import (
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/conclave-ai/conclave/shared/api"
	"github.com/conclave-ai/conclave/shared/app/httpfn"
	"github.com/conclave-ai/conclave/shared/conversations"
	"github.com/conclave-ai/conclave/shared/dispatch"
	"github.com/conclave-ai/conclave/shared/dynamo"
	"github.com/conclave-ai/conclave/shared/eventbus"
	"github.com/conclave-ai/conclave/shared/expertgate"
	"github.com/conclave-ai/conclave/shared/expertgate/gateclient"
	"github.com/conclave-ai/conclave/shared/httpapi"
	"github.com/conclave-ai/conclave/shared/lambdafn"
	"github.com/conclave-ai/conclave/shared/memory"
	"github.com/conclave-ai/conclave/shared/models/providers"
	"github.com/conclave-ai/conclave/shared/routing"
)

// Build and Router wire the function (Router for tests of its routes).
var Build, Router = httpfn.New(register)

func register(d lambdafn.Deps, store *dynamo.Store, rt *httpapi.Router) {
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
	router := &dispatch.Router{Gate: gate, Flags: dispatch.Flags{Collaboration: cfg.Flags.Collaboration, ExpertGate: cfg.Flags.ExpertGate, Ensemble: cfg.Flags.Ensemble}, Tiers: routing.TiersOrDefault(cfg.Tiers), Log: d.Log}
	svc := &conversations.Service{Store: store, Agents: store, Router: router, Model: model, Synth: synth,
		Memories: &memory.Service{Store: store, Dir: store, Bus: bus}, Bus: bus, Tail: store, Log: d.Log}
	api.ConversationRoutes(rt, svc)
}
