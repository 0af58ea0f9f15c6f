package conversations

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/authctx"
	"github.com/conclave-ai/conclave/shared/routing/cascade"
)

// Choose routes text in the open conversation convID as a turn would (the
// same router: the gate's scores, continuity with the current agent, the
// conversation's participants, the default agent) without answering it,
// and returns the agent the turn would ask first. A message that arrives
// over A2A (shared/a2a/server) becomes a task of that agent instead of a
// reply. Nothing is stored. Returns EINVALID, ENOTFOUND, ECONFLICT (a
// closed conversation, or no agent to answer).
func (s *Service) Choose(ctx context.Context, teamID, convID, text string) (string, error) {
	text = strings.TrimSpace(text)
	if n := utf8.RuneCountInString(text); n == 0 || n > MaxContent {
		return "", apperr.Invalid("content", "content must be 1 to %d characters", MaxContent)
	}
	th, err := s.read(ctx, teamID, convID)
	if err != nil {
		return "", err
	}
	opts, err := cascade.ParseOptions("", nil, nil)
	if err != nil {
		return "", err
	}
	routed, err := s.router.Route(ctx, cascade.Request{
		TeamID: teamID, ConversationID: convID, Query: text,
		CurrentAgent: th.conv.CurrentAgent, HandoffActive: th.conv.HandoffActive, Active: th.active, DefaultAgent: th.def,
		Invited: th.participants(RoleInvited, false), Removed: th.participants("", true),
		Options: opts, Start: time.Now(), At: s.now.UTC(), UserID: authctx.CallerOf(ctx).UserID,
	})
	if err != nil {
		return "", err
	}
	return routed.Decision().SelectedAgents[0], nil
}
