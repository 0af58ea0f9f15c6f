package consultationstore

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/store/memorystore"
	"github.com/conclave-ai/conclave/shared/store/messagestore"
	"github.com/conclave-ai/conclave/shared/team/messaging"
	"github.com/conclave-ai/conclave/shared/work/consultations"
)

var _ consultations.Store = (*Store)(nil)

// Keys of the consultation items (kept in this file, beside their items,
// while other slices change keys.go; they follow its conventions):
//
//	consultation    TEAM#<team>  CONS#<id>  (status, requesting_agent, consulted_agent filter it)  consultationItem
//	                gsi4 (with a conversation_id): CONVWORK#<team>#<conv id> / <created_at>#<id> (keys.go)
//	escalation      TEAM#<team>  ESC#<id>   (esc_status filters it; keys.go, since a task's
//	                task_overdue escalation is written by taskstore)                              escalationItem
//	active counter  TEAM#<team>  CONSLOAD#<slug>  (active: the agent's pending/in_progress
//	                consultations as requester; ids: a string set of their ids; written only
//	                by ADD/DELETE updates in the consultations' own version-conditioned
//	                transactions: a create or a reopen conditioned active < 3, a release
//	                active > 0)
//
//	get a consultation / escalation     GetItem TEAM#<team> / CONS#<id>, ESC#<id>
//	the consultations holding slots     GetItem TEAM#<team> / CONSLOAD#<slug> (ids)
//	a team's consultations newest first Query pk=TEAM#<team>, sk BETWEEN CONS# AND CONS#DEL, descending (ids sort by time)
//	escalations newest first by status  Query pk=TEAM#<team>, sk BETWEEN ESC# AND ESC#DEL, descending, filter esc_status
const (
	prefixConsultation = "CONS#"
	prefixConsLoad     = "CONSLOAD#"
)

func consultationSK(id string) string { return prefixConsultation + id }
func escalationSK(id string) string   { return dynamo.EscalationSK(id) }
func consLoadSK(slug string) string   { return prefixConsLoad + slug }

// Roles of the consultation transactions.
const (
	roleConsultation = "consultation"
	roleEscalation   = "escalation"
	roleConsCounter  = "consultation counter"
	roleInbox        = "inbox"
)

// consultationItem is a consultation. The nested parts (context, decision,
// context package, exchanges, loop evidence, outcome) are JSON text: the
// loop evidence is a free-form object and the rest is only ever read
// whole with the consultation; the attributes queries filter on are
// top-level.
type consultationItem struct {
	PK string `dynamodbav:"pk"`
	SK string `dynamodbav:"sk"`
	// GSI4PK and GSI4SK: the work of its conversation (with a
	// conversation_id only; the work listing reads the question from
	// Body).
	GSI4PK          string     `dynamodbav:"gsi4pk,omitempty"`
	GSI4SK          string     `dynamodbav:"gsi4sk,omitempty"`
	Type            string     `dynamodbav:"type"`
	ID              string     `dynamodbav:"id"`
	Status          string     `dynamodbav:"status"`
	RequestingAgent string     `dynamodbav:"requesting_agent"`
	ConsultedAgent  string     `dynamodbav:"consulted_agent"`
	ConversationID  string     `dynamodbav:"conversation_id,omitempty"`
	Urgency         string     `dynamodbav:"urgency"`
	Body            string     `dynamodbav:"body_json"`
	Version         int        `dynamodbav:"version"`
	CreatedAt       time.Time  `dynamodbav:"created_at"`
	UpdatedAt       time.Time  `dynamodbav:"updated_at"`
	CompletedAt     *time.Time `dynamodbav:"completed_at,omitempty"`
}

