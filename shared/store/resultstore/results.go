package resultstore

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/streams"
	"github.com/conclave-ai/conclave/shared/store/conversationstore"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/work/results"
)

var _ results.Store = (*Store)(nil)

// postAttempts bounds PostResult's rounds against concurrent changes of
// the conversation (turns, handoffs, other results): each round one of
// the writers wins, so it is above the writers one conversation sees at
// once.
const postAttempts = 10

// convHead is what posting needs of the conversation item: the version
// its write is conditioned on, and its stream's last number.
type convHead struct {
	Version  int   `dynamodbav:"version"`
	EventSeq int64 `dynamodbav:"event_seq"`
}

// PostResult implements results.Store: in one transaction the marker
// (attribute_not_exists), the conversation's message_count, version and
// event_seq (conditioned on the version read; a closed conversation still
// takes the result of work it started), the message and its event on the
// conversation's stream (ResultPosted), numbered by that event_seq. A
// canceled marker is a result posted before: nothing is written and
// posted is false. The conversation is read first for its version and
// last number; a round that loses to a concurrent change gets the
// conversation as it now is from the cancellation (ALL_OLD) and tries
// again on it, without another read.
func (s *Store) PostResult(ctx context.Context, teamID string, m conversations.Message, marker string) (bool, error) {
	item, err := s.GetItem(ctx, dynamo.Key(dynamo.TeamPK(teamID), dynamo.ConvSK(m.ConversationID)))
	if err != nil {
		return false, err
	}
	for attempt := 1; ; attempt++ {
		if item == nil {
			return false, apperr.NotFound("conversation", m.ConversationID)
		}
		var posted, again bool
		posted, again, item, err = s.postOn(ctx, teamID, m, marker, item)
		if !again || attempt == postAttempts {
			return posted, err
		}
		select {
		case <-ctx.Done():
			return false, err
		case <-time.After(time.Duration(2+rand.IntN(10*attempt)) * time.Millisecond):
		}
	}
}

// postOn is one round of PostResult on the conversation item conv.
// again: the round lost to a concurrent change and can be tried again on
// next, the conversation as it now is (the cancellation's ALL_OLD; conv
// itself when the loss did not say: the next round finds out).
func (s *Store) postOn(ctx context.Context, teamID string, m conversations.Message, marker string, conv map[string]types.AttributeValue) (posted, again bool, next map[string]types.AttributeValue, err error) {
	var head convHead
	if err := dynamo.Unmarshal(conv, &head); err != nil {
		return false, false, nil, dynamo.Internal(err, "unmarshal")
	}
	ev, err := conversations.MessageEvent(teamID, m)
	if err != nil {
		return false, false, nil, dynamo.Internal(err, "marshal")
	}
	seq := head.EventSeq + 1
	ev.Seq = seq
	tx := s.Txn()
	tx.Create(conversationstore.RoleResult, conversationstore.ResultItem{PK: dynamo.TeamPK(teamID), SK: dynamo.ResultSK(marker), Type: "result_posted",
		ConversationID: m.ConversationID, MessageID: m.ID, PostedAt: m.CreatedAt.UTC()})
	u := expression.Add(dynamo.Name("message_count"), dynamo.Value(1)).Set(dynamo.Name("version"), dynamo.Value(head.Version+1)).
		Set(dynamo.Name("updated_at"), dynamo.Value(m.CreatedAt.UTC()))
	tx.Update(dynamo.RoleConversation, dynamo.Key(dynamo.TeamPK(teamID), dynamo.ConvSK(m.ConversationID)),
		dynamo.SetEventSeq(u, seq), dynamo.Name("version").Equal(dynamo.Value(head.Version)))
	tx.Create(dynamo.RoleMessage, conversationstore.ToMessageItem(teamID, m))
	tx.StreamEvents(teamID, streams.Conversation(m.ConversationID), seq, []streams.Event{ev})
	err = tx.Run(ctx)
	c, ok := dynamo.AsCanceled(err)
	if !ok {
		return err == nil, false, nil, err
	}
	retry := dynamo.RetryConflict(err, "the result conflicted with a concurrent change; try again")
	switch c.Role {
	case conversationstore.RoleResult:
		return false, false, nil, nil
	case dynamo.RoleConversation:
		// Moved on (or gone: Old is nil, and the next round says so).
		return false, true, c.Old, retry
	case "":
		// Lost to a concurrent transaction on one of its items.
		return false, true, conv, retry
	}
	return false, false, nil, retry
}
