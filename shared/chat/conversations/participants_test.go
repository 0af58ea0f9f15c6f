package conversations_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/testkit/memstore"
)

// The gate prefers the conversation's invited agents (by
// cascade.ParticipantPreference): dana, invited, answers before luke,
// who scores a little higher.
func TestTheGatePrefersTheInvitedAgents(t *testing.T) {
	f := gateFixture(t, f0model(), &fakeTools{})
	f.cfg.Router.Gate = gate{scores: []routing.ExpertScore{
		{AgentSlug: "luke", AgentName: "Luke", Overall: 0.82, Confidence: 0.82},
		{AgentSlug: "dana", AgentName: "Dana", Overall: 0.8, Confidence: 0.8},
	}}
	c := f.create(t, "kyra")
	require.Equal(t, "luke", reply(t, f.post(t, c.ID, "How do I index the orders table?")).Agent, "not invited")
	c2 := f.create(t, "kyra")
	_, err := f.svc.SetAgents(context.Background(), team, c2.ID, conversations.AgentsInput{Add: []string{"dana"}})
	require.NoError(t, err)
	assert.Equal(t, "dana", reply(t, f.post(t, c2.ID, "How do I index the orders table?")).Agent, "invited")
}

// An agent removed from a conversation that answers again (here the gate
// still scores it best) rejoins it, and the rejoin is announced once.
func TestARemovedAgentThatAnswersRejoins(t *testing.T) {
	f := gateFixture(t, f0model(), &fakeTools{})
	ctx := context.Background()
	c := f.create(t, "kyra")
	_, err := f.svc.SetAgents(ctx, team, c.ID, conversations.AgentsInput{Add: []string{"luke"}})
	require.NoError(t, err)
	_, err = f.svc.SetAgents(ctx, team, c.ID, conversations.AgentsInput{Remove: []string{"luke"}})
	require.NoError(t, err)
	require.Equal(t, "left", roles(f.get(t, c.ID))["luke"])

	assert.Equal(t, "luke", reply(t, f.post(t, c.ID, "How do I index the orders table?")).Agent)
	ev := memstore.Details[conversations.RejoinedEvent](f.bus, conversations.RejoinedDetailType)
	require.Len(t, ev, 1)
	assert.Equal(t, "luke", ev[0].Agent)
	assert.Equal(t, conversations.RoleInvited, roles(f.get(t, c.ID))["luke"])

	f.post(t, c.ID, "And the customers table?")
	assert.Len(t, memstore.Details[conversations.RejoinedEvent](f.bus, conversations.RejoinedDetailType), 1, "once")
}

func f0model() *pricedModel {
	return &pricedModel{answers: map[string]string{"luke": relevant, "dana": relevant, "kyra": relevant, "archie": relevant}}
}