func toConsultationItem(c consultations.Consultation) (consultationItem, error) {
	body, err := json.Marshal(c)
	if err != nil {
		return consultationItem{}, err
	}
	it := consultationItem{PK: dynamo.TeamPK(c.TeamID), SK: consultationSK(c.ID), Type: "consultation", ID: c.ID, Status: string(c.Status),
		RequestingAgent: c.RequestingAgent, ConsultedAgent: c.ConsultedAgent, ConversationID: c.ConversationID, Urgency: c.Urgency, Body: string(body),
		Version: c.Version, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt, CompletedAt: c.CompletedAt}
	it.GSI4PK, it.GSI4SK = dynamo.ConvWorkKeys(c.TeamID, c.ConversationID, c.CreatedAt, c.ID)
	return it, nil
}

func fromConsultationItem(teamID string, m map[string]types.AttributeValue) (consultations.Consultation, error) {
	var it consultationItem
	if err := dynamo.Unmarshal(m, &it); err != nil {
		return consultations.Consultation{}, err
	}
	var c consultations.Consultation
	if err := json.Unmarshal([]byte(it.Body), &c); err != nil {
		return c, err
	}
	c.TeamID, c.Version = teamID, it.Version
	return c, nil
}

// escalationItem is an escalation; its evidence is JSON text (free-form).
type escalationItem struct {
	PK        string    `dynamodbav:"pk"`
	SK        string    `dynamodbav:"sk"`
	Type      string    `dynamodbav:"type"`
	ID        string    `dynamodbav:"id"`
	Status    string    `dynamodbav:"esc_status"`
	Body      string    `dynamodbav:"body_json"`
	CreatedAt time.Time `dynamodbav:"created_at"`
}

func toEscalationItem(e consultations.Escalation) (escalationItem, error) {
	body, err := json.Marshal(e)
	if err != nil {
		return escalationItem{}, err
	}
	return escalationItem{PK: dynamo.TeamPK(e.TeamID), SK: escalationSK(e.ID), Type: "escalation", ID: e.ID, Status: string(e.Status), Body: string(body), CreatedAt: e.CreatedAt}, nil
}

func fromEscalationItem(teamID string, m map[string]types.AttributeValue) (consultations.Escalation, error) {
	var it escalationItem
	if err := dynamo.Unmarshal(m, &it); err != nil {
		return consultations.Escalation{}, err
	}
	var e consultations.Escalation
	err := json.Unmarshal([]byte(it.Body), &e)
	e.TeamID = teamID
	return e, err
}

// idSet is a DynamoDB string set of ids (ADD and DELETE take a set).
type idSet []string

// MarshalDynamoDBAttributeValue implements attributevalue.Marshaler.
func (s idSet) MarshalDynamoDBAttributeValue() (types.AttributeValue, error) {
	return &types.AttributeValueMemberSS{Value: s}, nil
}

// consLoadItem is the part of the active counter ActiveConsultations reads.
type consLoadItem struct {
	Active int      `dynamodbav:"active"`
	IDs    []string `dynamodbav:"ids,stringset"`
}

// ActiveConsultations implements consultations.Store: one consistent
// GetItem of the agent's counter.
func (s *Store) ActiveConsultations(ctx context.Context, teamID, agent string) ([]string, error) {
	m, err := s.GetItem(ctx, dynamo.Key(dynamo.TeamPK(teamID), consLoadSK(agent)))
	if err != nil || m == nil {
		return []string{}, err
	}
	var it consLoadItem
	if err := dynamo.Unmarshal(m, &it); err != nil {
		return nil, dynamo.Internal(err, "unmarshal")
	}
	if it.IDs == nil {
		it.IDs = []string{}
	}
	return it.IDs, nil
}

// counterRuns bounds the attempts of a transaction on an active counter
// that lost to concurrent ones on the same counter (no condition of its
// own failed). Every consultation's create, answer, reopen and escalation
// writes its requester's counter, so an agent's concurrent consultations
// contend on one item; an answer's save must not be lost to that (its
// consultation would hold its slot until the idle limit), hence more
// attempts than runConflicting's, with a growing pause.
const counterRuns = 6

