package dynamo

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/conclave-ai/conclave/shared/agents"
	"github.com/conclave-ai/conclave/shared/apperr"
	"github.com/conclave-ai/conclave/shared/conversations"
	"github.com/conclave-ai/conclave/shared/dispatch"
	"github.com/conclave-ai/conclave/shared/expertgate"
	"github.com/conclave-ai/conclave/shared/ids"
	"github.com/conclave-ai/conclave/shared/memory"
	"github.com/conclave-ai/conclave/shared/paging"
	"github.com/conclave-ai/conclave/shared/routing"
)

var (
	_ conversations.Store          = (*Store)(nil)
	_ dispatch.Store               = (*Store)(nil)
	_ expertgate.Source            = (*Store)(nil)
	_ conversations.AgentDirectory = (*Store)(nil)
)

// Conversation items keep the domain value as a JSON document ("doc") and
// lift out only what conditions, filters and keys need (version, status,
// role, rating, strategy, …): the document is read whole, never queried.
const (
	prefixConv     = "CONV#"
	prefixPart     = "CPART#"
	prefixMsg      = "MSG#"
	prefixDecision = "RDEC#"
	prefixFeedback = "FB#"

	// feedbackRetention: ratings feed past performance for 30 days.
	feedbackRetention = 31 * 24 * time.Hour
	// decisionRetention bounds the routing log (TTL).
	decisionRetention = 180 * 24 * time.Hour
)

func convSK(id string) string             { return prefixConv + id }
func partSK(conv, slug string) string     { return prefixPart + conv + "#" + slug }
func msgSK(conv, id string) string        { return prefixMsg + conv + "#" + id }
func decisionSK(id string) string         { return prefixDecision + id }
func convGSI1PK(team, conv string) string { return teamPK(team) + "#CONV#" + conv }
func feedbackSK(msgID, agent string) string {
	return prefixFeedback + msgID + "#" + agent
}

func docAttr(v any) (types.AttributeValue, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return str(string(b)), nil
}

func readDoc(item map[string]types.AttributeValue, v any) error {
	s, ok := item["doc"].(*types.AttributeValueMemberS)
	if !ok {
		return fmt.Errorf("item %v has no doc", item[attrSK])
	}
	return json.Unmarshal([]byte(s.Value), v)
}

func convItem(c conversations.Conversation) (map[string]types.AttributeValue, error) {
	parts := c.Participants
	c.Participants = nil
	doc, err := docAttr(c)
	c.Participants = parts
	if err != nil {
		return nil, err
	}
	return map[string]types.AttributeValue{
		attrPK: str(teamPK(c.TeamID)), attrSK: str(convSK(c.ID)), "type": str("conversation"),
		"version": num(c.Version), "status": str(c.Status), "current_agent": str(c.CurrentAgent), "doc": doc,
	}, nil
}

func (s *Store) convCounter(teamID, slug string, delta int) types.TransactWriteItem {
	return types.TransactWriteItem{Update: &types.Update{
		TableName: &s.Table, Key: key(teamPK(teamID), loadSK(slug)),
		UpdateExpression:          aws.String("ADD active_conversations :d SET team_id = :team, agent_slug = :agent"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":d": num(delta), ":team": str(teamID), ":agent": str(slug)},
	}}
}

func (s *Store) joinParticipant(teamID, conv string, p conversations.Participant) types.TransactWriteItem {
	// A returning agent keeps its first role and join time, unless the
	// change sets the role (handoff, return).
	role := "#role = if_not_exists(#role, :role)"
	if p.SetRole {
		role = "#role = :role"
	}
	return types.TransactWriteItem{Update: &types.Update{
		TableName: &s.Table, Key: key(teamPK(teamID), partSK(conv, p.Agent)),
		UpdateExpression:         aws.String("SET " + role + ", joined_at = if_not_exists(joined_at, :t), #agent = :agent, #type = :type REMOVE left_at"),
		ExpressionAttributeNames: map[string]string{"#role": "role", "#type": "type", "#agent": "agent"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":role": str(p.Role), ":t": str(p.JoinedAt.UTC().Format(time.RFC3339Nano)), ":agent": str(p.Agent), ":type": str("participant"),
		},
	}}
}

