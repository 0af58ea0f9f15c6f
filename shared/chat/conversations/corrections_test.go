package conversations_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/routing/suggestions"
	"github.com/conclave-ai/conclave/shared/testkit/memstore"
)

func corrections(f *fixture) []suggestions.Correction {
	return memstore.Details[suggestions.Correction](f.bus, suggestions.DetailType)
}

// other is an agent of the demo team that is not slug.
func other(slug string) string {
	if slug == "dana" {
		return "wren"
	}
	return "dana"
}

func TestAMentionRightAfterTheRouterChoseIsAnnouncedAsACorrection(t *testing.T) {
	f := newFixture(t, collaborationOn)
	c := f.create(t, "")
	first := f.post(t, c.ID, "Please review this Go handler for bugs")
	answered := first.Replies[0].Agent
	chosen := other(answered)

	f.post(t, c.ID, "@"+chosen+" could you take this instead?")

	got := corrections(f)
	require.Len(t, got, 1)
	assert.Equal(t, suggestions.Correction{TeamID: team, ConversationID: c.ID, MessageID: first.UserMessage.ID, Content: "Please review this Go handler for bugs",
		DecisionID: first.Replies[0].DecisionID, AnsweredBy: answered, ChosenAgent: chosen, Kind: suggestions.KindMention, CorrectedAt: now}, got[0])

	// The next mention corrects a mention: nothing.
	f.post(t, c.ID, "@"+other(chosen)+" and you?")
	assert.Len(t, corrections(f), 1)
}

func TestAMentionOfTheAgentThatAnsweredCorrectsNothing(t *testing.T) {
	f := newFixture(t, collaborationOn)
	c := f.create(t, "")
	first := f.post(t, c.ID, "Please review this Go handler for bugs")
	f.post(t, c.ID, "@"+first.Replies[0].Agent+" thanks, go on")
	assert.Empty(t, corrections(f))
	// (A conversation that stayed with its agent by continuity is
	// announced: the routing-evaluator reads the decision's reason and
	// keeps no suggestion of it, see shared/routing/suggestions.)
}

func TestAHandoffRightAfterTheRouterChoseIsAnnouncedAsACorrection(t *testing.T) {
	f := newFixture(t, collaborationOn)
	ctx := context.Background()
	c := f.create(t, "")
	first := f.post(t, c.ID, "Please review this Go handler for bugs")
	answered := first.Replies[0].Agent
	chosen := other(answered)

	_, err := f.svc.Handoff(ctx, team, c.ID, conversations.HandoffInput{From: answered, To: chosen, Reason: "the user asked"})
	require.NoError(t, err)

	got := corrections(f)
	require.Len(t, got, 1)
	assert.Equal(t, first.UserMessage.ID, got[0].MessageID)
	assert.Equal(t, chosen, got[0].ChosenAgent)
	assert.Equal(t, answered, got[0].AnsweredBy)
	assert.Equal(t, suggestions.KindHandoff, got[0].Kind)

	// A return is the conversation going back, not a correction.
	_, err = f.svc.Return(ctx, team, c.ID)
	require.NoError(t, err)
	assert.Len(t, corrections(f), 1)
}
