package conversationstore

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/store/expertgatestore"
)

// feedbackRetention: ratings feed past performance for 30 days.
const feedbackRetention = 31 * 24 * time.Hour

// messageItem is a conversation message. A rating of an agent reply sets
// rating, rating_comment and rated_at on it (RateMessage).
type messageItem struct {
	PK              string    `dynamodbav:"pk"`
	SK              string    `dynamodbav:"sk"`
	Type            string    `dynamodbav:"type"`
	ID              string    `dynamodbav:"id"`
	ConversationID  string    `dynamodbav:"conversation_id"`
	Role            string    `dynamodbav:"role"`
	Agent           string    `dynamodbav:"agent,omitempty"`
	Content         string    `dynamodbav:"content"`
	CreatedAt       time.Time `dynamodbav:"created_at"`
	ReplyTo         string    `dynamodbav:"reply_to,omitempty"`
	DecisionID      string    `dynamodbav:"decision_id,omitempty"`
	Strategy        string    `dynamodbav:"strategy,omitempty"`
	Contributors    []string  `dynamodbav:"contributors,omitempty"`
	ModelID         string    `dynamodbav:"model_id,omitempty"`
	InputTokens     int       `dynamodbav:"input_tokens,omitempty"`
	OutputTokens    int       `dynamodbav:"output_tokens,omitempty"`
	CostUSD         float64   `dynamodbav:"cost_usd,omitempty"`
	LatencyMS       int64     `dynamodbav:"latency_ms,omitempty"`
	ContextMemories []string  `dynamodbav:"context_memories,omitempty"`
	// ResultOf and Pending are the work a message reports on (a nested
	// map) and the work a reply left running (a list of them).
	ResultOf *workRefItem  `dynamodbav:"result_of,omitempty"`
	Pending  []workRefItem `dynamodbav:"pending,omitempty"`
	// Query is the user message an agent reply answered.
	Query string `dynamodbav:"query,omitempty"`
	// ToolCalls and Stopped are a reply's tool loop.
	ToolCalls []conversations.ToolUse `dynamodbav:"tool_calls,omitempty"`
	Stopped   string                  `dynamodbav:"stopped,omitempty"`

	Rating        int        `dynamodbav:"rating,omitempty"`
	RatingComment string     `dynamodbav:"rating_comment,omitempty"`
	RatedAt       *time.Time `dynamodbav:"rated_at,omitempty"`
}

// workRefItem is a conversations.WorkRef (a nested map). It converts from
// the domain type, so a field added there fails to compile here rather
// than going unstored.
type workRefItem struct {
	Type   string `dynamodbav:"type"`
	ID     string `dynamodbav:"id"`
	Status string `dynamodbav:"status,omitempty"`
	Agent  string `dynamodbav:"agent,omitempty"`
}

func toWorkRefItems(refs []conversations.WorkRef) []workRefItem {
	var out []workRefItem
	for _, r := range refs {
		out = append(out, workRefItem(r))
	}
	return out
}

func fromWorkRefItems(items []workRefItem) []conversations.WorkRef {
	var out []conversations.WorkRef
	for _, it := range items {
		out = append(out, conversations.WorkRef(it))
	}
	return out
}

// ToMessageItem is the stored form of a conversation message; results are
// posted with it (resultstore).
func ToMessageItem(teamID string, m conversations.Message) messageItem {
	it := messageItem{
		PK: dynamo.TeamPK(teamID), SK: dynamo.MsgSK(m.ConversationID, m.ID), Type: "message",
		ID: m.ID, ConversationID: m.ConversationID, Role: m.Role, Agent: m.Agent, Content: m.Content,
		CreatedAt: m.CreatedAt, ReplyTo: m.ReplyTo, DecisionID: m.DecisionID, Strategy: m.Strategy,
		Contributors: m.Contributors, ModelID: m.ModelID, InputTokens: m.InputTokens, OutputTokens: m.OutputTokens,
		CostUSD: m.CostUSD, LatencyMS: m.LatencyMS, ContextMemories: m.ContextMemories, Query: m.Query, Rating: m.Rating,
		ToolCalls: m.ToolCalls, Stopped: m.Stopped, Pending: toWorkRefItems(m.Pending),
	}
	if m.ResultOf != nil {
		r := workRefItem(*m.ResultOf)
		it.ResultOf = &r
	}
	return it
}

func fromMessageItem(m map[string]types.AttributeValue) (conversations.Message, error) {
	var it messageItem
	err := dynamo.Unmarshal(m, &it)
	msg := conversations.Message{
		ID: it.ID, ConversationID: it.ConversationID, Role: it.Role, Agent: it.Agent, Content: it.Content,
		CreatedAt: it.CreatedAt, ReplyTo: it.ReplyTo, DecisionID: it.DecisionID, Strategy: it.Strategy,
		Contributors: it.Contributors, ModelID: it.ModelID, InputTokens: it.InputTokens, OutputTokens: it.OutputTokens,
		CostUSD: it.CostUSD, LatencyMS: it.LatencyMS, Rating: it.Rating, ContextMemories: it.ContextMemories, Query: it.Query,
		ToolCalls: it.ToolCalls, Stopped: it.Stopped, Pending: fromWorkRefItems(it.Pending),
	}
	if it.ResultOf != nil {
		r := conversations.WorkRef(*it.ResultOf)
		msg.ResultOf = &r
	}
	return msg, err
}

