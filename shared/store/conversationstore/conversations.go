package conversationstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/platform/streams"
	"github.com/conclave-ai/conclave/shared/routing/cascade"
	"github.com/conclave-ai/conclave/shared/store/decisionstore"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/store/memorystore"
	"github.com/conclave-ai/conclave/shared/team/memory"
)

var (
	_ conversations.Store          = (*Store)(nil)
	_ conversations.MessageTail    = (*Store)(nil)
	_ conversations.AgentDirectory = (*Store)(nil)
	_ conversations.Replays        = (*Store)(nil)
)

// convItem is a conversation. Its participants are items of their own
// (participantItem); the last handoff is a nested map.
type convItem struct {
	PK            string       `dynamodbav:"pk"`
	SK            string       `dynamodbav:"sk"`
	Type          string       `dynamodbav:"type"`
	TeamID        string       `dynamodbav:"team_id"`
	ID            string       `dynamodbav:"id"`
	Title         string       `dynamodbav:"title"`
	Owner         string       `dynamodbav:"owner,omitempty"`
	PrimaryAgent  string       `dynamodbav:"primary_agent,omitempty"`
	CurrentAgent  string       `dynamodbav:"current_agent"`
	Status        string       `dynamodbav:"status"`
	MessageCount  int          `dynamodbav:"message_count"`
	Version       int          `dynamodbav:"version"`
	EventSeq      int64        `dynamodbav:"event_seq"`
	HandoffActive bool         `dynamodbav:"handoff_active"`
	PreviousAgent string       `dynamodbav:"previous_agent,omitempty"`
	LastHandoff   *handoffItem `dynamodbav:"last_handoff,omitempty"`
	CreatedAt     time.Time    `dynamodbav:"created_at"`
	UpdatedAt     time.Time    `dynamodbav:"updated_at"`
}

func toConvItem(c conversations.Conversation) convItem {
	it := convItem{
		PK: dynamo.TeamPK(c.TeamID), SK: dynamo.ConvSK(c.ID), Type: "conversation", TeamID: c.TeamID, ID: c.ID,
		Title: c.Title, Owner: c.Owner, PrimaryAgent: c.PrimaryAgent, CurrentAgent: c.CurrentAgent, Status: c.Status,
		MessageCount: c.MessageCount, Version: c.Version, EventSeq: c.EventSeq, HandoffActive: c.HandoffActive,
		PreviousAgent: c.PreviousAgent, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt,
	}
	if c.LastHandoff != nil {
		h := handoffValue(*c.LastHandoff)
		it.LastHandoff = &h
	}
	return it
}

func (it convItem) toConversation() conversations.Conversation {
	c := conversations.Conversation{
		ID: it.ID, TeamID: it.TeamID, Title: it.Title, Owner: it.Owner, PrimaryAgent: it.PrimaryAgent, CurrentAgent: it.CurrentAgent,
		Status: it.Status, MessageCount: it.MessageCount, Version: it.Version, EventSeq: it.EventSeq, CreatedAt: it.CreatedAt,
		UpdatedAt: it.UpdatedAt, HandoffActive: it.HandoffActive, PreviousAgent: it.PreviousAgent,
	}
	if it.LastHandoff != nil {
		h := it.LastHandoff.toHandoff()
		c.LastHandoff = &h
	}
	return c
}

func fromConvItem(m map[string]types.AttributeValue) (conversations.Conversation, error) {
	var it convItem
	err := dynamo.Unmarshal(m, &it)
	return it.toConversation(), err
}

// participantItem is an agent's part in a conversation. It is written only
// by updates (a returning agent keeps its first role and join time), so
// it has no toItem.
type participantItem struct {
	PK       string     `dynamodbav:"pk"`
	SK       string     `dynamodbav:"sk"`
	Type     string     `dynamodbav:"type"`
	Agent    string     `dynamodbav:"agent"`
	Role     string     `dynamodbav:"role"`
	JoinedAt time.Time  `dynamodbav:"joined_at"`
	LeftAt   *time.Time `dynamodbav:"left_at,omitempty"`
}

func (it participantItem) toParticipant() conversations.Participant {
	return conversations.Participant{Agent: it.Agent, Role: it.Role, JoinedAt: it.JoinedAt, LeftAt: it.LeftAt}
}

// convUnchanged is the condition of every write of a conversation: still
// the version read, and open.
func convUnchanged(readVersion int) expression.ConditionBuilder {
	return dynamo.Name("version").Equal(dynamo.Value(readVersion)).And(convOpen())
}

func convOpen() expression.ConditionBuilder {
	return dynamo.Name("status").Equal(dynamo.Value(conversations.StatusOpen))
}

