// Package budgetstore stores the teams' budgets, the CostGuard's monthly
// ledgers and the usage counters on the single table: it implements
// budget.Store over the shared core (shared/store/dynamo), so a function links it
// only when it serves this domain.
//
// The month's ledger keeps committed (spent plus reserved) and headroom
// (limit minus committed) beside spent and reserved, because a condition
// expression cannot add: a reservation is one UpdateItem that ADDs its
// amount to reserved and committed and subtracts it from headroom, on the
// condition headroom >= amount (or no limit). A new limit sets headroom to
// limit - committed in the same update (update expressions can subtract).
// Every other write is an ADD, so no concurrent call is ever lost and no
// two transactions contend for the month.
package budgetstore

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/team/budget"
)

// Store is the budgetstore half of the single-table store.
type Store struct{ *dynamo.Store }

var _ budget.Store = (*Store)(nil)

// New returns the store on table.
func New(db dynamo.API, table string) *Store { return &Store{dynamo.New(db, table)} }

// usageTTL is how long a usage counter is kept: a year and a month, so
// this month can be compared with the same month last year.
const usageTTL = 400 * 24 * time.Hour

// budgetItem is a team's budget.
type budgetItem struct {
	PK        string    `dynamodbav:"pk"`
	SK        string    `dynamodbav:"sk"`
	Type      string    `dynamodbav:"type"`
	Limit     int64     `dynamodbav:"limit_nanos"`
	WarnAt    float64   `dynamodbav:"warn_at"`
	PerUser   int64     `dynamodbav:"per_user_nanos,omitempty"`
	UpdatedAt time.Time `dynamodbav:"updated_at"`
}

// monthItem is a month's ledger as read; it is written only by updates.
type monthItem struct {
	Init      bool    `dynamodbav:"init"`
	Limited   bool    `dynamodbav:"limited"`
	Limit     int64   `dynamodbav:"limit_nanos"`
	WarnAt    float64 `dynamodbav:"warn_at"`
	Spent     int64   `dynamodbav:"spent"`
	Reserved  int64   `dynamodbav:"reserved"`
	Committed int64   `dynamodbav:"committed"`
	Headroom  int64   `dynamodbav:"headroom"`
	Calls     int64   `dynamodbav:"calls"`
	Warned    bool    `dynamodbav:"warned"`
}

func (m monthItem) ledger() budget.Ledger {
	return budget.Ledger{Initialized: m.Init, Limited: m.Limited, Limit: budget.Nanos(m.Limit), WarnAt: m.WarnAt,
		Spent: budget.Nanos(m.Spent), Reserved: budget.Nanos(m.Reserved), Calls: m.Calls, Warned: m.Warned}
}

// usageItem is one usage counter as read; it is written only by updates.
type usageItem struct {
	Day          string `dynamodbav:"day"`
	Agent        string `dynamodbav:"agent"`
	Model        string `dynamodbav:"model"`
	Conversation string `dynamodbav:"conversation"`
	Session      string `dynamodbav:"session"`
	User         string `dynamodbav:"user"`
	Calls        int64  `dynamodbav:"calls"`
	InputTokens  int64  `dynamodbav:"input_tokens"`
	OutputTokens int64  `dynamodbav:"output_tokens"`
	Nanos        int64  `dynamodbav:"nanos"`
}

func monthKey(teamID, month string) map[string]types.AttributeValue {
	return dynamo.Key(dynamo.TeamPK(teamID), dynamo.SpendSK(month))
}

// GetBudget implements budget.Store.
func (s *Store) GetBudget(ctx context.Context, teamID string) (budget.Budget, error) {
	return dynamo.Get(ctx, s.Store, dynamo.Key(dynamo.TeamPK(teamID), dynamo.SKBudget), "budget", teamID,
		func(m map[string]types.AttributeValue) (budget.Budget, error) {
			var it budgetItem
			err := dynamo.Unmarshal(m, &it)
			return budget.Budget{Limit: budget.Nanos(it.Limit), WarnAt: it.WarnAt, PerUser: budget.Nanos(it.PerUser), UpdatedAt: it.UpdatedAt}, err
		})
}

// limitUpdate gives a month the limit b (nil: none): headroom becomes the
// limit less what the month committed already.
func limitUpdate(b *budget.Budget) expression.UpdateBuilder {
	u := expression.Set(dynamo.Name("init"), dynamo.Value(true)).
		Set(dynamo.Name("limited"), dynamo.Value(b != nil))
	if b != nil {
		u = u.Set(dynamo.Name("limit_nanos"), dynamo.Value(int64(b.Limit))).
			Set(dynamo.Name("warn_at"), dynamo.Value(b.WarnAt)).
			Set(dynamo.Name("headroom"), dynamo.Value(int64(b.Limit)).Minus(dynamo.Name("committed").IfNotExists(dynamo.Value(0))))
	}
	return u
}

