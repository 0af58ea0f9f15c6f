package dynamo

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"

	"github.com/conclave-ai/conclave/shared/apperr"
	"github.com/conclave-ai/conclave/shared/conversations"
	"github.com/conclave-ai/conclave/shared/results"
)

var _ results.Store = (*Store)(nil)

// roleResult is the marker of a posted result in a transaction.
const roleResult = "result marker"

// resultItem marks the result of one piece of work (a task, a report, a
// session's run) as posted into its conversation, with the message that
// carries it. It has no expiry: it is what makes a redelivered event,
// whenever it comes, post nothing.
type resultItem struct {
	PK             string    `dynamodbav:"pk"`
	SK             string    `dynamodbav:"sk"`
	Type           string    `dynamodbav:"type"`
	ConversationID string    `dynamodbav:"conversation_id"`
	MessageID      string    `dynamodbav:"message_id"`
	PostedAt       time.Time `dynamodbav:"posted_at"`
}

// PostResult implements results.Store: in one transaction the marker
// (attribute_not_exists), the conversation's message_count and version
// (ADD, conditioned on the conversation existing; a closed one still
// takes the result of work it started) and the message. A canceled marker
// is a result posted before: nothing is written and posted is false.
// Concurrent turns touch the conversation item too; a transaction that
// only lost to one of them runs again (runConflicting).
func (s *Store) PostResult(ctx context.Context, teamID string, m conversations.Message, marker string) (bool, error) {
	tx := s.txn()
	tx.create(roleResult, resultItem{PK: teamPK(teamID), SK: resultSK(marker), Type: "result_posted",
		ConversationID: m.ConversationID, MessageID: m.ID, PostedAt: m.CreatedAt.UTC()})
	tx.update(roleConversation, key(teamPK(teamID), convSK(m.ConversationID)),
		expression.Add(name("message_count"), value(1)).Add(name("version"), value(1)).Set(name("updated_at"), value(m.CreatedAt.UTC())),
		name(attrPK).AttributeExists())
	tx.create(roleMessage, toMessageItem(teamID, m))
	err := tx.runConflicting(ctx)
	if c, ok := asCanceled(err); ok {
		switch c.Role {
		case roleResult:
			return false, nil
		case roleConversation:
			return false, apperr.NotFound("conversation", m.ConversationID)
		}
		return false, retryConflict(err, "the result conflicted with a concurrent change; try again")
	}
	return err == nil, err
}