const prefixHandoff = "HOFF#"

func (s *Store) handoffPut(teamID string, h conversations.Handoff) (types.TransactWriteItem, error) {
	doc, err := docAttr(h)
	if err != nil {
		return types.TransactWriteItem{}, err
	}
	return types.TransactWriteItem{Put: &types.Put{TableName: &s.Table, Item: map[string]types.AttributeValue{
		attrPK: str(teamPK(teamID)), attrSK: str(prefixHandoff + h.ConversationID + "#" + h.ID), "type": str("handoff"), "doc": doc,
	}, ConditionExpression: aws.String("attribute_not_exists(pk)")}}, nil
}

// handoffMemoryPut writes the episodic memory of a handoff or return.
func (s *Store) handoffMemoryPut(teamID string, m memory.Memory) (types.TransactWriteItem, error) {
	doc, err := docAttr(m)
	if err != nil {
		return types.TransactWriteItem{}, err
	}
	m.TeamID = teamID
	return types.TransactWriteItem{Put: &types.Put{TableName: &s.Table, Item: memoryItem(m, doc), ConditionExpression: aws.String("attribute_not_exists(pk)")}}, nil
}

// convPut writes the conversation conditioned on the version read and it
// being open.
func (s *Store) convPut(c conversations.Conversation) (types.TransactWriteItem, error) {
	item, err := convItem(c)
	if err != nil {
		return types.TransactWriteItem{}, err
	}
	return types.TransactWriteItem{Put: &types.Put{
		TableName: &s.Table, Item: item,
		ConditionExpression:       aws.String("version = :v AND #st = :open"),
		ExpressionAttributeNames:  map[string]string{"#st": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":v": num(c.Version - 1), ":open": str(conversations.StatusOpen)},
	}}, nil
}

// CommitHandoff implements conversations.Store.
func (s *Store) CommitHandoff(ctx context.Context, teamID string, h conversations.HandoffChange) error {
	c := h.Conversation
	c.TeamID = teamID
	cp, err := s.convPut(c)
	if err != nil {
		return internal(err, "marshal")
	}
	hp, err := s.handoffPut(teamID, h.Handoff)
	if err != nil {
		return internal(err, "marshal")
	}
	note, err := msgItem(teamID, h.Note)
	if err != nil {
		return internal(err, "marshal")
	}
	tx := []types.TransactWriteItem{cp, hp, {Put: &types.Put{TableName: &s.Table, Item: note, ConditionExpression: aws.String("attribute_not_exists(pk)")}}}
	for _, p := range h.Roles {
		tx = append(tx, s.joinParticipant(teamID, c.ID, p))
	}
	if h.PrevCurrent != c.CurrentAgent {
		if h.PrevCurrent != "" {
			tx = append(tx, s.convCounter(teamID, h.PrevCurrent, -1))
		}
		tx = append(tx, s.convCounter(teamID, c.CurrentAgent, 1))
	}
	if h.Memory != nil {
		mp, err := s.handoffMemoryPut(teamID, *h.Memory)
		if err != nil {
			return internal(err, "marshal")
		}
		tx = append(tx, mp)
	}
	_, err = s.DB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: tx})
	if r := cancellationReasons(err); r != nil {
		if len(r) > 0 && r[0] == "ConditionalCheckFailed" {
			return apperr.Wrap(apperr.ECONFLICT, err, "the conversation changed during the handoff").WithReason("ConversationChanged")
		}
		return apperr.Wrap(apperr.ECONFLICT, err, "the handoff conflicted with a concurrent change; try again").WithReason("TransactionConflict")
	}
	if err != nil {
		return internal(err, "TransactWriteItems")
	}
	if h.Memory != nil {
		// Both agents' cached contexts now miss the handoff memory.
		return s.DropContexts(ctx, teamID, append([]string{h.Memory.Author}, h.Memory.Agents...))
	}
	return nil
}