// PutBudget implements budget.Store: the budget and its month in one
// transaction.
func (s *Store) PutBudget(ctx context.Context, teamID, month string, b budget.Budget) error {
	tx := s.Txn()
	tx.Put("budget", budgetItem{PK: dynamo.TeamPK(teamID), SK: dynamo.SKBudget, Type: "budget", Limit: int64(b.Limit), WarnAt: b.WarnAt, PerUser: int64(b.PerUser), UpdatedAt: b.UpdatedAt}, expression.ConditionBuilder{})
	tx.Update("month", monthKey(teamID, month), limitUpdate(&b), expression.ConditionBuilder{})
	err := tx.RunConflicting(ctx)
	if c, ok := dynamo.AsCanceled(err); ok && c.Role == "" {
		// Model calls kept writing the month: nothing was written.
		return dynamo.RetryConflict(err, "the month's ledger was busy with model calls; try again")
	}
	return err
}

// GetLedger implements budget.Store.
func (s *Store) GetLedger(ctx context.Context, teamID, month string) (budget.Ledger, error) {
	m, err := s.GetItem(ctx, monthKey(teamID, month))
	if err != nil || m == nil {
		return budget.Ledger{}, err
	}
	var it monthItem
	if err := dynamo.Unmarshal(m, &it); err != nil {
		return budget.Ledger{}, dynamo.Internal(err, "unmarshal")
	}
	return it.ledger(), nil
}

// update runs one UpdateItem on the month; out, when not nil, receives the
// item after it (ALL_NEW) and, on a failed condition, before it (ALL_OLD,
// with failed true).
func (s *Store) update(ctx context.Context, teamID, month string, u expression.UpdateBuilder, cond expression.ConditionBuilder, out *monthItem) (failed bool, err error) {
	e, err := dynamo.Build(&u, cond)
	if err != nil {
		return false, dynamo.Internal(err, "expression")
	}
	in := &dynamodb.UpdateItemInput{
		TableName: &s.Table, Key: monthKey(teamID, month), UpdateExpression: e.Update(), ConditionExpression: e.Condition(),
		ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
	}
	if out != nil {
		in.ReturnValues = types.ReturnValueAllNew
		in.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
	}
	res, err := s.DB.UpdateItem(ctx, in)
	if old, ok := dynamo.ConditionFailed(err); ok {
		if out != nil && old != nil {
			if err := dynamo.Unmarshal(old, out); err != nil {
				return true, dynamo.Internal(err, "unmarshal")
			}
		}
		return true, nil
	}
	if err != nil {
		return false, dynamo.Internal(err, "UpdateItem")
	}
	if out != nil {
		if err := dynamo.Unmarshal(res.Attributes, out); err != nil {
			return false, dynamo.Internal(err, "unmarshal")
		}
	}
	return false, nil
}

// InitMonth implements budget.Store.
func (s *Store) InitMonth(ctx context.Context, teamID, month string, b *budget.Budget) error {
	_, err := s.update(ctx, teamID, month, limitUpdate(b), expression.AttributeNotExists(dynamo.Name("init")), nil)
	return err
}

// Reserve implements budget.Store.
func (s *Store) Reserve(ctx context.Context, teamID, month string, amount budget.Nanos) (budget.Ledger, error) {
	u, cond := reserveUpdate(int64(amount))
	var it monthItem
	failed, err := s.update(ctx, teamID, month, u, cond, &it)
	switch {
	case err != nil:
		return budget.Ledger{}, err
	case failed && !it.Init:
		return budget.Ledger{}, budget.ErrNoLedger
	case failed:
		return budget.Ledger{}, &budget.Exhausted{Ledger: it.ledger()}
	}
	return it.ledger(), nil
}

