package dynamo

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/conclave-ai/conclave/shared/apperr"
	"github.com/conclave-ai/conclave/shared/conversations"
	"github.com/conclave-ai/conclave/shared/paging"
	"github.com/conclave-ai/conclave/shared/routing"
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

func toMessageItem(teamID string, m conversations.Message) messageItem {
	it := messageItem{
		PK: teamPK(teamID), SK: msgSK(m.ConversationID, m.ID), Type: "message",
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
	err := unmarshal(m, &it)
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

// feedbackItem is one agent's rating of a reply, kept for past performance.
type feedbackItem struct {
	PK        string    `dynamodbav:"pk"`
	SK        string    `dynamodbav:"sk"`
	Type      string    `dynamodbav:"type"`
	Agent     string    `dynamodbav:"agent"`
	Rating    int       `dynamodbav:"rating"`
	Query     string    `dynamodbav:"query"`
	RatedAt   time.Time `dynamodbav:"rated_at"` // UTC, so the since filter compares strings in time order
	ExpiresAt int64     `dynamodbav:"expires_at"`
}

func toFeedbackItem(teamID, agent string, f conversations.Feedback) feedbackItem {
	return feedbackItem{
		PK: teamPK(teamID), SK: feedbackSK(f.MessageID, agent), Type: "feedback", Agent: agent,
		Rating: f.Rating, Query: f.Query, RatedAt: f.RatedAt.UTC(), ExpiresAt: ttl(f.RatedAt.Add(feedbackRetention)),
	}
}

func (it feedbackItem) toRating() routing.Rating {
	return routing.Rating{Agent: it.Agent, Rating: it.Rating, Query: it.Query, At: it.RatedAt}
}

// ListMessages implements conversations.Store, oldest first.
func (s *Store) ListMessages(ctx context.Context, teamID, id string, p paging.Page) ([]conversations.Message, string, error) {
	list := []conversations.Message{}
	next, err := s.queryPage(ctx, prefixQuery(teamPK(teamID), msgPrefix(id), true), "msgs:"+teamID+":"+id, p, func(m map[string]types.AttributeValue) error {
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
	pk := teamPK(teamID)
	in, err := builtQuery("", keyIs(attrPK, pk).And(expression.Key(attrSK).Between(value(msgSK(convID, after)), value(msgPrefix(convID)+prefixEnd))),
		expression.ConditionBuilder{}, true)
	if err != nil {
		return nil, "", internal(err, "expression")
	}
	in.ExclusiveStartKey = key(pk, msgSK(convID, after))
	list := []conversations.Message{}
	next, err := s.queryPage(ctx, in, "msgs-after:"+teamID+":"+convID+":"+after, p, func(m map[string]types.AttributeValue) error {
		msg, err := fromMessageItem(m)
		list = append(list, msg)
		return err
	})
	return list, next, err
}

// RecentMessages implements conversations.Store.
func (s *Store) RecentMessages(ctx context.Context, teamID, id string, n int) ([]conversations.Message, error) {
	var list []conversations.Message
	_, err := s.queryPage(ctx, prefixQuery(teamPK(teamID), msgPrefix(id), false), "recent", paging.Page{Limit: n}, func(m map[string]types.AttributeValue) error {
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
	m, err := s.getItem(ctx, key(teamPK(teamID), msgSK(convID, msgID)))
	if err != nil {
		return conversations.Message{}, err
	}
	if m == nil {
		return conversations.Message{}, apperr.NotFound("message", msgID)
	}
	msg, err := fromMessageItem(m)
	if err != nil {
		return msg, internal(err, "unmarshal")
	}
	return msg, nil
}

// RateMessage implements conversations.Store.
func (s *Store) RateMessage(ctx context.Context, teamID string, f conversations.Feedback) error {
	tx := s.txn()
	tx.update(roleMessage, key(teamPK(teamID), msgSK(f.ConversationID, f.MessageID)),
		expression.Set(name("rating"), value(f.Rating)).Set(name("rated_at"), value(f.RatedAt.UTC())).Set(name("rating_comment"), value(f.Comment)),
		name(attrPK).AttributeExists().And(name("role").Equal(value(conversations.AuthorAssistant))))
	for _, a := range f.Agents {
		tx.put(roleFeedback, toFeedbackItem(teamID, a, f), expression.ConditionBuilder{})
	}
	err := tx.run(ctx)
	if _, ok := asCanceled(err); ok {
		return apperr.NotFound("agent reply", f.MessageID)
	}
	return err
}

// RecentRatings returns ratings of replies made since (keys sort by the
// reply's id, which sorts by time), newest first: the expert gate's past
// performance signal.
func (s *Store) RecentRatings(ctx context.Context, teamID string, since time.Time, limit int) ([]routing.Rating, error) {
	in, err := builtQuery("",
		keyIs(attrPK, teamPK(teamID)).And(expression.Key(attrSK).Between(value(feedbackFloor(since)), value(prefixFeedback+rangeEnd))),
		name("rated_at").GreaterThanEqual(value(since.UTC())), false)
	if err != nil {
		return nil, internal(err, "expression")
	}
	in.TableName = &s.Table
	var out []routing.Rating
	for len(out) < limit {
		res, err := s.DB.Query(ctx, in)
		if err != nil {
			return nil, internal(err, "Query")
		}
		for _, m := range res.Items {
			var it feedbackItem
			if err := unmarshal(m, &it); err != nil {
				return nil, internal(err, "unmarshal")
			}
			out = append(out, it.toRating())
		}
		if len(res.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = res.LastEvaluatedKey
	}
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}
