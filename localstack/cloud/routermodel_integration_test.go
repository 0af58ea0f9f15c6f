//go:build integration

// The tier-0 router model end to end against the local cloud: the chat
// service built by the conversations function's own wiring from a
// FEATURE_FLAGS with router_model on (the local cloud's demo keeps it
// off), the real expert-gate function through the Lambda Invoke API, the
// model port (the deterministic local model answering choose_agent), the
// turn committed with its decision to DynamoDB Local, and the decision
// read back through the HTTP API.
package cloud_test

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/localstack/cloud"
	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/models/localmodel"
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/platform/settings"
	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/routing/cascade"
	"github.com/conclave-ai/conclave/shared/wire/conversationsfn"
)

// unsureQuestion: the gate finds Sage (security review) and Archie
// (architecture) both confident and within cascade.UnsureMargin, Sage
// first; the local tier-0 model picks Archie, whose skill description
// shares "design" with it.
const unsureQuestion = "Is this API design secure against injection?"

// routerModelChat is the chat service of the conversations function with
// the local cloud's flags and router_model on.
func routerModelChat(t *testing.T, e env) *conversations.Service {
	t.Helper()
	flags := settings.ParseFlags(cloud.LocalFlags)
	require.False(t, flags.RouterModel, "the local cloud's demo routes by the gate alone")
	flags.RouterModel = true
	vars := map[string]string{settings.EnvStage: e.names.Stage, settings.EnvTable: e.names.Table(), settings.EnvBus: e.names.Bus(),
		settings.EnvFlags: flags.String(), settings.EnvFunctions: "expert-gate=" + e.names.Function("expert-gate"), settings.EnvModelProvider: "local"}
	deps := lambdafn.Deps{Config: settings.FromLookup(func(k string) string { return vars[k] }), AWS: e.cfg, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	cfg, err := conversationsfn.Config(deps, e.db.core)
	require.NoError(t, err)
	require.NotNil(t, cfg.Router.Chooser, "router_model on: the wiring builds the tier-0 chooser")
	return conversations.MustNew(cfg)
}

// gatesChoice is the agent the gate's scores select for TOP_1 at the
// threshold: the first confident one in the gate's order.
func gatesChoice(t *testing.T, d cascade.Decision) string {
	t.Helper()
	confident, _ := routing.Confident(d.Scores, d.Threshold)
	require.NotEmpty(t, confident, "the gate found a confident agent")
	return confident[0].AgentSlug
}

// apiDecision reads a decision back through the HTTP API.
func (d demoTeam) apiDecision(id string) map[string]any {
	d.t.Helper()
	st, dec := d.call("GET", "/v1/routing/decisions/"+id, nil)
	require.Equal(d.t, 200, st, dec)
	return dec
}

func TestAnUnsureQuestionIsDecidedByTheTierZeroModel(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	ctx := context.Background()
	svc := routerModelChat(t, e)

	conv, err := svc.Create(ctx, d.id, conversations.CreateInput{Title: "router model"})
	require.NoError(t, err)
	res, err := svc.Post(ctx, d.id, conv.ID, conversations.PostInput{Content: unsureQuestion})
	require.NoError(t, err)
	dec := res.Routing

	// The gate was unsure between its two best, and would have chosen Sage.
	require.GreaterOrEqual(t, len(dec.Scores), 2)
	require.Equal(t, "sage", gatesChoice(t, dec), "the gate's own choice (scores: %+v)", dec.Scores)
	byConf := map[string]float64{}
	for _, s := range dec.Scores {
		byConf[s.AgentSlug] = s.Confidence
	}
	require.InDelta(t, byConf["sage"], byConf["archie"], cascade.UnsureMargin, "within the unsure margin")

	// The tier-0 model chose Archie, Archie answered, and the decision says so.
	assert.Equal(t, cascade.DecidedByRouterModel, dec.DecidedBy)
	assert.Equal(t, cascade.ReasonRouterModel, dec.Reason)
	assert.Equal(t, []string{"archie"}, dec.SelectedAgents)
	assert.Equal(t, "archie", res.Replies[len(res.Replies)-1].Agent)
	require.NotNil(t, dec.RouterModel)
	rm := dec.RouterModel
	assert.Equal(t, cascade.ChoiceChosen, rm.Outcome)
	assert.Equal(t, "archie", rm.Agent)
	assert.Equal(t, "architecture", rm.Skill)
	assert.Equal(t, 0.8, rm.Confidence)
	assert.Equal(t, "Archie shares design with the question", rm.Reason)
	assert.Equal(t, routing.DefaultTierModels[routing.Tier0], rm.Model)
	assert.Positive(t, rm.CostUSD, "the tier-0 model is priced")
	assert.Positive(t, rm.InputTokens)
	assert.GreaterOrEqual(t, dec.ActualCost, rm.CostUSD, "the call counts in the decision's cost")
	assert.True(t, dec.Flags.RouterModel)

	// The decision log through the API holds the same.
	api := d.apiDecision(dec.ID)
	assert.Equal(t, "router_model", api["decided_by"])
	assert.Equal(t, "router_model", api["reason"])
	assert.Equal(t, []any{"archie"}, api["selected_agents"])
	logged := api["router_model"].(map[string]any)
	assert.Equal(t, "chosen", logged["outcome"])
	assert.Equal(t, "archie", logged["agent"])
	assert.Equal(t, "architecture", logged["skill"])
	assert.Equal(t, rm.Model, logged["model"])
	assert.InDelta(t, rm.CostUSD, logged["cost_usd"], 1e-12)
	assert.Contains(t, logged, "latency_ms")
	assert.InDelta(t, dec.ActualCost, api["actual_cost"], 1e-12)
	assert.Equal(t, true, api["flags"].(map[string]any)["router_model"])

	// The same question through the local cloud's API, whose flags keep
	// router_model off: the gate decides alone (Sage), no model is asked.
	apiConv := d.conversation("")
	turn := d.post(apiConv, map[string]any{"content": unsureQuestion})
	r := turn["routing"].(map[string]any)
	if r["flags"].(map[string]any)["router_model"] == true {
		t.Log("the local cloud runs with router_model on (FEATURE_FLAGS): the flag-off contrast is skipped")
		return
	}
	assert.Equal(t, "gate", r["decided_by"])
	assert.NotContains(t, r, "router_model")
	assert.Equal(t, []any{"sage"}, r["selected_agents"])
}

// When the tier-0 model fails, answers with garbage or runs out of time,
// the gate's choice stands and the decision log says what happened.
func TestTheGatesChoiceStandsWhenTheTierZeroModelFails(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	ctx := context.Background()
	svc := routerModelChat(t, e)
	for _, tc := range []struct {
		marker, outcome, errPart string
	}{
		{localmodel.RouterFail, cascade.ChoiceFailed, "scripted router model failure"},
		{localmodel.RouterGarbage, cascade.ChoiceInvalid, "choose_agent input"},
		{localmodel.RouterTimeout, cascade.ChoiceFailed, "timed out after 3s"},
	} {
		t.Run(tc.marker, func(t *testing.T) {
			conv, err := svc.Create(ctx, d.id, conversations.CreateInput{Title: tc.marker})
			require.NoError(t, err)
			res, err := svc.Post(ctx, d.id, conv.ID, conversations.PostInput{Content: unsureQuestion + " " + tc.marker})
			require.NoError(t, err)
			dec := res.Routing
			require.NotNil(t, dec.RouterModel, "the gate was unsure, the model was asked (scores: %+v)", dec.Scores)
			assert.Equal(t, tc.outcome, dec.RouterModel.Outcome)
			assert.Contains(t, dec.RouterModel.Error, tc.errPart)
			want := gatesChoice(t, dec)
			assert.Equal(t, []string{want}, dec.SelectedAgents, "the gate's choice stands")
			assert.Equal(t, want, res.Replies[len(res.Replies)-1].Agent)
			assert.Equal(t, cascade.DecidedByGate, dec.DecidedBy)
			assert.Equal(t, routing.ReasonGate, dec.Reason)

			api := d.apiDecision(dec.ID)
			assert.Equal(t, "gate", api["decided_by"])
			logged := api["router_model"].(map[string]any)
			assert.Equal(t, tc.outcome, logged["outcome"])
			assert.Contains(t, logged["error"], tc.errPart)
		})
	}
}