// Settle implements budget.Store: the month's ADDs, then the day's usage
// counter's (two single-item updates, not a transaction: concurrent
// calls' transactions on the month would cancel each other). A function
// stopped between them leaves usage one call short of the month, never
// the month short of its spend.
func (s *Store) Settle(ctx context.Context, c budget.Charge) error {
	diff := int64(c.Cost - c.Reserved)
	u := expression.Add(dynamo.Name("spent"), dynamo.Value(int64(c.Cost))).
		Add(dynamo.Name("reserved"), dynamo.Value(-int64(c.Reserved))).
		Add(dynamo.Name("committed"), dynamo.Value(diff)).
		Add(dynamo.Name("headroom"), dynamo.Value(-diff)).
		Add(dynamo.Name("calls"), dynamo.Value(1))
	if _, err := s.update(ctx, c.TeamID, c.Month, u, expression.ConditionBuilder{}, nil); err != nil {
		return err
	}
	a := c.Attribution
	parts := []string{a.Agent, a.Model, a.Conversation, a.Session}
	if a.User != "" && a.User != budget.KeyNone {
		if err := s.settleUser(ctx, c); err != nil {
			return err
		}
		// A person's counters are their own; a key's keep the key they
		// had before people were counted.
		parts = append(parts, a.User)
	}
	day, _ := time.Parse(time.DateOnly, c.Day)
	uu := expression.Add(dynamo.Name("calls"), dynamo.Value(1)).
		Add(dynamo.Name("input_tokens"), dynamo.Value(c.InputTokens)).
		Add(dynamo.Name("output_tokens"), dynamo.Value(c.OutputTokens)).
		Add(dynamo.Name("nanos"), dynamo.Value(int64(c.Cost))).
		Set(dynamo.Name("type"), dynamo.Value("usage")).
		Set(dynamo.Name("day"), dynamo.Value(c.Day)).
		Set(dynamo.Name("agent"), dynamo.Value(a.Agent)).
		Set(dynamo.Name("model"), dynamo.Value(a.Model)).
		Set(dynamo.Name("conversation"), dynamo.Value(a.Conversation)).
		Set(dynamo.Name("session"), dynamo.Value(a.Session)).
		Set(dynamo.Name("user"), dynamo.Value(a.User)).
		Set(dynamo.Name("expires_at"), dynamo.Value(dynamo.TTL(day.Add(usageTTL))))
	e, err := dynamo.Build(&uu, expression.ConditionBuilder{})
	if err != nil {
		return dynamo.Internal(err, "expression")
	}
	_, err = s.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &s.Table, Key: dynamo.Key(dynamo.TeamPK(c.TeamID), dynamo.UsageSK(c.Day, parts...)),
		UpdateExpression: e.Update(), ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
	})
	if err != nil {
		return dynamo.Internal(err, "UpdateItem")
	}
	return nil
}

// Release implements budget.Store.
func (s *Store) Release(ctx context.Context, teamID, month string, amount budget.Nanos) error {
	a := int64(amount)
	u := expression.Add(dynamo.Name("reserved"), dynamo.Value(-a)).
		Add(dynamo.Name("committed"), dynamo.Value(-a)).
		Add(dynamo.Name("headroom"), dynamo.Value(a))
	_, err := s.update(ctx, teamID, month, u, expression.ConditionBuilder{}, nil)
	return err
}

// MarkWarned implements budget.Store.
func (s *Store) MarkWarned(ctx context.Context, teamID, month string) (bool, error) {
	cond := expression.AttributeExists(dynamo.Name("init")).And(expression.AttributeNotExists(dynamo.Name("warned")))
	failed, err := s.update(ctx, teamID, month, expression.Set(dynamo.Name("warned"), dynamo.Value(true)), cond, nil)
	return err == nil && !failed, err
}

// Usage implements budget.Store: one query over the days' counters.
func (s *Store) Usage(ctx context.Context, teamID, from, to string) ([]budget.UsageRow, error) {
	in := &dynamodb.QueryInput{
		KeyConditionExpression: aws.String("pk = :pk AND sk BETWEEN :from AND :to"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk":   &types.AttributeValueMemberS{Value: dynamo.TeamPK(teamID)},
			":from": &types.AttributeValueMemberS{Value: dynamo.UsagePrefix(from)},
			":to":   &types.AttributeValueMemberS{Value: dynamo.UsagePrefix(to) + dynamo.PrefixEnd},
		},
	}
	var out []budget.UsageRow
	err := s.QueryAll(ctx, in, func(m map[string]types.AttributeValue) error {
		var it usageItem
		if err := dynamo.Unmarshal(m, &it); err != nil {
			return err
		}
		out = append(out, budget.UsageRow{Day: it.Day,
			Attribution: budget.Attribution{Agent: it.Agent, Model: it.Model, Conversation: it.Conversation, Session: it.Session, User: it.User}.Key(),
			Usage:       budget.Usage{Calls: it.Calls, InputTokens: it.InputTokens, OutputTokens: it.OutputTokens, Cost: budget.Nanos(it.Nanos)}})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
