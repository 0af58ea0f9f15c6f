//go:build integration

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
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/platform/settings"
	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/routing/cascade"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/team/teams"
	"github.com/conclave-ai/conclave/shared/wire/conversationsfn"
)

// With the expert_gate flag off, the AgentRouter ranks a message's skills
// with the expert gate's skill match (issue 42: one ranking everywhere):
// the conversations function's own wiring asks the expert-gate function
// for the skill match alone, so a message sharing no word with any skill's
// description reaches the agent whose examples say it, which the
// words-only baseline cannot; the decision is the AgentRouter's, with the
// gate's scores, its rule applied to their calibrated confidence.
func TestTheAgentRouterRanksWithTheGatesSkillMatch(t *testing.T) {
	e := mustEnv(t)
	ctx := context.Background()
	tm, _, err := teams.NewService(e.db.teams).CreateTeam(ctx, "agent router")
	require.NoError(t, err)
	ag := agents.NewService(e.db.agents)
	for _, in := range []agents.CreateInput{
		{Slug: "host", Name: "Host", Skills: []agents.Skill{{Name: "small-talk", Description: "Greetings and general questions"}}},
		{Slug: "gardener", Name: "Gardener", Skills: []agents.Skill{{Name: "plant-care", Description: "Horticulture",
			Examples: []string{"my tomato leaves are yellow", "how often should I water basil?", "what fertilizer do roses need?", "why is my fern drooping?", "when do I repot an orchid?"}}}},
		{Slug: "mechanic", Name: "Mechanic", Skills: []agents.Skill{{Name: "car-repair", Description: "Automotive",
			Examples: []string{"my car makes a grinding noise when braking", "the engine light is on", "how often should I change the oil?", "my tyres lose pressure", "the battery dies overnight"}}}},
	} {
		_, err := ag.Create(ctx, tm.ID, in)
		require.NoError(t, err)
	}
	_, err = ag.SetDefault(ctx, tm.ID, "host")
	require.NoError(t, err)

	flags := settings.ParseFlags(cloud.LocalFlags)
	flags.ExpertGate = false
	require.True(t, flags.Collaboration)
	vars := map[string]string{settings.EnvStage: e.names.Stage, settings.EnvTable: e.names.Table(), settings.EnvBus: e.names.Bus(),
		settings.EnvFlags: flags.String(), settings.EnvFunctions: "expert-gate=" + e.names.Function("expert-gate"), settings.EnvModelProvider: "local"}
	deps := lambdafn.Deps{Config: settings.FromLookup(func(k string) string { return vars[k] }), AWS: e.cfg, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	cfg, err := conversationsfn.Config(deps, e.db.core)
	require.NoError(t, err)
	chat := conversations.MustNew(cfg)

	// The words-only baseline finds no skill for it: it shares no word
	// with any description or example.
	var active []agents.Agent
	for _, slug := range []string{"host", "gardener", "mechanic"} {
		a, err := ag.Get(ctx, tm.ID, slug)
		require.NoError(t, err)
		active = append(active, a)
	}
	q := "cucumber wilting, going brown"
	require.Equal(t, routing.ReasonDefault, routing.BuildIndex(active).Route(q, "", "host").Reason, "the words alone decline it")

	for _, tc := range []struct{ q, best string }{
		{q, "gardener"},
		{"squeaking brakes", "mechanic"},
		// Out of every skill: whatever the gate's confidence says, the
		// AgentRouter applies its rule to it (below).
		{"what's the capital of Peru?", ""},
	} {
		c, err := chat.Create(ctx, tm.ID, conversations.CreateInput{Title: "agent router"})
		require.NoError(t, err)
		res, err := chat.Post(ctx, tm.ID, c.ID, conversations.PostInput{Content: tc.q})
		require.NoError(t, err, tc.q)
		d := res.Routing
		assert.Equal(t, cascade.DecidedByAgentRouter, d.DecidedBy, tc.q)
		assert.Equal(t, routing.Router, d.Strategy, tc.q)
		require.NotEmpty(t, d.Scores, "the gate's skill match is the decision's")
		if tc.best != "" {
			assert.Equal(t, tc.best, d.Scores[0].AgentSlug, "%s: ranked by the examples' meaning", tc.q)
		}
		// The AgentRouter's rule on those scores: the best confident one,
		// else the default agent.
		if top := d.Scores[0]; top.Confidence >= d.Threshold {
			assert.Equal(t, []string{top.AgentSlug}, d.SelectedAgents, tc.q)
			assert.Equal(t, routing.ReasonSkill, d.Reason, tc.q)
		} else {
			assert.Equal(t, []string{"host"}, d.SelectedAgents, tc.q)
			assert.Equal(t, routing.ReasonDefault, d.Reason, tc.q)
			assert.True(t, d.Fallback, tc.q)
		}

	}
}