// changed is the error of a write that found the conversation moved on: an
// ECONFLICT (reason ConversationChanged, what clients see) caused by
// conversations.ErrChanged (what the domain matches).
func changed(err error, msg string) error {
	return apperr.Wrap(apperr.ECONFLICT, fmt.Errorf("%w: %w", conversations.ErrChanged, err), "%s", msg).WithReason("ConversationChanged")
}

// join adds or returns an agent to a conversation. A returning agent keeps
// its first role and join time, unless the change sets the role (handoff,
// return). Every join sets the agent's gsi4 entry (the conversations it
// took part in), so a participant written before the index had it gets
// it the next time it joins (answers, is added or handed the
// conversation).
func join(t *dynamo.Txn, teamID, conv string, p conversations.Participant) {
	var role expression.OperandBuilder = dynamo.Value(p.Role)
	if !p.SetRole {
		role = dynamo.Name("role").IfNotExists(dynamo.Value(p.Role))
	}
	u := expression.Set(dynamo.Name("role"), role).
		Set(dynamo.Name("joined_at"), dynamo.Name("joined_at").IfNotExists(dynamo.Value(p.JoinedAt.UTC()))).
		Set(dynamo.Name("agent"), dynamo.Value(p.Agent)).Set(dynamo.Name("type"), dynamo.Value("participant")).
		Set(dynamo.Name(dynamo.AttrGSI4PK), dynamo.Value(dynamo.ConvAgentGSI4PK(teamID, p.Agent))).
		Set(dynamo.Name(dynamo.AttrGSI4SK), dynamo.Value(conv)).
		Remove(dynamo.Name("left_at"))
	t.Update(dynamo.RoleParticipant, dynamo.Key(dynamo.TeamPK(teamID), dynamo.PartSK(conv, p.Agent)), u, expression.ConditionBuilder{})
}

// SetParticipants implements conversations.Store.
func (s *Store) SetParticipants(ctx context.Context, teamID, convID string, add []conversations.Participant, remove []string, at time.Time) error {
	tx := s.Txn()
	tx.Check(dynamo.RoleConversation, dynamo.Key(dynamo.TeamPK(teamID), dynamo.ConvSK(convID)), convOpen())
	for _, p := range add {
		join(tx, teamID, convID, p)
	}
	for _, slug := range remove {
		tx.Update(dynamo.RoleLeave+slug, dynamo.Key(dynamo.TeamPK(teamID), dynamo.PartSK(convID, slug)),
			expression.Set(dynamo.Name("left_at"), dynamo.Value(at.UTC())),
			dynamo.Name(dynamo.AttrPK).AttributeExists().And(dynamo.Name("left_at").AttributeNotExists()))
	}
	err := tx.Run(ctx)
	if c, ok := dynamo.AsCanceled(err); ok {
		if c.Role == dynamo.RoleConversation {
			return apperr.New(apperr.ECONFLICT, "conversation is closed").WithReason("ConversationClosed")
		}
		if slug, ok := strings.CutPrefix(c.Role, dynamo.RoleLeave); ok {
			return apperr.NotFound("participant", slug)
		}
		return dynamo.RetryConflict(err, "the change conflicted with a concurrent one; try again")
	}
	return err
}

// CreateConversation implements conversations.Store.
func (s *Store) CreateConversation(ctx context.Context, c conversations.Conversation, primary *conversations.Participant) error {
	tx := s.Txn()
	tx.Create(dynamo.RoleConversation, toConvItem(c))
	if primary != nil {
		join(tx, c.TeamID, c.ID, *primary)
		convCounter(tx, c.TeamID, primary.Agent, 1)
	}
	err := tx.Run(ctx)
	if _, ok := dynamo.AsCanceled(err); ok {
		return apperr.Wrap(apperr.ECONFLICT, err, "conversation already exists")
	}
	return err
}

// GetConversation implements conversations.Store.
func (s *Store) GetConversation(ctx context.Context, teamID, id string) (conversations.Conversation, error) {
	return dynamo.Get(ctx, s, dynamo.Key(dynamo.TeamPK(teamID), dynamo.ConvSK(id)), "conversation", id, func(m map[string]types.AttributeValue) (conversations.Conversation, error) {
		c, err := fromConvItem(m)
		c.TeamID = teamID
		return c, err
	})
}

