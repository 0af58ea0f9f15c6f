package resultstore

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"

	"github.com/conclave-ai/conclave/shared/apperr"
	"github.com/conclave-ai/conclave/shared/conversations"
	"github.com/conclave-ai/conclave/shared/dynamo"
	"github.com/conclave-ai/conclave/shared/dynamo/convstore"
	"github.com/conclave-ai/conclave/shared/results"
)

var _ results.Store = (*Store)(nil)

// PostResult implements results.Store: in one transaction the marker
// (attribute_not_exists), the conversation's message_count and version
// (ADD, conditioned on the conversation existing; a closed one still
// takes the result of work it started) and the message. A canceled marker
// is a result posted before: nothing is written and posted is false.
// Concurrent turns touch the conversation item too; a transaction that
// only lost to one of them runs again (runConflicting).
func (s *Store) PostResult(ctx context.Context, teamID string, m conversations.Message, marker string) (bool, error) {
	tx := s.Txn()
	tx.Create(convstore.RoleResult, convstore.ResultItem{PK: dynamo.TeamPK(teamID), SK: dynamo.ResultSK(marker), Type: "result_posted",
		ConversationID: m.ConversationID, MessageID: m.ID, PostedAt: m.CreatedAt.UTC()})
	tx.Update(dynamo.RoleConversation, dynamo.Key(dynamo.TeamPK(teamID), dynamo.ConvSK(m.ConversationID)),
		expression.Add(dynamo.Name("message_count"), dynamo.Value(1)).Add(dynamo.Name("version"), dynamo.Value(1)).Set(dynamo.Name("updated_at"), dynamo.Value(m.CreatedAt.UTC())),
		dynamo.Name(dynamo.AttrPK).AttributeExists())
	tx.Create(dynamo.RoleMessage, convstore.ToMessageItem(teamID, m))
	err := tx.RunConflicting(ctx)
	if c, ok := dynamo.AsCanceled(err); ok {
		switch c.Role {
		case convstore.RoleResult:
			return false, nil
		case dynamo.RoleConversation:
			return false, apperr.NotFound("conversation", m.ConversationID)
		}
		return false, dynamo.RetryConflict(err, "the result conflicted with a concurrent change; try again")
	}
	return err == nil, err
}