// ListHandoffs implements conversations.Store, oldest first.
func (s *Store) ListHandoffs(ctx context.Context, teamID, convID string) ([]conversations.Handoff, error) {
	out := []conversations.Handoff{}
	in := prefixQuery(teamPK(teamID), prefixHandoff+convID+"#", true)
	in.TableName = &s.Table
	for {
		res, err := s.DB.Query(ctx, in)
		if err != nil {
			return nil, internal(err, "Query")
		}
		for _, m := range res.Items {
			var h conversations.Handoff
			if err := readDoc(m, &h); err != nil {
				return nil, internal(err, "unmarshal")
			}
			out = append(out, h)
		}
		if len(res.LastEvaluatedKey) == 0 {
			return out, nil
		}
		in.ExclusiveStartKey = res.LastEvaluatedKey
	}
}

// SetParticipants implements conversations.Store.
func (s *Store) SetParticipants(ctx context.Context, teamID, convID string, add []conversations.Participant, remove []string, at time.Time) error {
	tx := []types.TransactWriteItem{{ConditionCheck: &types.ConditionCheck{
		TableName: &s.Table, Key: key(teamPK(teamID), convSK(convID)),
		ConditionExpression:       aws.String("#st = :open"),
		ExpressionAttributeNames:  map[string]string{"#st": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":open": str(conversations.StatusOpen)},
	}}}
	for _, p := range add {
		tx = append(tx, s.joinParticipant(teamID, convID, p))
	}
	for _, slug := range remove {
		tx = append(tx, types.TransactWriteItem{Update: &types.Update{
			TableName: &s.Table, Key: key(teamPK(teamID), partSK(convID, slug)),
			UpdateExpression:          aws.String("SET left_at = :t"),
			ConditionExpression:       aws.String("attribute_exists(pk) AND attribute_not_exists(left_at)"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":t": str(at.UTC().Format(time.RFC3339Nano))},
		}})
	}
	_, err := s.DB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: tx})
	if r := cancellationReasons(err); r != nil {
		if r[0] == "ConditionalCheckFailed" {
			return apperr.New(apperr.ECONFLICT, "conversation is closed").WithReason("ConversationClosed")
		}
		for i, code := range r {
			if code == "ConditionalCheckFailed" && i > len(add) {
				return apperr.NotFound("participant", remove[i-1-len(add)])
			}
		}
		return apperr.Wrap(apperr.ECONFLICT, err, "the change conflicted with a concurrent one; try again").WithReason("TransactionConflict")
	}
	if err != nil {
		return internal(err, "TransactWriteItems")
	}
	return nil
}

// CreateConversation implements conversations.Store.
func (s *Store) CreateConversation(ctx context.Context, c conversations.Conversation, primary *conversations.Participant) error {
	item, err := convItem(c)
	if err != nil {
		return internal(err, "marshal")
	}
	tx := []types.TransactWriteItem{{Put: &types.Put{TableName: &s.Table, Item: item, ConditionExpression: aws.String("attribute_not_exists(pk)")}}}
	if primary != nil {
		tx = append(tx, s.joinParticipant(c.TeamID, c.ID, *primary), s.convCounter(c.TeamID, primary.Agent, 1))
	}
	if _, err := s.DB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: tx}); err != nil {
		if cancellationReasons(err) != nil {
			return apperr.Wrap(apperr.ECONFLICT, err, "conversation already exists")
		}
		return internal(err, "TransactWriteItems")
	}
	return nil
}

// GetConversation implements conversations.Store.
func (s *Store) GetConversation(ctx context.Context, teamID, id string) (conversations.Conversation, error) {
	out, err := s.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.Table, Key: key(teamPK(teamID), convSK(id)), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return conversations.Conversation{}, internal(err, "GetItem")
	}
	if out.Item == nil {
		return conversations.Conversation{}, apperr.NotFound("conversation", id)
	}
	var c conversations.Conversation
	if err := readDoc(out.Item, &c); err != nil {
		return c, internal(err, "unmarshal")
	}
	c.TeamID = teamID
	return c, nil
}

