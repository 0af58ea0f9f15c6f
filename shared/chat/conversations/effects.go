package conversations

import (
	"context"
)

// What a turn does once its commit is decided (the inbox messages its
// replies saw marked read, the results its replies carried posted, its
// handoff and rejoined participants announced) is a list of effects run
// one after the other under one deadline policy (afterCommit): none of
// them can undo the commit or change the answer, so each is best effort,
// logs its own failure and returns nothing, and together they get the
// time the commit's own context had (effectContext), so the function
// still answers whatever they do. A handoff committed on its own runs
// its effect the same way.

// effect is one after-commit effect. It runs within ctx (the policy's)
// and logs its own failure on it.
type effect func(ctx context.Context)

// afterCommit runs effects in order under the one policy: cut says the
// commit before them was cut off in flight (effectContext).
func (s *Service) afterCommit(ctx context.Context, cut bool, effects ...effect) {
	ectx, cancel := s.effectContext(ctx, cut)
	defer cancel()
	for _, e := range effects {
		e(ectx)
	}
}

// committedEffects are a committed turn's effects, in order: only now,
// the turn committed, are the messages its replies saw read; the results
// no stored message carries are posted; then its handoff and the agents
// it re-joined are announced.
func (s *Service) committedEffects(a answeredTurn) []effect {
	effects := []effect{
		s.inboxRead(a.teamID, a.out),
		s.resultsPosted(a.teamID, a.convID, a.out.undelivered(true)),
	}
	if a.hand != nil {
		effects = append(effects, s.handoffPublished(a.teamID, a.hand.handoff))
	}
	// None rejoined (>= 0) would publish no event either.
	if back := rejoined(a.th, a.out.answeredBy); len(back) > 0 {
		effects = append(effects, s.rejoinedPublished(a.teamID, a.convID, a.user, back))
	}
	// The turn chose, by mention, another agent than the one the router
	// gave the message before (corrections.go).
	if c := correctionIn(a.teamID, a.th.history, a.routed.Decision(), a.user); c != nil {
		effects = append(effects, s.correctionPublished(*c))
	}
	return effects
}

// inboxRead marks read the messages the committed turn's replies saw
// (outcome.seenBy). A failure is logged and loses nothing: the messages
// stay unread and are shown again in the agent's next context.
func (s *Service) inboxRead(teamID string, out outcome) effect {
	return func(ctx context.Context) {
		for agent, ids := range out.seenBy() {
			if _, err := s.inbox.Acknowledge(ctx, teamID, agent, ids); err != nil {
				s.log.WarnContext(ctx, "marking the inbox messages a reply saw read failed; they will be shown again", "agent", agent, "messages", ids, "error", err.Error())
			}
		}
	}
}

// resultsPosted posts the results no stored message carries
// (outcome.undelivered), each once; one that fails is logged with its
// work id (the result is still the work's own: GET /v1/tasks/{id}).
func (s *Service) resultsPosted(teamID, convID string, work []WorkRef) effect {
	return func(ctx context.Context) {
		for _, w := range work {
			if err := s.results.PostUndelivered(ctx, teamID, convID, w); err != nil {
				s.log.ErrorContext(ctx, "a result the reply carried was not posted", "team_id", teamID, "conversation_id", convID,
					"work", w.Type, "work_id", w.ID, "error", err.Error())
			}
		}
	}
}

// handoffPublished announces a committed handoff or return; every path
// publishes through it.
func (s *Service) handoffPublished(teamID string, h Handoff) effect {
	return func(ctx context.Context) {
		ev := HandoffEvent{TeamID: teamID, ConversationID: h.ConversationID, HandoffID: h.ID, From: h.From, To: h.To, Kind: h.Kind, Reason: h.Reason, CreatedAt: h.CreatedAt}
		if err := s.bus.Publish(ctx, HandoffDetailType, ev); err != nil {
			// The handoff is committed; the event feeds the activity log only.
			s.log.ErrorContext(ctx, "publishing HandoffCompleted failed", "handoff", h.ID, "error", err.Error())
		}
	}
}

// rejoinedPublished announces the agents a committed turn re-joined.
func (s *Service) rejoinedPublished(teamID, convID string, user Message, agents []string) effect {
	return func(ctx context.Context) {
		for _, a := range agents {
			ev := RejoinedEvent{TeamID: teamID, ConversationID: convID, Agent: a, MessageID: user.ID, DecisionID: user.DecisionID, CreatedAt: user.CreatedAt}
			if err := s.bus.Publish(ctx, RejoinedDetailType, ev); err != nil {
				// The turn is committed; the event feeds the activity log only.
				s.log.ErrorContext(ctx, "publishing ParticipantRejoined failed", "agent", a, "error", err.Error())
			}
		}
	}
}
