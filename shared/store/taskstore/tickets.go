package taskstore

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

var _ tasks.TicketStore = (*Store)(nil)

// ticketItem is a slot ticket (tasks.Ticket). While it waits it carries a
// gsi2 entry in its agent's line, in line order; granted, the entry is
// removed with the update that grants it.
type ticketItem struct {
	PK      string    `dynamodbav:"pk"`
	SK      string    `dynamodbav:"sk"`
	Type    string    `dynamodbav:"type"`
	GSI2PK  string    `dynamodbav:"gsi2pk,omitempty"`
	GSI2SK  string    `dynamodbav:"gsi2sk,omitempty"`
	TeamID  string    `dynamodbav:"team_id"`
	Agent   string    `dynamodbav:"agent"`
	Key     string    `dynamodbav:"key"`
	Rank    int       `dynamodbav:"rank"`
	Since   time.Time `dynamodbav:"since"`
	Token   string    `dynamodbav:"token"`
	Status  string    `dynamodbav:"status"`
	Expires time.Time `dynamodbav:"expires"`
}

func ticketKey(teamID, key string) map[string]types.AttributeValue {
	return dynamo.Key(dynamo.TeamPK(teamID), dynamo.TicketSK(key))
}

func (it ticketItem) ticket() tasks.Ticket {
	return tasks.Ticket{TeamID: it.TeamID, Agent: it.Agent, Key: it.Key, Rank: it.Rank, Since: it.Since,
		Token: it.Token, Status: tasks.TicketStatus(it.Status), Expires: it.Expires}
}

func ticketStatusIs(st tasks.TicketStatus) expression.ConditionBuilder {
	return dynamo.Name("status").Equal(dynamo.Value(string(st)))
}

// grantTicket grants t in a release's transaction (conditioned on still
// waiting: tasks.ItemTicket), leaving its agent's line.
func grantTicket(tx *dynamo.Txn, t tasks.Ticket) {
	u := expression.Set(dynamo.Name("status"), dynamo.Value(string(tasks.TicketGranted))).
		Remove(dynamo.Name("gsi2pk")).Remove(dynamo.Name("gsi2sk"))
	tx.Update(tasks.ItemTicket, ticketKey(t.TeamID, t.Key), u, ticketStatusIs(tasks.TicketWaiting))
}

// useTicket spends a granted ticket of the task's assignee on its create,
// instead of a slot, and checks (same transaction) that the assignee is
// active.
func useTicket(tx *dynamo.Txn, t tasks.Task) {
	tx.Delete(tasks.ItemTicket, ticketKey(t.TeamID, t.Ticket),
		ticketStatusIs(tasks.TicketGranted).And(dynamo.Name("agent").Equal(dynamo.Value(t.Assignee))))
	tx.Check(tasks.ItemAssignee, dynamo.Key(dynamo.TeamPK(t.TeamID), dynamo.AgentSK(t.Assignee)), dynamo.Name("status").Equal(dynamo.Value("active")))
}

// WaitForSlot implements tasks.TicketStore: the ticket and its count on
// the agent, conditioned on the agent holding MaxActivePerAgent tasks.
func (s *Store) WaitForSlot(ctx context.Context, t tasks.Ticket) error {
	tx := s.Txn()
	tx.Create(tasks.ItemTicket, ticketItem{
		PK: dynamo.TeamPK(t.TeamID), SK: dynamo.TicketSK(t.Key), Type: "slot_ticket",
		GSI2PK: dynamo.LineGSI2PK(t.TeamID, t.Agent), GSI2SK: dynamo.LineGSI2SK(t.Rank, t.Since, t.Key),
		TeamID: t.TeamID, Agent: t.Agent, Key: t.Key, Rank: t.Rank, Since: t.Since.UTC(), Token: t.Token,
		Status: string(tasks.TicketWaiting), Expires: t.Expires.UTC(),
	})
	tx.Update(tasks.ItemSlotFree, dynamo.Key(dynamo.TeamPK(t.TeamID), dynamo.LoadSK(t.Agent)),
		dynamo.LoadUpdate(t.TeamID, t.Agent).Add(dynamo.Name("slot_waiters"), dynamo.Value(1)),
		dynamo.Name("active_tasks").GreaterThanEqual(dynamo.Value(tasks.MaxActivePerAgent)))
	return taskError(tx.Run(ctx))
}