// query runs one page of a key-condition query and decodes its items.
func (s *Store) queryPage(ctx context.Context, in *dynamodb.QueryInput, scope string, p paging.Page, each func(map[string]types.AttributeValue) error) (string, error) {
	start, err := decodeToken(scope, p.Token)
	if err != nil {
		return "", err
	}
	in.TableName, in.ExclusiveStartKey = &s.Table, start
	if p.Limit > 0 {
		in.Limit = aws.Int32(int32(p.Limit))
	}
	out, err := s.DB.Query(ctx, in)
	if err != nil {
		return "", internal(err, "Query")
	}
	for _, m := range out.Items {
		if err := each(m); err != nil {
			return "", internal(err, "unmarshal")
		}
	}
	next, err := encodeToken(scope, out.LastEvaluatedKey)
	if err != nil {
		return "", internal(err, "token")
	}
	return next, nil
}

func prefixQuery(pk, prefix string, forward bool) *dynamodb.QueryInput {
	return &dynamodb.QueryInput{
		KeyConditionExpression:    aws.String("pk = :pk AND begins_with(sk, :p)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(pk), ":p": str(prefix)},
		ScanIndexForward:          aws.Bool(forward),
	}
}

// ListConversations implements conversations.Store, newest first.
func (s *Store) ListConversations(ctx context.Context, teamID string, p paging.Page) ([]conversations.Conversation, string, error) {
	list := []conversations.Conversation{}
	next, err := s.queryPage(ctx, prefixQuery(teamPK(teamID), prefixConv, false), "convs:"+teamID, p, func(m map[string]types.AttributeValue) error {
		var c conversations.Conversation
		if err := readDoc(m, &c); err != nil {
			return err
		}
		list = append(list, c)
		return nil
	})
	return list, next, err
}

// ListParticipants implements conversations.Store.
func (s *Store) ListParticipants(ctx context.Context, teamID, id string) ([]conversations.Participant, error) {
	list := []conversations.Participant{}
	_, err := s.queryPage(ctx, prefixQuery(teamPK(teamID), prefixPart+id+"#", true), "parts", paging.Page{Limit: 100}, func(m map[string]types.AttributeValue) error {
		var it struct {
			Agent    string     `dynamodbav:"agent"`
			Role     string     `dynamodbav:"role"`
			JoinedAt time.Time  `dynamodbav:"joined_at"`
			LeftAt   *time.Time `dynamodbav:"left_at"`
		}
		if err := unmarshal(m, &it); err != nil {
			return err
		}
		list = append(list, conversations.Participant{Agent: it.Agent, Role: it.Role, JoinedAt: it.JoinedAt, LeftAt: it.LeftAt})
		return nil
	})
	return list, err
}

func msgItem(teamID string, m conversations.Message) (map[string]types.AttributeValue, error) {
	type stored struct {
		conversations.Message
		Query string `json:"query,omitempty"`
	}
	doc, err := docAttr(stored{m, m.Query})
	if err != nil {
		return nil, err
	}
	return map[string]types.AttributeValue{
		attrPK: str(teamPK(teamID)), attrSK: str(msgSK(m.ConversationID, m.ID)), "type": str("message"),
		"role": str(m.Role), "doc": doc,
	}, nil
}

func readMessage(item map[string]types.AttributeValue) (conversations.Message, error) {
	var st struct {
		conversations.Message
		Query string `json:"query"`
	}
	if err := readDoc(item, &st); err != nil {
		return conversations.Message{}, err
	}
	m := st.Message
	m.Query = st.Query
	if r, ok := item["rating"].(*types.AttributeValueMemberN); ok {
		m.Rating, _ = strconv.Atoi(r.Value)
	}
	return m, nil
}

// ListMessages implements conversations.Store, oldest first.
func (s *Store) ListMessages(ctx context.Context, teamID, id string, p paging.Page) ([]conversations.Message, string, error) {
	list := []conversations.Message{}
	next, err := s.queryPage(ctx, prefixQuery(teamPK(teamID), prefixMsg+id+"#", true), "msgs:"+teamID+":"+id, p, func(m map[string]types.AttributeValue) error {
		msg, err := readMessage(m)
		list = append(list, msg)
		return err
	})
	return list, next, err
}

// RecentMessages implements conversations.Store.
func (s *Store) RecentMessages(ctx context.Context, teamID, id string, n int) ([]conversations.Message, error) {
	var list []conversations.Message
	_, err := s.queryPage(ctx, prefixQuery(teamPK(teamID), prefixMsg+id+"#", false), "recent", paging.Page{Limit: n}, func(m map[string]types.AttributeValue) error {
		msg, err := readMessage(m)
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
	out, err := s.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.Table, Key: key(teamPK(teamID), msgSK(convID, msgID)), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return conversations.Message{}, internal(err, "GetItem")
	}
	if out.Item == nil {
		return conversations.Message{}, apperr.NotFound("message", msgID)
	}
	m, err := readMessage(out.Item)
	if err != nil {
		return m, internal(err, "unmarshal")
	}
	return m, nil
}

func decisionItem(d dispatch.Decision) (map[string]types.AttributeValue, error) {
	doc, err := docAttr(d)
	if err != nil {
		return nil, err
	}
	selected := make([]types.AttributeValue, len(d.SelectedAgents))
	for i, a := range d.SelectedAgents {
		selected[i] = str(a)
	}
	if len(selected) == 0 {
		selected = []types.AttributeValue{str("")}
	}
	return map[string]types.AttributeValue{
		attrPK: str(teamPK(d.TeamID)), attrSK: str(decisionSK(d.ID)), "type": str("routing_decision"),
		attrGSI1PK: str(convGSI1PK(d.TeamID, d.ConversationID)), attrGSI1SK: str(decisionSK(d.ID)),
		"strategy": str(string(d.Strategy)), "fallback_used": &types.AttributeValueMemberBOOL{Value: d.Fallback},
		"selected_agents": &types.AttributeValueMemberL{Value: selected}, "confidence": numf(d.Confidence),
		"doc": doc, "expires_at": &types.AttributeValueMemberN{Value: strconv.FormatInt(d.CreatedAt.Add(decisionRetention).Unix(), 10)},
	}, nil
}

// CommitTurn implements conversations.Store: the conversation (conditioned
// on the version read and still open), the messages, the participants,
// the conversation counters of the agents and the decision, in one
// transaction.
func (s *Store) CommitTurn(ctx context.Context, teamID string, t conversations.Turn) error {
	c := t.Conversation
	c.TeamID = teamID
	item, err := convItem(c)
	if err != nil {
		return internal(err, "marshal")
	}
	tx := []types.TransactWriteItem{{Put: &types.Put{
		TableName: &s.Table, Item: item,
		ConditionExpression:       aws.String("version = :v AND #st = :open"),
		ExpressionAttributeNames:  map[string]string{"#st": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":v": num(c.Version - 1), ":open": str(conversations.StatusOpen)},
	}}}
	for _, m := range t.Messages {
		mi, err := msgItem(teamID, m)
		if err != nil {
			return internal(err, "marshal")
		}
		tx = append(tx, types.TransactWriteItem{Put: &types.Put{TableName: &s.Table, Item: mi, ConditionExpression: aws.String("attribute_not_exists(pk)")}})
	}
	for _, p := range t.Join {
		tx = append(tx, s.joinParticipant(teamID, c.ID, p))
	}
	if t.Handoff != nil {
		hp, err := s.handoffPut(teamID, *t.Handoff)
		if err != nil {
			return internal(err, "marshal")
		}
		tx = append(tx, hp)
	}
	if t.Memory != nil {
		mp, err := s.handoffMemoryPut(teamID, *t.Memory)
		if err != nil {
			return internal(err, "marshal")
		}
		tx = append(tx, mp)
	}
	if t.PrevCurrent != c.CurrentAgent {
		if t.PrevCurrent != "" {
			tx = append(tx, s.convCounter(teamID, t.PrevCurrent, -1))
		}
		if c.CurrentAgent != "" {
			tx = append(tx, s.convCounter(teamID, c.CurrentAgent, 1))
		}
	}
	d := t.Decision
	d.TeamID = teamID
	di, err := decisionItem(d)
	if err != nil {
		return internal(err, "marshal")
	}
	tx = append(tx, types.TransactWriteItem{Put: &types.Put{TableName: &s.Table, Item: di, ConditionExpression: aws.String("attribute_not_exists(pk)")}})
	_, err = s.DB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: tx})
	if r := cancellationReasons(err); r != nil {
		if len(r) > 0 && r[0] == "ConditionalCheckFailed" {
			return apperr.Wrap(apperr.ECONFLICT, err, "the conversation changed during the turn").WithReason("ConversationChanged")
		}
		return apperr.Wrap(apperr.ECONFLICT, err, "the turn conflicted with a concurrent change; try again").WithReason("TransactionConflict")
	}
	if err != nil {
		return internal(err, "TransactWriteItems")
	}
	if t.Memory != nil {
		// A return in the turn: as in CommitHandoff, both agents' cached
		// contexts now miss its memory.
		return s.DropContexts(ctx, teamID, append([]string{t.Memory.Author}, t.Memory.Agents...))
	}
	return nil
}