// runCounter runs tx, again while it loses to concurrent transactions
// only (up to counterRuns in all, while ctx lasts): a canceled
// transaction wrote nothing, so running it again is safe.
func runCounter(ctx context.Context, tx *dynamo.Txn) error {
	for i := 1; ; i++ {
		err := tx.Run(ctx)
		if c, ok := dynamo.AsCanceled(err); !ok || c.Role != "" || i >= counterRuns {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(i*(20+rand.IntN(60))) * time.Millisecond):
		}
	}
}

// takeConsSlot increments c's requester's counter below limit, recording
// c's id.
func takeConsSlot(t *dynamo.Txn, c consultations.Consultation, limit int) {
	t.Update(roleConsCounter, dynamo.Key(dynamo.TeamPK(c.TeamID), consLoadSK(c.RequestingAgent)),
		expression.Set(dynamo.Name("team_id"), dynamo.Value(c.TeamID)).Add(dynamo.Name("active"), dynamo.Value(1)).Add(dynamo.Name("ids"), dynamo.Value(idSet{c.ID})),
		dynamo.Name("active").AttributeNotExists().Or(dynamo.Name("active").LessThan(dynamo.Value(limit))))
}

// releaseConsSlot decrements c's requester's counter (never below 0),
// removing c's id.
func releaseConsSlot(t *dynamo.Txn, c consultations.Consultation) {
	t.Update(roleConsCounter, dynamo.Key(dynamo.TeamPK(c.TeamID), consLoadSK(c.RequestingAgent)),
		expression.Add(dynamo.Name("active"), dynamo.Value(-1)).Delete(dynamo.Name("ids"), dynamo.Value(idSet{c.ID})), dynamo.Name("active").GreaterThan(dynamo.Value(0)))
}

// CreateConsultation implements consultations.Store: the requester's
// counter incremented below limit and the consultation created, in one
// transaction, so concurrent requests cannot pass the limit.
func (s *Store) CreateConsultation(ctx context.Context, c consultations.Consultation, limit int) error {
	it, err := toConsultationItem(c)
	if err != nil {
		return dynamo.Internal(err, "marshal")
	}
	tx := s.Txn()
	tx.Keyed(ctx, c.TeamID, consultations.RefKind, c.ID, c.CreatedAt)
	takeConsSlot(tx, c, limit)
	tx.Create(roleConsultation, it)
	err = dynamo.Replayed(runCounter(ctx, tx), consultations.RefKind)
	cerr, ok := dynamo.AsCanceled(err)
	switch {
	case !ok:
		return err
	case cerr.Role == roleConsCounter:
		return errors.Join(consultations.ErrActiveLimit, err)
	case cerr.Role == roleConsultation:
		return apperr.Wrap(apperr.ECONFLICT, err, "consultation %s exists", c.ID)
	}
	return dynamo.RetryConflict(err, "the consultation conflicted with concurrent ones; try again")
}

// CreateEscalated implements consultations.Store.
func (s *Store) CreateEscalated(ctx context.Context, c consultations.Consultation, e consultations.Escalation) error {
	it, err := toConsultationItem(c)
	if err != nil {
		return dynamo.Internal(err, "marshal")
	}
	eit, err := toEscalationItem(e)
	if err != nil {
		return dynamo.Internal(err, "marshal")
	}
	tx := s.Txn()
	tx.Keyed(ctx, c.TeamID, consultations.RefKind, c.ID, c.CreatedAt)
	tx.Create(roleConsultation, it)
	tx.Create(roleEscalation, eit)
	if err := dynamo.Replayed(tx.Run(ctx), consultations.RefKind); err != nil {
		if _, ok := dynamo.AsCanceled(err); ok {
			return dynamo.RetryConflict(err, "the consultation conflicted with a concurrent write; try again")
		}
		return err
	}
	return nil
}

