package conversations

import (
	"context"
	"errors"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/idempotency"
	"github.com/conclave-ai/conclave/shared/routing/cascade"
)

// Replays reads back what a turn stored under an Idempotency-Key.
//
// The HTTP layer replays a key's answer once it has one; this is for the
// request whose answer never came (its commit cut off by the deadline:
// 503 OutcomeUnknown). Its key was released so the client may send the
// message again, and the turn may have been stored all the same: the
// reference written with the turn (Turn.IdempotencyKey) makes the repeat
// answer that turn instead of storing a second one.
type Replays interface {
	// TurnOf returns the ids of the messages of the turn stored under key
	// (the user's first), nil when none was.
	TurnOf(ctx context.Context, teamID, key string) ([]string, error)
	// GetDecision returns the routing decision of a turn. ENOTFOUND.
	GetDecision(ctx context.Context, teamID, id string) (cascade.Decision, error)
}

// RefKind is the kind of a turn's idempotency reference: the handler of
// POST /v1/conversations/{id}/messages scopes its key to it.
const RefKind = "turn"

// storedTurn returns the turn stored under the request's Idempotency-Key,
// if one was, before anything is asked of an agent.
func (s *Service) storedTurn(ctx context.Context, teamID, convID string) (PostResult, bool, error) {
	key := idempotency.KeyFor(ctx, RefKind)
	if key == "" {
		return PostResult{}, false, nil
	}
	msgIDs, err := s.replays.TurnOf(ctx, teamID, key)
	if err != nil || len(msgIDs) == 0 {
		return PostResult{}, false, err
	}
	res, err := s.replay(ctx, teamID, convID, msgIDs)
	return res, true, err
}

// replayed reports whether err is the commit's refusal of a second turn
// under the key, and answers the first.
func (s *Service) replayed(ctx context.Context, teamID, convID string, err error) (PostResult, bool, error) {
	var r Replayed
	if !errors.As(err, &r) {
		return PostResult{}, false, nil
	}
	res, err := s.replay(ctx, teamID, convID, r.MessageIDs)
	return res, true, err
}

// replay is the stored turn as Post answered it: its user message, the
// replies and notes, and its routing decision.
func (s *Service) replay(ctx context.Context, teamID, convID string, msgIDs []string) (PostResult, error) {
	var res PostResult
	for i, id := range msgIDs {
		m, err := s.store.GetMessage(ctx, teamID, convID, id)
		if apperr.Is(err, apperr.ENOTFOUND) && i == 0 {
			// The key's turn is another conversation's: the HTTP layer
			// refuses a key reused with another path, so only a store
			// shared across routes lands here.
			return PostResult{}, apperr.New(apperr.ECONFLICT, "the Idempotency-Key was used for a message to another conversation").WithReason("IdempotencyKeyReused")
		}
		if err != nil {
			return PostResult{}, err
		}
		if i == 0 {
			res.UserMessage = m
		} else {
			res.Replies = append(res.Replies, m)
		}
	}
	res.Routing = cascade.Decision{ID: res.UserMessage.DecisionID}
	if res.UserMessage.DecisionID != "" {
		d, err := s.replays.GetDecision(ctx, teamID, res.UserMessage.DecisionID)
		if err != nil {
			return PostResult{}, err
		}
		res.Routing = d
	}
	if res.Replies == nil {
		res.Replies = []Message{}
	}
	res.Replayed = true
	return res, nil
}