// CloseConversation implements conversations.Store.
func (s *Store) CloseConversation(ctx context.Context, teamID string, c conversations.Conversation, at time.Time) error {
	c.TeamID, c.Status, c.UpdatedAt, c.Version = teamID, conversations.StatusClosed, at, c.Version+1
	item, err := convItem(c)
	if err != nil {
		return internal(err, "marshal")
	}
	tx := []types.TransactWriteItem{{Put: &types.Put{
		TableName: &s.Table, Item: item,
		ConditionExpression:       aws.String("version = :v AND #st = :open"),
		ExpressionAttributeNames:  map[string]string{"#st": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":v": num(c.Version - 1), ":open": str(conversations.StatusOpen)},
	}}}
	if c.CurrentAgent != "" {
		tx = append(tx, s.convCounter(teamID, c.CurrentAgent, -1))
	}
	_, err = s.DB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: tx})
	if cancellationReasons(err) != nil {
		return apperr.Wrap(apperr.ECONFLICT, err, "the conversation changed; read it and try again").WithReason("ConversationChanged")
	}
	if err != nil {
		return internal(err, "TransactWriteItems")
	}
	return nil
}

// RateMessage implements conversations.Store.
func (s *Store) RateMessage(ctx context.Context, teamID string, f conversations.Feedback) error {
	rated := f.RatedAt.UTC().Format(time.RFC3339Nano)
	tx := []types.TransactWriteItem{{Update: &types.Update{
		TableName: &s.Table, Key: key(teamPK(teamID), msgSK(f.ConversationID, f.MessageID)),
		UpdateExpression:          aws.String("SET #rating = :r, rated_at = :t, rating_comment = :c"),
		ConditionExpression:       aws.String("attribute_exists(pk) AND #role = :assistant"),
		ExpressionAttributeNames:  map[string]string{"#role": "role", "#rating": "rating"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":r": num(f.Rating), ":t": str(rated), ":c": str(f.Comment), ":assistant": str(conversations.AuthorAssistant)},
	}}}
	for _, a := range f.Agents {
		tx = append(tx, types.TransactWriteItem{Put: &types.Put{TableName: &s.Table, Item: map[string]types.AttributeValue{
			attrPK: str(teamPK(teamID)), attrSK: str(feedbackSK(f.MessageID, a)), "type": str("feedback"),
			"agent": str(a), "rating": num(f.Rating), "query": str(f.Query), "rated_at": str(rated),
			"expires_at": &types.AttributeValueMemberN{Value: strconv.FormatInt(f.RatedAt.Add(feedbackRetention).Unix(), 10)},
		}}})
	}
	_, err := s.DB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: tx})
	if cancellationReasons(err) != nil {
		return apperr.NotFound("agent reply", f.MessageID)
	}
	if err != nil {
		return internal(err, "TransactWriteItems")
	}
	return nil
}

