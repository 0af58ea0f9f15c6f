package dynamo

import (
	"context"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/conclave-ai/conclave/shared/apperr"
	"github.com/conclave-ai/conclave/shared/memory"
	"github.com/conclave-ai/conclave/shared/messaging"
	"github.com/conclave-ai/conclave/shared/paging"
)

var (
	_ messaging.Store     = (*Store)(nil)
	_ messaging.Directory = (*Store)(nil)
	_ memory.Store        = (*Store)(nil)
	_ memory.Directory    = (*Store)(nil)
)

const (
	prefixAgentMsg = "AMSG#"
	prefixInbox    = "INBOX#"
	prefixMemory   = "MEM#"
	prefixContext  = "CTX#"
	skMemEpoch     = "MEMEPOCH"

	// messageRetention bounds agent messages and inboxes (TTL).
	messageRetention = 90 * 24 * time.Hour
	// contextTTL bounds a cached context even if an invalidation is lost.
	contextTTL = time.Hour
)

func inboxSK(agent, msgID string) string { return prefixInbox + agent + "#" + msgID }

func ttl(t time.Time) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(t.Unix(), 10)}
}

// PutAgentMessage implements messaging.Store.
func (s *Store) PutAgentMessage(ctx context.Context, m messaging.Message) error {
	doc, err := docAttr(m)
	if err != nil {
		return internal(err, "marshal")
	}
	_, err = s.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: &s.Table, Item: map[string]types.AttributeValue{
		attrPK: str(teamPK(m.TeamID)), attrSK: str(prefixAgentMsg + m.ID), "type": str("agent_message"), "doc": doc,
		"expires_at": ttl(m.CreatedAt.Add(messageRetention)),
	}, ConditionExpression: aws.String("attribute_not_exists(pk)")})
	if conditionFailed(err) {
		return apperr.Wrap(apperr.ECONFLICT, err, "message %s exists", m.ID)
	}
	if err != nil {
		return internal(err, "PutItem")
	}
	return nil
}

// GetAgentMessage implements messaging.Store.
func (s *Store) GetAgentMessage(ctx context.Context, teamID, id string) (messaging.Message, error) {
	out, err := s.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.Table, Key: key(teamPK(teamID), prefixAgentMsg+id), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return messaging.Message{}, internal(err, "GetItem")
	}
	if out.Item == nil {
		return messaging.Message{}, apperr.NotFound("agent message", id)
	}
	var m messaging.Message
	if err := readDoc(out.Item, &m); err != nil {
		return m, internal(err, "unmarshal")
	}
	m.TeamID = teamID
	return m, nil
}

// Deliver implements messaging.Store: a put that only a first delivery wins.
func (s *Store) Deliver(ctx context.Context, teamID, recipient string, m messaging.Message) (bool, error) {
	m.ReadAt = nil
	doc, err := docAttr(m)
	if err != nil {
		return false, internal(err, "marshal")
	}
	_, err = s.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: &s.Table, Item: map[string]types.AttributeValue{
		attrPK: str(teamPK(teamID)), attrSK: str(inboxSK(recipient, m.ID)), "type": str("inbox_entry"),
		"recipient": str(recipient), "doc": doc, "expires_at": ttl(m.CreatedAt.Add(messageRetention)),
	}, ConditionExpression: aws.String("attribute_not_exists(pk)")})
	if conditionFailed(err) {
		return false, nil
	}
	if err != nil {
		return false, internal(err, "PutItem")
	}
	return true, nil
}

func readInbox(item map[string]types.AttributeValue) (messaging.Message, error) {
	var m messaging.Message
	if err := readDoc(item, &m); err != nil {
		return m, err
	}
	if v, ok := item["read_at"].(*types.AttributeValueMemberS); ok {
		if t, err := time.Parse(time.RFC3339Nano, v.Value); err == nil {
			m.ReadAt = &t
		}
	}
	return m, nil
}

// ListInbox implements messaging.Store, newest first. Unread-only is a
// filter, so a page may hold fewer than the limit while a token is returned.
func (s *Store) ListInbox(ctx context.Context, teamID, agent string, unreadOnly bool, p paging.Page) ([]messaging.Message, string, error) {
	in := prefixQuery(teamPK(teamID), prefixInbox+agent+"#", false)
	if unreadOnly {
		in.FilterExpression = aws.String("attribute_not_exists(read_at)")
	}
	list := []messaging.Message{}
	scope := "inbox:" + teamID + ":" + agent + ":" + strconv.FormatBool(unreadOnly)
	next, err := s.queryPage(ctx, in, scope, p, func(m map[string]types.AttributeValue) error {
		msg, err := readInbox(m)
		list = append(list, msg)
		return err
	})
	return list, next, err
}

// MarkRead implements messaging.Store: each entry is conditioned on being
// unread, so read_at records the first read.
func (s *Store) MarkRead(ctx context.Context, teamID, agent string, ids []string, at time.Time) (int, error) {
	n := 0
	for _, id := range ids {
		_, err := s.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: &s.Table, Key: key(teamPK(teamID), inboxSK(agent, id)),
			UpdateExpression:          aws.String("SET read_at = :t"),
			ConditionExpression:       aws.String("attribute_exists(pk) AND attribute_not_exists(read_at)"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":t": str(at.UTC().Format(time.RFC3339Nano))},
		})
		if conditionFailed(err) {
			continue
		}
		if err != nil {
			return n, internal(err, "UpdateItem")
		}
		n++
	}
	return n, nil
}

