package conversationstore

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
)

// handoffItem is a handoff record. The conversation's last handoff is the
// same struct nested in its item, without keys (hence omitempty on them).
type handoffItem struct {
	PK             string    `dynamodbav:"pk,omitempty"`
	SK             string    `dynamodbav:"sk,omitempty"`
	Type           string    `dynamodbav:"type,omitempty"`
	ID             string    `dynamodbav:"id"`
	ConversationID string    `dynamodbav:"conversation_id"`
	From           string    `dynamodbav:"from"`
	To             string    `dynamodbav:"to"`
	Kind           string    `dynamodbav:"kind"`
	Reason         string    `dynamodbav:"reason"`
	ContextSummary string    `dynamodbav:"context_summary,omitempty"`
	MemoryID       string    `dynamodbav:"memory_id,omitempty"`
	CreatedAt      time.Time `dynamodbav:"created_at"`
}

// handoffValue is h as a nested value (no keys).
func handoffValue(h conversations.Handoff) handoffItem {
	return handoffItem{
		ID: h.ID, ConversationID: h.ConversationID, From: h.From, To: h.To, Kind: h.Kind,
		Reason: h.Reason, ContextSummary: h.ContextSummary, MemoryID: h.MemoryID, CreatedAt: h.CreatedAt,
	}
}

func toHandoffItem(teamID string, h conversations.Handoff) handoffItem {
	it := handoffValue(h)
	it.PK, it.SK, it.Type = dynamo.TeamPK(teamID), dynamo.HandoffSK(h.ConversationID, h.ID), "handoff"
	return it
}

func (it handoffItem) toHandoff() conversations.Handoff {
	return conversations.Handoff{
		ID: it.ID, ConversationID: it.ConversationID, From: it.From, To: it.To, Kind: it.Kind,
		Reason: it.Reason, ContextSummary: it.ContextSummary, MemoryID: it.MemoryID, CreatedAt: it.CreatedAt,
	}
}

// CommitHandoff implements conversations.Store: the conversation
// (conditioned on the version read and still open), the record, the note
// and its event on the conversation's stream, the participants' roles,
// the counters, the handoff memory and both agents' cached contexts
// dropped, in one transaction.
func (s *Store) CommitHandoff(ctx context.Context, teamID string, h conversations.HandoffChange) error {
	c := h.Conversation
	c.TeamID = teamID
	tx := s.Txn()
	tx.Put(dynamo.RoleConversation, toConvItem(c), convUnchanged(c.Version-1))
	tx.Create(dynamo.RoleHandoff, toHandoffItem(teamID, h.Handoff))
	tx.Create(dynamo.RoleMessage, ToMessageItem(teamID, h.Note))
	if err := messageEvents(tx, teamID, c, []conversations.Message{h.Note}); err != nil {
		return err
	}
	for _, p := range h.Roles {
		join(tx, teamID, c.ID, p)
	}
	moveCurrent(tx, teamID, h.PrevCurrent, c.CurrentAgent, nil)
	return s.commitConversation(ctx, tx, teamID, "handoff", h.Memory)
}

// ListHandoffs implements conversations.Store, oldest first.
func (s *Store) ListHandoffs(ctx context.Context, teamID, convID string) ([]conversations.Handoff, error) {
	out := []conversations.Handoff{}
	err := s.QueryAll(ctx, dynamo.PrefixQuery(dynamo.TeamPK(teamID), dynamo.HandoffPrefix(convID), true), func(m map[string]types.AttributeValue) error {
		var it handoffItem
		if err := dynamo.Unmarshal(m, &it); err != nil {
			return err
		}
		out = append(out, it.toHandoff())
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