// toFeedbackItem is the rating of a reply as the expert gate reads it
// (expertgatestore.FeedbackItem).
func toFeedbackItem(teamID, agent string, f conversations.Feedback) expertgatestore.FeedbackItem {
	return expertgatestore.FeedbackItem{
		PK: dynamo.TeamPK(teamID), SK: dynamo.FeedbackSK(f.MessageID, agent), Type: "feedback", Agent: agent,
		Rating: f.Rating, Query: f.Query, RatedAt: f.RatedAt.UTC(), ExpiresAt: dynamo.TTL(f.RatedAt.Add(feedbackRetention)),
		UserID: f.UserID,
	}
}

// ListMessages implements conversations.Store, oldest first.
func (s *Store) ListMessages(ctx context.Context, teamID, id string, p paging.Page) ([]conversations.Message, string, error) {
	list := []conversations.Message{}
	next, err := s.QueryPage(ctx, dynamo.PrefixQuery(dynamo.TeamPK(teamID), dynamo.MsgPrefix(id), true), "msgs:"+teamID+":"+id, p, func(m map[string]types.AttributeValue) error {
		msg, err := fromMessageItem(m)
		list = append(list, msg)
		return err
	})
	return list, next, err
}

// ListMessagesAfter implements conversations.MessageTail, oldest first:
// the key range of the conversation's messages from after (BETWEEN, as
// hasPrefix bounds it), started past after itself (ExclusiveStartKey; a
// page token, bound to the conversation and after, continues from its
// last key instead).
func (s *Store) ListMessagesAfter(ctx context.Context, teamID, convID, after string, p paging.Page) ([]conversations.Message, string, error) {
	pk := dynamo.TeamPK(teamID)
	in, err := dynamo.BuiltQuery("", dynamo.KeyIs(dynamo.AttrPK, pk).And(expression.Key(dynamo.AttrSK).Between(dynamo.Value(dynamo.MsgSK(convID, after)), dynamo.Value(dynamo.MsgPrefix(convID)+dynamo.PrefixEnd))),
		expression.ConditionBuilder{}, true)
	if err != nil {
		return nil, "", dynamo.Internal(err, "expression")
	}
	in.ExclusiveStartKey = dynamo.Key(pk, dynamo.MsgSK(convID, after))
	list := []conversations.Message{}
	next, err := s.QueryPage(ctx, in, "msgs-after:"+teamID+":"+convID+":"+after, p, func(m map[string]types.AttributeValue) error {
		msg, err := fromMessageItem(m)
		list = append(list, msg)
		return err
	})
	return list, next, err
}

// RecentMessages implements conversations.Store.
func (s *Store) RecentMessages(ctx context.Context, teamID, id string, n int) ([]conversations.Message, error) {
	var list []conversations.Message
	_, err := s.QueryPage(ctx, dynamo.PrefixQuery(dynamo.TeamPK(teamID), dynamo.MsgPrefix(id), false), "recent", paging.Page{Limit: n}, func(m map[string]types.AttributeValue) error {
		msg, err := fromMessageItem(m)
		list = append(list, msg)
		return err
	})
	for i, j := 0, len(list)-1; i < j; i, j = i+1, j-1 {
		list[i], list[j] = list[j], list[i]
	}
	return list, err
}

// GetMessage implements conversations.Store.
func (s *Store) GetMessage(ctx context.Context, teamID, convID, msgID string) (conversations.Message, error) {
	return dynamo.Get(ctx, s, dynamo.Key(dynamo.TeamPK(teamID), dynamo.MsgSK(convID, msgID)), "message", msgID, fromMessageItem)
}

// RateMessage implements conversations.Store.
func (s *Store) RateMessage(ctx context.Context, teamID string, f conversations.Feedback) error {
	tx := s.Txn()
	tx.Update(dynamo.RoleMessage, dynamo.Key(dynamo.TeamPK(teamID), dynamo.MsgSK(f.ConversationID, f.MessageID)),
		expression.Set(dynamo.Name("rating"), dynamo.Value(f.Rating)).Set(dynamo.Name("rated_at"), dynamo.Value(f.RatedAt.UTC())).Set(dynamo.Name("rating_comment"), dynamo.Value(f.Comment)),
		dynamo.Name(dynamo.AttrPK).AttributeExists().And(dynamo.Name("role").Equal(dynamo.Value(conversations.AuthorAssistant))))
	for _, a := range f.Agents {
		tx.Put(dynamo.RoleFeedback, toFeedbackItem(teamID, a, f), expression.ConditionBuilder{})
	}
	err := tx.Run(ctx)
	if _, ok := dynamo.AsCanceled(err); ok {
		return apperr.NotFound("agent reply", f.MessageID)
	}
	return err
}
