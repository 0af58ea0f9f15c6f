package dynamo

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/conclave-ai/conclave/shared/apperr"
	"github.com/conclave-ai/conclave/shared/conversations"
	"github.com/conclave-ai/conclave/shared/dispatch"
	"github.com/conclave-ai/conclave/shared/memory"
	"github.com/conclave-ai/conclave/shared/paging"
)

var (
	_ conversations.Store          = (*Store)(nil)
	_ conversations.MessageTail    = (*Store)(nil)
	_ dispatch.Store               = (*Store)(nil)
	_ conversations.AgentDirectory = (*Store)(nil)
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
	PrimaryAgent  string       `dynamodbav:"primary_agent,omitempty"`
	CurrentAgent  string       `dynamodbav:"current_agent"`
	Status        string       `dynamodbav:"status"`
	MessageCount  int          `dynamodbav:"message_count"`
	Version       int          `dynamodbav:"version"`
	HandoffActive bool         `dynamodbav:"handoff_active"`
	PreviousAgent string       `dynamodbav:"previous_agent,omitempty"`
	LastHandoff   *handoffItem `dynamodbav:"last_handoff,omitempty"`
	CreatedAt     time.Time    `dynamodbav:"created_at"`
	UpdatedAt     time.Time    `dynamodbav:"updated_at"`
}