// TaskAgents implements messaging.Directory: the task's assignee, the
// agent that created it and its delegation chain.
func (s *Store) TaskAgents(ctx context.Context, teamID, taskID string) ([]string, error) {
	t, err := s.GetTask(ctx, teamID, taskID)
	if err != nil {
		return nil, err
	}
	out := append([]string{t.Assignee}, t.Chain...)
	if t.CreatedBy.Type == "agent" {
		out = append(out, t.CreatedBy.ID)
	}
	return out, nil
}

// SessionAgents implements messaging.Directory. Collaboration sessions are
// not built yet, so every session id is unknown.
func (s *Store) SessionAgents(_ context.Context, _, sessionID string) ([]string, error) {
	return nil, apperr.NotFound("collaboration session", sessionID)
}

// PutMemory implements memory.Store.
func (s *Store) PutMemory(ctx context.Context, m memory.Memory) error {
	doc, err := docAttr(m)
	if err != nil {
		return internal(err, "marshal")
	}
	_, err = s.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: &s.Table, Item: memoryItem(m, doc), ConditionExpression: aws.String("attribute_not_exists(pk)")})
	if err != nil {
		return internal(err, "PutItem")
	}
	return nil
}

func memoryItem(m memory.Memory, doc types.AttributeValue) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		attrPK: str(teamPK(m.TeamID)), attrSK: str(prefixMemory + m.ID), "type": str("memory"),
		"visibility": str(m.Visibility), "doc": doc,
	}
}

// RecentMemories implements memory.Store.
func (s *Store) RecentMemories(ctx context.Context, teamID string, limit int) ([]memory.Memory, error) {
	var out []memory.Memory
	p := paging.Page{Limit: min(limit, paging.MaxLimit)}
	for len(out) < limit {
		list, next, err := s.ListMemories(ctx, teamID, p)
		if err != nil {
			return nil, err
		}
		out = append(out, list...)
		if next == "" {
			break
		}
		p.Token = next
	}
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// ListMemories implements memory.Store, newest first.
func (s *Store) ListMemories(ctx context.Context, teamID string, p paging.Page) ([]memory.Memory, string, error) {
	list := []memory.Memory{}
	next, err := s.queryPage(ctx, prefixQuery(teamPK(teamID), prefixMemory, false), "memories:"+teamID, p, func(m map[string]types.AttributeValue) error {
		var mem memory.Memory
		err := readDoc(m, &mem)
		list = append(list, mem)
		return err
	})
	return list, next, err
}

// GetContext implements memory.Store.
func (s *Store) GetContext(ctx context.Context, teamID, agent string) (memory.Context, bool, error) {
	out, err := s.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.Table, Key: key(teamPK(teamID), prefixContext+agent), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return memory.Context{}, false, internal(err, "GetItem")
	}
	if out.Item == nil {
		return memory.Context{}, false, nil
	}
	var c memory.Context
	if err := readDoc(out.Item, &c); err != nil {
		return c, false, internal(err, "unmarshal")
	}
	// An expired entry TTL has not removed yet is a miss.
	if time.Since(c.BuiltAt) > contextTTL {
		return memory.Context{}, false, nil
	}
	return c, true, nil
}

// MemoryEpoch implements memory.Store.
func (s *Store) MemoryEpoch(ctx context.Context, teamID string) (int, error) {
	out, err := s.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.Table, Key: key(teamPK(teamID), skMemEpoch), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return 0, internal(err, "GetItem")
	}
	if v, ok := out.Item["epoch"].(*types.AttributeValueMemberN); ok {
		n, _ := strconv.Atoi(v.Value)
		return n, nil
	}
	return 0, nil
}

// PutContext implements memory.Store.
func (s *Store) PutContext(ctx context.Context, teamID string, c memory.Context, epoch int) (bool, error) {
	c.Cached = false
	doc, err := docAttr(c)
	if err != nil {
		return false, internal(err, "marshal")
	}
	cond := "attribute_not_exists(epoch)"
	vals := map[string]types.AttributeValue{}
	if epoch > 0 {
		cond = "epoch = :e"
		vals[":e"] = num(epoch)
	}
	check := &types.ConditionCheck{TableName: &s.Table, Key: key(teamPK(teamID), skMemEpoch), ConditionExpression: aws.String(cond)}
	if len(vals) > 0 {
		check.ExpressionAttributeValues = vals
	}
	_, err = s.DB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{ConditionCheck: check},
		{Put: &types.Put{TableName: &s.Table, Item: map[string]types.AttributeValue{
			attrPK: str(teamPK(teamID)), attrSK: str(prefixContext + c.Agent), "type": str("memory_context"), "doc": doc,
			"expires_at": ttl(c.BuiltAt.Add(contextTTL)),
		}}},
	}})
	if cancellationReasons(err) != nil {
		return false, nil // memories changed while it was built: do not cache
	}
	if err != nil {
		return false, internal(err, "TransactWriteItems")
	}
	return true, nil
}

// DropContexts implements memory.Store: bump the epoch first (so contexts
// being built now are not cached), then delete the cached ones.
func (s *Store) DropContexts(ctx context.Context, teamID string, agentSlugs []string) error {
	_, err := s.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &s.Table, Key: key(teamPK(teamID), skMemEpoch),
		UpdateExpression:          aws.String("ADD epoch :one SET team_id = :team"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": num(1), ":team": str(teamID)},
	})
	if err != nil {
		return internal(err, "UpdateItem")
	}
	for _, a := range agentSlugs {
		if _, err := s.DB.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &s.Table, Key: key(teamPK(teamID), prefixContext+a)}); err != nil {
			return internal(err, "DeleteItem")
		}
	}
	return nil
}