// GetConsultation implements consultations.Store.
func (s *Store) GetConsultation(ctx context.Context, teamID, id string) (consultations.Consultation, error) {
	return dynamo.Get(ctx, s, dynamo.Key(dynamo.TeamPK(teamID), consultationSK(id)), "consultation", id, func(m map[string]types.AttributeValue) (consultations.Consultation, error) {
		return fromConsultationItem(teamID, m)
	})
}

// ListConsultations implements consultations.Store: the team's CONS# range
// newest first, status and agent as filter expressions.
func (s *Store) ListConsultations(ctx context.Context, teamID string, f consultations.Filter, p paging.Page) ([]consultations.Consultation, string, error) {
	var filters []expression.ConditionBuilder
	if f.Status != "" {
		filters = append(filters, dynamo.Name("status").Equal(dynamo.Value(string(f.Status))))
	}
	if f.Agent != "" {
		filters = append(filters, dynamo.Name("requesting_agent").Equal(dynamo.Value(f.Agent)).Or(dynamo.Name("consulted_agent").Equal(dynamo.Value(f.Agent))))
	}
	in, err := dynamo.BuiltQuery("", dynamo.KeyIs(dynamo.AttrPK, dynamo.TeamPK(teamID)).And(dynamo.HasPrefix(dynamo.AttrSK, prefixConsultation)), dynamo.AllOf(filters), false)
	if err != nil {
		return nil, "", dynamo.Internal(err, "expression")
	}
	list := []consultations.Consultation{}
	next, err := s.QueryPage(ctx, in, "consultations:"+teamID, p, func(m map[string]types.AttributeValue) error {
		c, err := fromConsultationItem(teamID, m)
		list = append(list, c)
		return err
	})
	if err != nil {
		return nil, "", err
	}
	return list, next, nil
}

// SaveConsultation implements consultations.Store: the consultation
// conditioned on the version read, the counter released (never below 0)
// or taken (below sv.Acquire), and the escalation or memory it brings, in
// one transaction. The consultation is the first write, so when its
// version and the counter both fail the cause reported is ErrChanged:
// the change was made from a stale read.
func (s *Store) SaveConsultation(ctx context.Context, sv consultations.Save) error {
	c := sv.Consultation
	if sv.Release && sv.Acquire > 0 {
		return dynamo.Internal(errors.New("a save both releases and takes a slot"), "save consultation")
	}
	it, err := toConsultationItem(c)
	if err != nil {
		return dynamo.Internal(err, "marshal")
	}
	tx := s.Txn()
	tx.Put(roleConsultation, it, dynamo.Name("version").Equal(dynamo.Value(c.Version-1)))
	switch {
	case sv.Release:
		releaseConsSlot(tx, c)
	case sv.Acquire > 0:
		takeConsSlot(tx, c, sv.Acquire)
	}
	if sv.Escalation != nil {
		eit, err := toEscalationItem(*sv.Escalation)
		if err != nil {
			return dynamo.Internal(err, "marshal")
		}
		tx.Create(roleEscalation, eit)
	}
	if sv.Memory != nil {
		m := *sv.Memory
		m.TeamID = c.TeamID
		tx.Create(dynamo.RoleMemory, memorystore.ToMemoryItem(m))
		tx.Update(dynamo.RoleEpoch, dynamo.Key(dynamo.TeamPK(c.TeamID), dynamo.SKMemEpoch),
			expression.Set(dynamo.Name("team_id"), dynamo.Value(c.TeamID)).Add(dynamo.Name("epoch"), dynamo.Value(1)), expression.ConditionBuilder{})
		tx.Add(dynamo.RoleContext, types.TransactWriteItem{Delete: &types.Delete{TableName: &s.Table, Key: dynamo.Key(dynamo.TeamPK(c.TeamID), dynamo.ContextSK(m.Author))}})
	}
	if sv.Release || sv.Acquire > 0 {
		err = runCounter(ctx, tx)
	} else {
		err = tx.RunConflicting(ctx)
	}
	if cerr, ok := dynamo.AsCanceled(err); ok {
		switch {
		case cerr.Role == roleConsultation:
			return errors.Join(consultations.ErrChanged, err)
		case cerr.Role == roleConsCounter && sv.Acquire > 0:
			return errors.Join(consultations.ErrActiveLimit, err)
		}
		return dynamo.RetryConflict(err, "the consultation's change conflicted with a concurrent one; try again")
	}
	return err
}