// ListConversations implements conversations.Store, newest first: one
// Query of the team's conversations; an owner's with a filter on owner,
// refilled while it leaves the page short (QueryFill).
func (s *Store) ListConversations(ctx context.Context, teamID, owner string, p paging.Page) ([]conversations.Conversation, string, error) {
	list := []conversations.Conversation{}
	each := func(m map[string]types.AttributeValue) error {
		c, err := fromConvItem(m)
		list = append(list, c)
		return err
	}
	if owner == "" {
		next, err := s.QueryPage(ctx, dynamo.PrefixQuery(dynamo.TeamPK(teamID), dynamo.PrefixConv, false), "convs:"+teamID, p, each)
		return list, next, err
	}
	in, err := dynamo.BuiltQuery("", dynamo.KeyIs(dynamo.AttrPK, dynamo.TeamPK(teamID)).And(dynamo.HasPrefix(dynamo.AttrSK, dynamo.PrefixConv)),
		dynamo.Name("owner").Equal(dynamo.Value(owner)), false)
	if err != nil {
		return nil, "", dynamo.Internal(err, "expression")
	}
	next, err := s.QueryFill(ctx, in, "convs:"+teamID+":owner:"+owner, p, each)
	return list, next, err
}

// ListAgentConversations implements conversations.Store: one Query of
// the agent's participant items on gsi4 (by conversation id, descending:
// newest first), then one BatchGetItem of their conversations, returned
// in the index's order. A participant written before gsi4 existed is
// not in it until the agent joins again (join).
func (s *Store) ListAgentConversations(ctx context.Context, teamID, agent string, p paging.Page) ([]conversations.Conversation, string, error) {
	in, err := dynamo.BuiltQuery(dynamo.IndexGSI4, dynamo.KeyIs(dynamo.AttrGSI4PK, dynamo.ConvAgentGSI4PK(teamID, agent)), expression.ConditionBuilder{}, false)
	if err != nil {
		return nil, "", dynamo.Internal(err, "expression")
	}
	var convIDs []string
	next, err := s.QueryPage(ctx, in, "convagent:"+teamID+":"+agent, p, func(m map[string]types.AttributeValue) error {
		var it struct {
			Conv string `dynamodbav:"gsi4sk"`
		}
		err := dynamo.Unmarshal(m, &it)
		convIDs = append(convIDs, it.Conv)
		return err
	})
	if err != nil {
		return nil, "", err
	}
	keys := make([]map[string]types.AttributeValue, len(convIDs))
	for i, id := range convIDs {
		keys[i] = dynamo.Key(dynamo.TeamPK(teamID), dynamo.ConvSK(id))
	}
	items, err := s.BatchGet(ctx, keys)
	if err != nil {
		return nil, "", err
	}
	byID := map[string]conversations.Conversation{}
	for _, m := range items {
		c, err := fromConvItem(m)
		if err != nil {
			return nil, "", dynamo.Internal(err, "unmarshal")
		}
		byID[c.ID] = c
	}
	list := []conversations.Conversation{}
	for _, id := range convIDs {
		if c, ok := byID[id]; ok {
			list = append(list, c)
		}
	}
	return list, next, nil
}

// ListParticipants implements conversations.Store.
func (s *Store) ListParticipants(ctx context.Context, teamID, id string) ([]conversations.Participant, error) {
	list := []conversations.Participant{}
	_, err := s.QueryPage(ctx, dynamo.PrefixQuery(dynamo.TeamPK(teamID), dynamo.PartPrefix(id), true), "parts", paging.Page{Limit: 100}, func(m map[string]types.AttributeValue) error {
		var it participantItem
		if err := dynamo.Unmarshal(m, &it); err != nil {
			return err
		}
		list = append(list, it.toParticipant())
		return nil
	})
	return list, err
}