// RecentRatings implements expertgate.Source: ratings of replies made since
// (keys sort by the reply's id, which sorts by time), newest first.
func (s *Store) RecentRatings(ctx context.Context, teamID string, since time.Time, limit int) ([]routing.Rating, error) {
	in := &dynamodb.QueryInput{
		TableName:              &s.Table,
		KeyConditionExpression: aws.String("pk = :pk AND sk BETWEEN :from AND :to"),
		FilterExpression:       aws.String("rated_at >= :since"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": str(teamPK(teamID)), ":from": str(prefixFeedback + ids.Floor("msg", since)), ":to": str(prefixFeedback + "~"),
			":since": str(since.UTC().Format(time.RFC3339Nano)),
		},
		ScanIndexForward: aws.Bool(false),
	}
	var out []routing.Rating
	for len(out) < limit {
		res, err := s.DB.Query(ctx, in)
		if err != nil {
			return nil, internal(err, "Query")
		}
		for _, m := range res.Items {
			var it struct {
				Agent   string    `dynamodbav:"agent"`
				Rating  int       `dynamodbav:"rating"`
				Query   string    `dynamodbav:"query"`
				RatedAt time.Time `dynamodbav:"rated_at"`
			}
			if err := unmarshal(m, &it); err != nil {
				return nil, internal(err, "unmarshal")
			}
			out = append(out, routing.Rating{Agent: it.Agent, Rating: it.Rating, Query: it.Query, At: it.RatedAt})
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

// AgentLoads implements expertgate.Source: every agent's counters.
func (s *Store) AgentLoads(ctx context.Context, teamID string) (map[string]routing.Load, error) {
	out := map[string]routing.Load{}
	in := prefixQuery(teamPK(teamID), prefixLoad, true)
	in.TableName = &s.Table
	for {
		res, err := s.DB.Query(ctx, in)
		if err != nil {
			return nil, internal(err, "Query")
		}
		for _, m := range res.Items {
			var it struct {
				Agent string  `dynamodbav:"agent_slug"`
				Tasks int     `dynamodbav:"active_tasks"`
				Convs int     `dynamodbav:"active_conversations"`
				Lat   float64 `dynamodbav:"latency_ms"`
			}
			if err := unmarshal(m, &it); err != nil {
				return nil, internal(err, "unmarshal")
			}
			if it.Agent == "" {
				it.Agent = strings.TrimPrefix(m[attrSK].(*types.AttributeValueMemberS).Value, prefixLoad)
			}
			out[it.Agent] = routing.Load{ActiveTasks: max(0, it.Tasks), ActiveConversations: max(0, it.Convs), LatencyMS: it.Lat}
		}
		if len(res.LastEvaluatedKey) == 0 {
			return out, nil
		}
		in.ExclusiveStartKey = res.LastEvaluatedKey
	}
}

// SetLatency implements conversations.Store.
func (s *Store) SetLatency(ctx context.Context, teamID, slug string, ms float64) error {
	_, err := s.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &s.Table, Key: key(teamPK(teamID), loadSK(slug)),
		UpdateExpression:          aws.String("SET latency_ms = :v, team_id = :team, agent_slug = :agent"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":v": numf(ms), ":team": str(teamID), ":agent": str(slug)},
	})
	if err != nil {
		return internal(err, "UpdateItem")
	}
	return nil
}

// allAgents reads every page of a team's agents with a status filter.
func (s *Store) allAgents(ctx context.Context, teamID, status string) ([]agents.Agent, error) {
	var out []agents.Agent
	p := paging.Page{Limit: paging.MaxLimit}
	for {
		list, next, err := s.ListAgents(ctx, teamID, agents.Filter{Status: status}, p)
		if err != nil {
			return nil, err
		}
		out = append(out, list...)
		if next == "" {
			return out, nil
		}
		p.Token = next
	}
}

// ActiveAgents implements expertgate.Source.
func (s *Store) ActiveAgents(ctx context.Context, teamID string) ([]agents.Agent, error) {
	return s.allAgents(ctx, teamID, agents.StatusActive)
}

// TeamAgents returns the team's agents that are not archived.
func (s *Store) TeamAgents(ctx context.Context, teamID string) ([]agents.Agent, error) {
	list, err := s.allAgents(ctx, teamID, "")
	if err != nil {
		return nil, err
	}
	out := list[:0]
	for _, a := range list {
		if a.Status != agents.StatusArchived {
			out = append(out, a)
		}
	}
	return out, nil
}

// GetDecision implements dispatch.Store.
func (s *Store) GetDecision(ctx context.Context, teamID, id string) (dispatch.Decision, error) {
	out, err := s.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.Table, Key: key(teamPK(teamID), decisionSK(id))})
	if err != nil {
		return dispatch.Decision{}, internal(err, "GetItem")
	}
	if out.Item == nil {
		return dispatch.Decision{}, apperr.NotFound("routing decision", id)
	}
	var d dispatch.Decision
	if err := readDoc(out.Item, &d); err != nil {
		return d, internal(err, "unmarshal")
	}
	return d, nil
}

