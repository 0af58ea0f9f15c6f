package messagestore

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/team/messaging"
)

var _ messaging.Store = (*Store)(nil)

// messageRetention bounds agent messages and inboxes (TTL).
const messageRetention = 90 * 24 * time.Hour

// AgentMessageItem is a message between agents (AMSG#); an inbox entry
// (inboxItem) is the same message under the recipient's inbox.
//
// Metadata is the one JSON text in the table, and deliberately so: it is
// the client's free-form object, not a domain type, and DynamoDB cannot hold
// every JSON object as a map (an empty key, more than 32 levels of nesting),
// so it is kept as the JSON the service validated.
type AgentMessageItem struct {
	PK          string     `dynamodbav:"pk"`
	SK          string     `dynamodbav:"sk"`
	Type        string     `dynamodbav:"type"`
	ExpiresAt   int64      `dynamodbav:"expires_at"`
	ID          string     `dynamodbav:"id"`
	From        string     `dynamodbav:"from"`
	To          string     `dynamodbav:"to,omitempty"`
	Channel     string     `dynamodbav:"channel"`
	MessageType string     `dynamodbav:"message_type"`
	Content     string     `dynamodbav:"content"`
	Metadata    string     `dynamodbav:"metadata_json"`
	CreatedAt   time.Time  `dynamodbav:"created_at"`
	ReadAt      *time.Time `dynamodbav:"read_at,omitempty"` // absent until read: the unread filter is attribute_not_exists(read_at)
}

// InboxItem is a delivered copy of a message in one agent's inbox.
type InboxItem struct {
	Recipient string `dynamodbav:"recipient"`
	AgentMessageItem
}

// ToAgentMessageItem is the stored form of m at pk, sk (the message itself
// or one inbox entry, by typ); consultations write it in their transactions.
func ToAgentMessageItem(m messaging.Message, pk, sk, typ string) (AgentMessageItem, error) {
	meta, err := json.Marshal(m.Metadata)
	if err != nil {
		return AgentMessageItem{}, err
	}
	return AgentMessageItem{
		PK: pk, SK: sk, Type: typ, ExpiresAt: dynamo.TTL(m.CreatedAt.Add(messageRetention)),
		ID: m.ID, From: m.From, To: m.To, Channel: m.Channel, MessageType: m.Type,
		Content: m.Content, Metadata: string(meta), CreatedAt: m.CreatedAt, ReadAt: m.ReadAt,
	}, nil
}

func (it AgentMessageItem) toMessage() (messaging.Message, error) {
	m := messaging.Message{
		ID: it.ID, From: it.From, To: it.To, Channel: it.Channel, Type: it.MessageType,
		Content: it.Content, CreatedAt: it.CreatedAt, ReadAt: it.ReadAt,
	}
	err := json.Unmarshal([]byte(it.Metadata), &m.Metadata)
	return m, err
}

// PutAgentMessage implements messaging.Store.
func (s *Store) PutAgentMessage(ctx context.Context, m messaging.Message) error {
	it, err := ToAgentMessageItem(m, dynamo.TeamPK(m.TeamID), dynamo.AgentMsgSK(m.ID), "agent_message")
	if err != nil {
		return dynamo.Internal(err, "marshal")
	}
	if m.IdempotencyKey != "" {
		// The message and the reference from its request's key in one
		// transaction: a request sent again after a lost answer finds
		// the message it stored (messaging.Replayed).
		tx := s.Txn()
		tx.Create("agent_message", it)
		tx.Create(dynamo.RoleIdemRef, dynamo.IdemRef(m.TeamID, messaging.RefKind, m.IdempotencyKey, m.ID, m.CreatedAt))
		err := tx.Run(ctx)
		if id, ok := dynamo.RefOf(err); ok {
			return messaging.Replayed{ID: id}
		}
		if c, ok := dynamo.AsCanceled(err); ok && c.Role == "agent_message" {
			return apperr.New(apperr.ECONFLICT, "message %s exists", m.ID)
		}
		return err
	}
	created, err := s.PutNew(ctx, it)
	if err == nil && !created {
		return apperr.New(apperr.ECONFLICT, "message %s exists", m.ID)
	}
	return err
}

// GetAgentMessage implements messaging.Store.
func (s *Store) GetAgentMessage(ctx context.Context, teamID, id string) (messaging.Message, error) {
	m, err := s.GetItem(ctx, dynamo.Key(dynamo.TeamPK(teamID), dynamo.AgentMsgSK(id)))
	if err != nil {
		return messaging.Message{}, err
	}
	if m == nil {
		return messaging.Message{}, apperr.NotFound("agent message", id)
	}
	var it AgentMessageItem
	if err := dynamo.Unmarshal(m, &it); err != nil {
		return messaging.Message{}, dynamo.Internal(err, "unmarshal")
	}
	msg, err := it.toMessage()
	if err != nil {
		return msg, dynamo.Internal(err, "unmarshal")
	}
	msg.TeamID = teamID
	return msg, nil
}