// GetEscalation implements consultations.Store.
func (s *Store) GetEscalation(ctx context.Context, teamID, id string) (consultations.Escalation, error) {
	return dynamo.Get(ctx, s, dynamo.Key(dynamo.TeamPK(teamID), escalationSK(id)), "escalation", id, func(m map[string]types.AttributeValue) (consultations.Escalation, error) {
		return fromEscalationItem(teamID, m)
	})
}

// ListEscalations implements consultations.Store.
func (s *Store) ListEscalations(ctx context.Context, teamID string, st consultations.EscalationStatus, p paging.Page) ([]consultations.Escalation, string, error) {
	in, err := dynamo.BuiltQuery("", dynamo.KeyIs(dynamo.AttrPK, dynamo.TeamPK(teamID)).And(dynamo.HasPrefix(dynamo.AttrSK, dynamo.PrefixEscalation)), dynamo.Name("esc_status").Equal(dynamo.Value(string(st))), false)
	if err != nil {
		return nil, "", dynamo.Internal(err, "expression")
	}
	list := []consultations.Escalation{}
	next, err := s.QueryPage(ctx, in, "escalations:"+string(st)+":"+teamID, p, func(m map[string]types.AttributeValue) error {
		e, err := fromEscalationItem(teamID, m)
		list = append(list, e)
		return err
	})
	if err != nil {
		return nil, "", err
	}
	return list, next, nil
}

// ResolveEscalation implements consultations.Store: the escalation (still
// open), the consultation (at the version read), the message and the
// requester's inbox entry, in one transaction, so the answer is delivered
// exactly when the consultation is completed with it.
func (s *Store) ResolveEscalation(ctx context.Context, e consultations.Escalation, c consultations.Consultation, msg messaging.Message) error {
	eit, err := toEscalationItem(e)
	if err != nil {
		return dynamo.Internal(err, "marshal")
	}
	cit, err := toConsultationItem(c)
	if err != nil {
		return dynamo.Internal(err, "marshal")
	}
	mit, err := messagestore.ToAgentMessageItem(msg, dynamo.TeamPK(c.TeamID), dynamo.AgentMsgSK(msg.ID), "agent_message")
	if err != nil {
		return dynamo.Internal(err, "marshal")
	}
	iit, err := messagestore.ToAgentMessageItem(msg, dynamo.TeamPK(c.TeamID), dynamo.InboxSK(msg.To, msg.ID), "inbox_entry")
	if err != nil {
		return dynamo.Internal(err, "marshal")
	}
	tx := s.Txn()
	tx.Put(roleEscalation, eit, dynamo.Name("esc_status").Equal(dynamo.Value(string(consultations.EscalationOpen))))
	tx.Put(roleConsultation, cit, dynamo.Name("version").Equal(dynamo.Value(c.Version-1)))
	tx.Create(dynamo.RoleMessage, mit)
	tx.Create(roleInbox, messagestore.InboxItem{Recipient: msg.To, AgentMessageItem: iit})
	err = tx.Run(ctx)
	if cerr, ok := dynamo.AsCanceled(err); ok {
		switch cerr.Role {
		case roleEscalation:
			return apperr.Wrap(apperr.ECONFLICT, err, "escalation %s is already resolved", e.ID).WithReason("Resolved")
		case roleConsultation:
			return errors.Join(consultations.ErrChanged, err)
		}
		return dynamo.RetryConflict(err, "the resolution conflicted with a concurrent write; try again")
	}
	return err
}