func toConvItem(c conversations.Conversation) convItem {
	it := convItem{
		PK: teamPK(c.TeamID), SK: convSK(c.ID), Type: "conversation", TeamID: c.TeamID, ID: c.ID,
		Title: c.Title, PrimaryAgent: c.PrimaryAgent, CurrentAgent: c.CurrentAgent, Status: c.Status,
		MessageCount: c.MessageCount, Version: c.Version, HandoffActive: c.HandoffActive,
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
		ID: it.ID, TeamID: it.TeamID, Title: it.Title, PrimaryAgent: it.PrimaryAgent, CurrentAgent: it.CurrentAgent,
		Status: it.Status, MessageCount: it.MessageCount, Version: it.Version, CreatedAt: it.CreatedAt,
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
	err := unmarshal(m, &it)
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
	return name("version").Equal(value(readVersion)).And(convOpen())
}

func convOpen() expression.ConditionBuilder {
	return name("status").Equal(value(conversations.StatusOpen))
}

// changed is the error of a write that found the conversation moved on: an
// ECONFLICT (reason ConversationChanged, what clients see) caused by
// conversations.ErrChanged (what the domain matches).
func changed(err error, msg string) error {
	return apperr.Wrap(apperr.ECONFLICT, fmt.Errorf("%w: %w", conversations.ErrChanged, err), "%s", msg).WithReason("ConversationChanged")
}

// join adds or returns an agent to a conversation. A returning agent keeps
// its first role and join time, unless the change sets the role (handoff,
// return).
func (t *txn) join(teamID, conv string, p conversations.Participant) {
	var role expression.OperandBuilder = value(p.Role)
	if !p.SetRole {
		role = name("role").IfNotExists(value(p.Role))
	}
	u := expression.Set(name("role"), role).
		Set(name("joined_at"), name("joined_at").IfNotExists(value(p.JoinedAt.UTC()))).
		Set(name("agent"), value(p.Agent)).Set(name("type"), value("participant")).
		Remove(name("left_at"))
	t.update(roleParticipant, key(teamPK(teamID), partSK(conv, p.Agent)), u, expression.ConditionBuilder{})
}

// SetParticipants implements conversations.Store.
func (s *Store) SetParticipants(ctx context.Context, teamID, convID string, add []conversations.Participant, remove []string, at time.Time) error {
	tx := s.txn()
	tx.check(roleConversation, key(teamPK(teamID), convSK(convID)), convOpen())
	for _, p := range add {
		tx.join(teamID, convID, p)
	}
	for _, slug := range remove {
		tx.update(roleLeave+slug, key(teamPK(teamID), partSK(convID, slug)),
			expression.Set(name("left_at"), value(at.UTC())),
			name(attrPK).AttributeExists().And(name("left_at").AttributeNotExists()))
	}
	err := tx.run(ctx)
	if c, ok := asCanceled(err); ok {
		if c.Role == roleConversation {
			return apperr.New(apperr.ECONFLICT, "conversation is closed").WithReason("ConversationClosed")
		}
		if slug, ok := strings.CutPrefix(c.Role, roleLeave); ok {
			return apperr.NotFound("participant", slug)
		}
		return retryConflict(err, "the change conflicted with a concurrent one; try again")
	}
	return err
}

// CreateConversation implements conversations.Store.
func (s *Store) CreateConversation(ctx context.Context, c conversations.Conversation, primary *conversations.Participant) error {
	tx := s.txn()
	tx.create(roleConversation, toConvItem(c))
	if primary != nil {
		tx.join(c.TeamID, c.ID, *primary)
		tx.convCounter(c.TeamID, primary.Agent, 1)
	}
	err := tx.run(ctx)
	if _, ok := asCanceled(err); ok {
		return apperr.Wrap(apperr.ECONFLICT, err, "conversation already exists")
	}
	return err
}

// GetConversation implements conversations.Store.
func (s *Store) GetConversation(ctx context.Context, teamID, id string) (conversations.Conversation, error) {
	m, err := s.getItem(ctx, key(teamPK(teamID), convSK(id)))
	if err != nil {
		return conversations.Conversation{}, err
	}
	if m == nil {
		return conversations.Conversation{}, apperr.NotFound("conversation", id)
	}
	c, err := fromConvItem(m)
	if err != nil {
		return c, internal(err, "unmarshal")
	}
	c.TeamID = teamID
	return c, nil
}

// ListConversations implements conversations.Store, newest first.
func (s *Store) ListConversations(ctx context.Context, teamID string, p paging.Page) ([]conversations.Conversation, string, error) {
	list := []conversations.Conversation{}
	next, err := s.queryPage(ctx, prefixQuery(teamPK(teamID), prefixConv, false), "convs:"+teamID, p, func(m map[string]types.AttributeValue) error {
		c, err := fromConvItem(m)
		list = append(list, c)
		return err
	})
	return list, next, err
}

// ListParticipants implements conversations.Store.
func (s *Store) ListParticipants(ctx context.Context, teamID, id string) ([]conversations.Participant, error) {
	list := []conversations.Participant{}
	_, err := s.queryPage(ctx, prefixQuery(teamPK(teamID), partPrefix(id), true), "parts", paging.Page{Limit: 100}, func(m map[string]types.AttributeValue) error {
		var it participantItem
		if err := unmarshal(m, &it); err != nil {
			return err
		}
		list = append(list, it.toParticipant())
		return nil
	})
	return list, err
}

// CommitTurn implements conversations.Store: the conversation (conditioned
// on the version read and still open), the messages, the participants,
// the handoff record and episodic memory of a return (with the two agents'
// cached contexts dropped), the conversation counters and reply latencies
// of the agents, the decision and the markers of the results the reply
// carries (each absent), in one transaction.
func (s *Store) CommitTurn(ctx context.Context, teamID string, t conversations.Turn) error {
	c := t.Conversation
	c.TeamID = teamID
	tx := s.txn()
	tx.put(roleConversation, toConvItem(c), convUnchanged(c.Version-1))
	for _, m := range t.Messages {
		tx.create(roleMessage, toMessageItem(teamID, m))
	}
	for _, p := range t.Join {
		tx.join(teamID, c.ID, p)
	}
	if t.Handoff != nil {
		tx.create(roleHandoff, toHandoffItem(teamID, *t.Handoff))
	}
	tx.moveCurrent(teamID, t.PrevCurrent, c.CurrentAgent, t.Latency)
	d := t.Decision
	d.TeamID = teamID
	tx.create(roleDecision, toDecisionItem(d))
	// The markers of the results the reply carries, as PostResult writes
	// them (attribute_not_exists): a result posted first refuses the turn.
	for _, r := range t.Carried {
		tx.create(roleResult, resultItem{PK: teamPK(teamID), SK: resultSK(r.Marker), Type: "result_posted",
			ConversationID: c.ID, MessageID: r.MessageID, PostedAt: c.UpdatedAt.UTC()})
	}
	return s.commitConversation(ctx, tx, teamID, "turn", t.Memory)
}

// commitConversation runs a transaction that moves a conversation on (a
// turn or a handoff), with the episodic memory of a handoff or return when
// there is one. A failed condition on the conversation is
// conversations.ErrChanged (the service re-reads and retries); any other
// cancellation is a conflict to try again. With a memory, the cached
// contexts of the agents it is visible to are dropped in the same
// transaction (the epoch bumped, as DropContexts does), since they now
// miss it: one write, and never a memory without its contexts dropped.
func (s *Store) commitConversation(ctx context.Context, tx *txn, teamID, what string, mem *memory.Memory) error {
	if mem != nil {
		m := *mem
		m.TeamID = teamID
		tx.create(roleMemory, toMemoryItem(m))
		tx.dropContexts(teamID, append([]string{mem.Author}, mem.Agents...))
	}
	// The epoch is the team's: a context cached meanwhile (another
	// conversation's turn) conflicts with it, which a rerun outlasts.
	err := tx.runConflicting(ctx)
	if cx, ok := asCanceled(err); ok {
		if cx.Role == roleConversation {
			return changed(err, "the conversation changed during the "+what)
		}
		return retryConflict(err, "the "+what+" conflicted with a concurrent change; try again")
	}
	return err
}

// CloseConversation implements conversations.Store.
func (s *Store) CloseConversation(ctx context.Context, teamID string, c conversations.Conversation, at time.Time) error {
	c.TeamID, c.Status, c.UpdatedAt, c.Version = teamID, conversations.StatusClosed, at, c.Version+1
	tx := s.txn()
	tx.put(roleConversation, toConvItem(c), convUnchanged(c.Version-1))
	if c.CurrentAgent != "" {
		tx.convCounter(teamID, c.CurrentAgent, -1)
	}
	err := tx.run(ctx)
	if _, ok := asCanceled(err); ok {
		return changed(err, "the conversation changed; read it and try again")
	}
	return err
}
