package conversations

import (
	"context"
	"time"

	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/routing/cascade"
	"github.com/conclave-ai/conclave/shared/routing/suggestions"
)

// Routing that learns from use (shared/routing/suggestions): when the
// user's next act after the router answered their message chooses another
// agent (an @mention in the next message, or a handoff the client asks
// for), the message is announced as a correction, RoutingCorrected, after
// the commit. The routing-evaluator checks it against the decision log
// (only an automatic choice is corrected) and keeps it as a suggested
// example of the chosen agent for a person to accept or dismiss. A turn
// never waits on it: one event, published as an after-commit effect, and
// only on the turns that correct.

// correctionIn returns the correction a turn routed by decision d makes,
// given the history before it: d chose an agent by mention, and the last
// user message before this one was answered by another agent under a
// decision of its own. nil when the turn corrects nothing.
func correctionIn(teamID string, history []Message, d cascade.Decision, user Message) *suggestions.Correction {
	if d.DecidedBy != cascade.DecidedByMention || len(d.SelectedAgents) != 1 {
		return nil
	}
	return lastAnswered(teamID, history, d.SelectedAgents[0], suggestions.KindMention, user.CreatedAt)
}

// lastAnswered is the correction of the last user message in history, when
// its reply (an agent's, not a posted result) came from another agent than
// chosen.
func lastAnswered(teamID string, history []Message, chosen, kind string, at time.Time) *suggestions.Correction {
	var reply *Message
	for i := len(history) - 1; i >= 0; i-- {
		m := history[i]
		switch {
		case m.Role == AuthorUser:
			if reply == nil || reply.ReplyTo != m.ID || reply.Agent == chosen || reply.DecisionID == "" || !routed(reply.Strategy) {
				return nil
			}
			return &suggestions.Correction{TeamID: teamID, ConversationID: m.ConversationID, MessageID: m.ID, Content: m.Content,
				DecisionID: reply.DecisionID, AnsweredBy: reply.Agent, ChosenAgent: chosen, Kind: kind, Rating: reply.Rating,
				CorrectedAt: at}
		case m.Role == AuthorAssistant && m.ResultOf == nil && m.ReplyTo != "" && reply == nil:
			reply = &history[i]
		}
	}
	return nil
}

// routed: a reply of this strategy may have been the router's choice (a
// selection strategy, or the tier-0 router). A mention, a handoff, a
// direct conversation or a greeting is the user's or the conversation's
// choice, which nobody corrects: the routing-evaluator checks the decision
// itself, and this only spares it the events that cannot be corrections.
func routed(strategy string) bool {
	switch routing.Strategy(strategy) {
	case routing.Direct, routing.Mentioned, routing.HandedOff, routing.Greeting:
		return false
	}
	return true
}

// correctionWindow is how many of the latest messages a handoff the client
// asked for reads to find the message it corrects (its own note is one).
const correctionWindow = 10

// handoffCorrection announces the correction a committed handoff makes,
// when the client asked for it right after the router answered: the
// conversation's latest messages are read (after the commit, so the
// handoff itself never waits on them).
func (s *Service) handoffCorrection(teamID, convID string, h Handoff) effect {
	return func(ctx context.Context) {
		recent, err := s.store.RecentMessages(ctx, teamID, convID, correctionWindow)
		if err != nil {
			s.log.WarnContext(ctx, "reading the messages a handoff may correct failed; no example will be suggested", "conversation_id", convID, "error", err.Error())
			return
		}
		if c := lastAnswered(teamID, recent, h.To, suggestions.KindHandoff, h.CreatedAt); c != nil {
			s.correctionPublished(*c)(ctx)
		}
	}
}

// correctionPublished announces a committed correction.
func (s *Service) correctionPublished(c suggestions.Correction) effect {
	return func(ctx context.Context) {
		if err := s.bus.Publish(ctx, suggestions.DetailType, c); err != nil {
			// The turn is committed; the correction only feeds the
			// example suggestions.
			s.log.WarnContext(ctx, "publishing RoutingCorrected failed; no example will be suggested", "conversation_id", c.ConversationID, "message_id", c.MessageID, "error", err.Error())
		}
	}
}