// Deliver implements messaging.Store: a put that only a first delivery wins.
func (s *Store) Deliver(ctx context.Context, teamID, recipient string, m messaging.Message) (bool, error) {
	m.ReadAt = nil
	it, err := ToAgentMessageItem(m, dynamo.TeamPK(teamID), dynamo.InboxSK(recipient, m.ID), "inbox_entry")
	if err != nil {
		return false, dynamo.Internal(err, "marshal")
	}
	return s.PutNew(ctx, InboxItem{Recipient: recipient, AgentMessageItem: it})
}

// ListInbox implements messaging.Store, newest first. Unread-only is a
// filter, so a page may hold fewer than the limit while a token is returned.
func (s *Store) ListInbox(ctx context.Context, teamID, agent string, unreadOnly bool, p paging.Page) ([]messaging.Message, string, error) {
	var unread expression.ConditionBuilder
	if unreadOnly {
		unread = dynamo.Name("read_at").AttributeNotExists()
	}
	in, err := dynamo.BuiltQuery("", dynamo.KeyIs(dynamo.AttrPK, dynamo.TeamPK(teamID)).And(dynamo.HasPrefix(dynamo.AttrSK, dynamo.InboxPrefix(agent))), unread, false)
	if err != nil {
		return nil, "", dynamo.Internal(err, "expression")
	}
	list := []messaging.Message{}
	scope := "inbox:" + teamID + ":" + agent + ":" + strconv.FormatBool(unreadOnly)
	next, err := s.QueryPage(ctx, in, scope, p, func(m map[string]types.AttributeValue) error {
		var it InboxItem
		if err := dynamo.Unmarshal(m, &it); err != nil {
			return err
		}
		msg, err := it.toMessage()
		list = append(list, msg)
		return err
	})
	return list, next, err
}

// MarkRead implements messaging.Store: each entry is conditioned on being
// unread, so read_at records the first read. Several entries are marked in
// one TransactWriteItems (a page of an inbox is one write, not one per
// message; a transactional write costs twice the capacity of a plain one,
// which buys the call count). A transaction is all or nothing, so when
// some entries are already read (or gone) it is canceled, its reasons name
// them, and the others are marked in a second one; a transaction that lost
// to a concurrent one falls back to one update per entry.
func (s *Store) MarkRead(ctx context.Context, teamID, agent string, ids []string, at time.Time) (int, error) {
	u := expression.Set(dynamo.Name("read_at"), dynamo.Value(at.UTC()))
	e, err := dynamo.Build(&u, dynamo.Name(dynamo.AttrPK).AttributeExists().And(dynamo.Name("read_at").AttributeNotExists()))
	if err != nil {
		return 0, dynamo.Internal(err, "expression")
	}
	if len(ids) <= 1 || len(ids) > dynamo.MaxTransactItems {
		return s.markEach(ctx, teamID, agent, ids, e)
	}
	for range 2 {
		tx := s.Txn()
		for _, id := range ids {
			tx.Add(dynamo.RoleMessage, types.TransactWriteItem{Update: &types.Update{
				TableName: &s.Table, Key: dynamo.Key(dynamo.TeamPK(teamID), dynamo.InboxSK(agent, id)),
				UpdateExpression: e.Update(), ConditionExpression: e.Condition(),
				ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
			}})
		}
		err := tx.Run(ctx)
		if err == nil {
			return len(ids), nil
		}
		reasons, ok := dynamo.CancellationCodes(err)
		if !ok {
			return 0, err
		}
		if len(reasons) != len(ids) {
			return s.markEach(ctx, teamID, agent, ids, e)
		}
		var unread []string
		for i, code := range reasons {
			switch code {
			case "ConditionalCheckFailed": // read already, or gone
			case "None", "":
				unread = append(unread, ids[i])
			default: // lost to a concurrent transaction
				return s.markEach(ctx, teamID, agent, ids, e)
			}
		}
		if len(unread) <= 1 {
			return s.markEach(ctx, teamID, agent, unread, e)
		}
		ids = unread
	}
	return s.markEach(ctx, teamID, agent, ids, e)
}

// markEach marks entries one conditional update at a time.
func (s *Store) markEach(ctx context.Context, teamID, agent string, ids []string, e expression.Expression) (int, error) {
	n := 0
	for _, id := range ids {
		_, err := s.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: &s.Table, Key: dynamo.Key(dynamo.TeamPK(teamID), dynamo.InboxSK(agent, id)),
			UpdateExpression: e.Update(), ConditionExpression: e.Condition(),
			ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
		})
		if _, failed := dynamo.ConditionFailed(err); failed {
			continue
		}
		if err != nil {
			return n, dynamo.Internal(err, "UpdateItem")
		}
		n++
	}
	return n, nil
}