// NextTickets implements tasks.TicketStore: one Query of the agent's line.
func (s *Store) NextTickets(ctx context.Context, teamID, agent string, n int) ([]tasks.Ticket, error) {
	in, err := dynamo.BuiltQuery(dynamo.IndexGSI2, dynamo.KeyIs(dynamo.AttrGSI2PK, dynamo.LineGSI2PK(teamID, agent)), expression.ConditionBuilder{}, true)
	if err != nil {
		return nil, dynamo.Internal(err, "expression")
	}
	in.TableName, in.Limit = &s.Table, aws.Int32(int32(n))
	out, err := s.DB.Query(ctx, in)
	if err != nil {
		return nil, dynamo.Internal(err, "Query")
	}
	return ticketsOf(out.Items)
}

func ticketsOf(items []map[string]types.AttributeValue) ([]tasks.Ticket, error) {
	var list []tasks.Ticket
	for _, m := range items {
		var it ticketItem
		if err := dynamo.Unmarshal(m, &it); err != nil {
			return nil, dynamo.Internal(err, "unmarshal")
		}
		list = append(list, it.ticket())
	}
	return list, nil
}

// GetTicket implements tasks.TicketStore.
func (s *Store) GetTicket(ctx context.Context, teamID, key string) (tasks.Ticket, error) {
	m, err := s.GetItem(ctx, ticketKey(teamID, key))
	if err != nil {
		return tasks.Ticket{}, err
	}
	if m == nil {
		return tasks.Ticket{}, apperr.NotFound("slot ticket", key)
	}
	var it ticketItem
	if err := dynamo.Unmarshal(m, &it); err != nil {
		return tasks.Ticket{}, dynamo.Internal(err, "unmarshal")
	}
	return it.ticket(), nil
}

// RefreshToken implements tasks.TicketStore.
func (s *Store) RefreshToken(ctx context.Context, t tasks.Ticket) error {
	tx := s.Txn()
	tx.Update(tasks.ItemTicket, ticketKey(t.TeamID, t.Key), expression.Set(dynamo.Name("token"), dynamo.Value(t.Token)), ticketStatusIs(tasks.TicketWaiting))
	return taskError(tx.Run(ctx))
}

// DropTicket implements tasks.TicketStore.
func (s *Store) DropTicket(ctx context.Context, t tasks.Ticket) error {
	tx := s.Txn()
	tx.Delete(tasks.ItemTicket, ticketKey(t.TeamID, t.Key), ticketStatusIs(tasks.TicketWaiting))
	tx.Update(dynamo.RoleRelease, dynamo.Key(dynamo.TeamPK(t.TeamID), dynamo.LoadSK(t.Agent)),
		expression.Add(dynamo.Name("slot_waiters"), dynamo.Value(-1)), expression.ConditionBuilder{})
	return taskError(tx.Run(ctx))
}

// ReleaseTicket implements tasks.TicketStore.
func (s *Store) ReleaseTicket(ctx context.Context, t tasks.Ticket, handoff *tasks.Ticket, force bool) error {
	tx := s.Txn()
	tx.Delete(tasks.ItemTicket, ticketKey(t.TeamID, t.Key), ticketStatusIs(tasks.TicketGranted))
	releaseSlot(tx, t.TeamID, t.Agent, handoff, force)
	return taskError(tx.Run(ctx))
}

// TicketsOf implements tasks.TicketStore: one Query of the team's
// partition by key prefix (a session's tickets are a handful).
func (s *Store) TicketsOf(ctx context.Context, teamID, prefix string) ([]tasks.Ticket, error) {
	in := dynamo.PrefixQuery(dynamo.TeamPK(teamID), dynamo.TicketSK(prefix), true)
	in.TableName, in.ConsistentRead = &s.Table, aws.Bool(true)
	out, err := s.DB.Query(ctx, in)
	if err != nil {
		return nil, dynamo.Internal(err, "Query")
	}
	return ticketsOf(out.Items)
}