// CommitTurn implements conversations.Store: the conversation (conditioned
// on the version read and still open), the messages and their events on
// the conversation's stream, the participants, the handoff record and
// episodic memory of a return (with the two agents' cached contexts
// dropped), the conversation counters and reply latencies of the agents,
// the decision and the markers of the results the reply carries (each
// absent), in one transaction.
func (s *Store) CommitTurn(ctx context.Context, teamID string, t conversations.Turn) error {
	c := t.Conversation
	c.TeamID = teamID
	tx := s.Txn()
	if t.IdempotencyKey != "" {
		// First, so a repeat is Replayed whatever else it meets (the
		// conversation moved on by the turn it repeats).
		ids := make([]string, len(t.Messages))
		for i, m := range t.Messages {
			ids[i] = m.ID
		}
		tx.Create(dynamo.RoleIdemRef, dynamo.IdemRefItems(teamID, conversations.RefKind, t.IdempotencyKey, ids, c.UpdatedAt))
	}
	tx.Put(dynamo.RoleConversation, toConvItem(c), convUnchanged(c.Version-1))
	for _, m := range t.Messages {
		tx.Create(dynamo.RoleMessage, ToMessageItem(teamID, m))
	}
	if err := messageEvents(tx, teamID, c, t.Messages); err != nil {
		return err
	}
	for _, p := range t.Join {
		join(tx, teamID, c.ID, p)
	}
	if t.Handoff != nil {
		tx.Create(dynamo.RoleHandoff, toHandoffItem(teamID, *t.Handoff))
	}
	moveCurrent(tx, teamID, t.PrevCurrent, c.CurrentAgent, t.Latency)
	d := t.Decision
	d.TeamID = teamID
	tx.Create(dynamo.RoleDecision, decisionstore.ToDecisionItem(d))
	// The markers of the results the reply carries, as PostResult writes
	// them (attribute_not_exists): a result posted first refuses the turn.
	for _, r := range t.Carried {
		tx.Create(RoleResult, ResultItem{PK: dynamo.TeamPK(teamID), SK: dynamo.ResultSK(r.Marker), Type: "result_posted",
			ConversationID: c.ID, MessageID: r.MessageID, PostedAt: c.UpdatedAt.UTC()})
	}
	err := s.commitConversation(ctx, tx, teamID, "turn", t.Memory)
	if ids, ok := dynamo.RefItemsOf(err); ok {
		return conversations.Replayed{MessageIDs: ids}
	}
	return err
}

// messageEvents adds to tx the stream events of msgs, stored with the
// conversation c (its new state): numbered up to c.EventSeq, which the
// conversation's put sets under its version condition (streamlog.go).
func messageEvents(tx *dynamo.Txn, teamID string, c conversations.Conversation, msgs []conversations.Message) error {
	evs, err := conversations.MessageEvents(teamID, c.EventSeq, msgs)
	if err != nil {
		return dynamo.Internal(err, "events")
	}
	tx.StreamEvents(teamID, streams.Conversation(c.ID), c.EventSeq, evs)
	return nil
}

// TurnOf implements conversations.Replays.
func (s *Store) TurnOf(ctx context.Context, teamID, key string) ([]string, error) {
	return s.ReadRef(ctx, teamID, conversations.RefKind, key)
}

// GetDecision implements conversations.Replays (the decision log's read).
func (s *Store) GetDecision(ctx context.Context, teamID, id string) (cascade.Decision, error) {
	return decisionstore.New(s.DB, s.Table).GetDecision(ctx, teamID, id)
}

// commitConversation runs a transaction that moves a conversation on (a
// turn or a handoff), with the episodic memory of a handoff or return when
// there is one. A failed condition on the conversation is
// conversations.ErrChanged (the service re-reads and retries); any other
// cancellation is a conflict to try again. With a memory, the cached
// contexts of the agents it is visible to are dropped in the same
// transaction (the epoch bumped, as DropContexts does), since they now
// miss it: one write, and never a memory without its contexts dropped.
func (s *Store) commitConversation(ctx context.Context, tx *dynamo.Txn, teamID, what string, mem *memory.Memory) error {
	if mem != nil {
		m := *mem
		m.TeamID = teamID
		tx.Create(dynamo.RoleMemory, memorystore.ToMemoryItem(m))
		memorystore.DropContexts(tx, teamID, append([]string{mem.Author}, mem.Agents...))
	}
	// The epoch is the team's: a context cached meanwhile (another
	// conversation's turn) conflicts with it, which a rerun outlasts.
	err := tx.RunConflicting(ctx)
	if cx, ok := dynamo.AsCanceled(err); ok {
		if cx.Role == dynamo.RoleConversation {
			return changed(err, "the conversation changed during the "+what)
		}
		if cx.Role == dynamo.RoleStreamEvent {
			return dynamo.Internal(err, "TransactWriteItems")
		}
		return dynamo.RetryConflict(err, "the "+what+" conflicted with a concurrent change; try again")
	}
	return err
}

// CloseConversation implements conversations.Store.
func (s *Store) CloseConversation(ctx context.Context, teamID string, c conversations.Conversation, at time.Time) error {
	c.TeamID, c.Status, c.UpdatedAt, c.Version = teamID, conversations.StatusClosed, at, c.Version+1
	tx := s.Txn()
	tx.Put(dynamo.RoleConversation, toConvItem(c), convUnchanged(c.Version-1))
	if c.CurrentAgent != "" {
		convCounter(tx, teamID, c.CurrentAgent, -1)
	}
	err := tx.Run(ctx)
	if _, ok := dynamo.AsCanceled(err); ok {
		return changed(err, "the conversation changed; read it and try again")
	}
	return err
}