// ListDecisions implements dispatch.Store, newest first. The
// conversation filter uses gsi1; the others are filter expressions.
func (s *Store) ListDecisions(ctx context.Context, teamID string, f dispatch.DecisionFilter, p paging.Page) ([]dispatch.Decision, string, error) {
	in := &dynamodb.QueryInput{ScanIndexForward: aws.Bool(false), ExpressionAttributeValues: map[string]types.AttributeValue{}}
	from := prefixDecision
	if !f.Since.IsZero() {
		from = decisionSK(ids.Floor("rdec", f.Since))
	}
	if f.ConversationID != "" {
		in.IndexName = aws.String("gsi1")
		in.KeyConditionExpression = aws.String("gsi1pk = :pk AND gsi1sk BETWEEN :from AND :to")
		in.ExpressionAttributeValues[":pk"] = str(convGSI1PK(teamID, f.ConversationID))
	} else {
		in.KeyConditionExpression = aws.String("pk = :pk AND sk BETWEEN :from AND :to")
		in.ExpressionAttributeValues[":pk"] = str(teamPK(teamID))
	}
	in.ExpressionAttributeValues[":from"], in.ExpressionAttributeValues[":to"] = str(from), str(prefixDecision+"~")
	var filters []string
	if f.Strategy != "" {
		filters = append(filters, "#strategy = :st")
		in.ExpressionAttributeNames = map[string]string{"#strategy": "strategy"}
		in.ExpressionAttributeValues[":st"] = str(f.Strategy)
	}
	if f.Agent != "" {
		filters = append(filters, "contains(selected_agents, :ag)")
		in.ExpressionAttributeValues[":ag"] = str(f.Agent)
	}
	if f.Fallback != nil {
		filters = append(filters, "fallback_used = :fb")
		in.ExpressionAttributeValues[":fb"] = &types.AttributeValueMemberBOOL{Value: *f.Fallback}
	}
	if len(filters) > 0 {
		in.FilterExpression = aws.String(strings.Join(filters, " AND "))
	}
	list := []dispatch.Decision{}
	next, err := s.queryPage(ctx, in, "decisions:"+teamID+":"+f.ConversationID, p, func(m map[string]types.AttributeValue) error {
		var d dispatch.Decision
		err := readDoc(m, &d)
		list = append(list, d)
		return err
	})
	return list, next, err
}

// RecentDecisions implements dispatch.Store.
func (s *Store) RecentDecisions(ctx context.Context, teamID string, since time.Time, limit int) ([]dispatch.Decision, error) {
	var out []dispatch.Decision
	p := paging.Page{Limit: paging.MaxLimit}
	for len(out) < limit {
		list, next, err := s.ListDecisions(ctx, teamID, dispatch.DecisionFilter{Since: since}, p)
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
