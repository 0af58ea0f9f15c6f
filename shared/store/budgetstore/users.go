package budgetstore

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/team/budget"
)

// A person's month (TEAM#<team> / SPEND#<month>#USER#<user>) keeps spent,
// reserved and committed (spent plus reserved), written only by ADDs. Its
// limit is the team budget's per_user_nanos, which can change at any time,
// so the item keeps no headroom: a reservation's condition is committed <=
// limit - amount, the subtraction done here.

// Roles of a person's reservation.
const (
	roleMonth = "month"
	roleUser  = "user month"
)

// userItem is a person's month as read; it is written only by updates.
type userItem struct {
	UserID   string `dynamodbav:"user_id"`
	Spent    int64  `dynamodbav:"spent"`
	Reserved int64  `dynamodbav:"reserved"`
	Calls    int64  `dynamodbav:"calls"`
}

func (u userItem) ledger(userID string) budget.UserLedger {
	return budget.UserLedger{UserID: userID, Spent: budget.Nanos(u.Spent), Reserved: budget.Nanos(u.Reserved), Calls: u.Calls}
}

func userKey(teamID, month, userID string) map[string]types.AttributeValue {
	return dynamo.Key(dynamo.TeamPK(teamID), dynamo.UserSpendSK(month, userID))
}

// userAdd is the update of a person's month: the ADDs and its names.
func userAdd(userID, month string, spent, reserved, calls int64) expression.UpdateBuilder {
	u := expression.Add(dynamo.Name("reserved"), dynamo.Value(reserved)).
		Add(dynamo.Name("committed"), dynamo.Value(spent+reserved)).
		Set(dynamo.Name("type"), dynamo.Value("user spend")).
		Set(dynamo.Name("user_id"), dynamo.Value(userID)).
		Set(dynamo.Name("month"), dynamo.Value(month))
	if spent != 0 || calls != 0 {
		u = u.Add(dynamo.Name("spent"), dynamo.Value(spent)).Add(dynamo.Name("calls"), dynamo.Value(calls))
	}
	return u
}

// reserveUpdate and reserveCond are a reservation on the team's month
// (Reserve's, in a transaction here).
func reserveUpdate(a int64) (expression.UpdateBuilder, expression.ConditionBuilder) {
	u := expression.Add(dynamo.Name("reserved"), dynamo.Value(a)).
		Add(dynamo.Name("committed"), dynamo.Value(a)).
		Add(dynamo.Name("headroom"), dynamo.Value(-a))
	cond := expression.AttributeExists(dynamo.Name("init")).And(
		dynamo.Name("limited").Equal(dynamo.Value(false)).Or(dynamo.Name("headroom").GreaterThanEqual(dynamo.Value(a))))
	return u, cond
}

// reserveRuns bounds ReserveUser's rounds of RunConflicting: every
// person's call of the team writes its month in a transaction, and
// concurrent ones cancel each other without a failed condition.
const reserveRuns = 4

// ReserveUser implements budget.Store: one transaction of the team's
// month and the person's, each on its condition.
func (s *Store) ReserveUser(ctx context.Context, teamID, month, userID string, limit, amount budget.Nanos) (budget.Ledger, error) {
	a := int64(amount)
	if limit < amount {
		// Could never fit: nothing to write, the person's month as it is.
		u, err := s.GetUserLedger(ctx, teamID, month, userID)
		if err != nil {
			return budget.Ledger{}, err
		}
		u.Limit = limit
		return budget.Ledger{}, &budget.UserExhausted{Ledger: u}
	}
	tx := s.Txn()
	mu, mc := reserveUpdate(a)
	tx.Update(roleMonth, monthKey(teamID, month), mu, mc)
	tx.Update(roleUser, userKey(teamID, month, userID), userAdd(userID, month, 0, a, 0),
		expression.AttributeNotExists(dynamo.Name("committed")).Or(dynamo.Name("committed").LessThanEqual(dynamo.Value(int64(limit)-a))))
	var err error
	for range reserveRuns {
		if err = tx.RunConflicting(ctx); err == nil {
			return s.GetLedger(ctx, teamID, month)
		}
		if c, ok := dynamo.AsCanceled(err); !ok || c.Role != "" {
			break
		}
	}
	c, ok := dynamo.AsCanceled(err)
	switch {
	case !ok:
		return budget.Ledger{}, err
	case c.Role == "":
		return budget.Ledger{}, dynamo.RetryConflict(err, "the month's ledger was busy with concurrent model calls; try again")
	case c.Role == roleUser:
		var it userItem
		if err := dynamo.Unmarshal(c.Old, &it); err != nil {
			return budget.Ledger{}, dynamo.Internal(err, "unmarshal")
		}
		u := it.ledger(userID)
		u.Limit = limit
		return budget.Ledger{}, &budget.UserExhausted{Ledger: u}
	}
	var it monthItem
	if err := dynamo.Unmarshal(c.Old, &it); err != nil {
		return budget.Ledger{}, dynamo.Internal(err, "unmarshal")
	}
	if !it.Init {
		return budget.Ledger{}, budget.ErrNoLedger
	}
	return budget.Ledger{}, &budget.Exhausted{Ledger: it.ledger()}
}

// ReleaseUser implements budget.Store.
func (s *Store) ReleaseUser(ctx context.Context, teamID, month, userID string, amount budget.Nanos) error {
	return s.updateUser(ctx, teamID, month, userID, userAdd(userID, month, 0, -int64(amount), 0))
}

// settleUser charges a settled call to its person's month.
func (s *Store) settleUser(ctx context.Context, c budget.Charge) error {
	return s.updateUser(ctx, c.TeamID, c.Month, c.Attribution.User,
		userAdd(c.Attribution.User, c.Month, int64(c.Cost), -int64(c.UserReserved), 1))
}

// updateUser runs one unconditional UpdateItem (ADDs) on a person's month.
func (s *Store) updateUser(ctx context.Context, teamID, month, userID string, u expression.UpdateBuilder) error {
	e, err := dynamo.Build(&u, expression.ConditionBuilder{})
	if err != nil {
		return dynamo.Internal(err, "expression")
	}
	_, err = s.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &s.Table, Key: userKey(teamID, month, userID), UpdateExpression: e.Update(),
		ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
	})
	if err != nil {
		return dynamo.Internal(err, "UpdateItem")
	}
	return nil
}

// GetUserLedger implements budget.Store.
func (s *Store) GetUserLedger(ctx context.Context, teamID, month, userID string) (budget.UserLedger, error) {
	m, err := s.GetItem(ctx, userKey(teamID, month, userID))
	if err != nil || m == nil {
		return budget.UserLedger{UserID: userID}, err
	}
	var it userItem
	if err := dynamo.Unmarshal(m, &it); err != nil {
		return budget.UserLedger{}, dynamo.Internal(err, "unmarshal")
	}
	return it.ledger(userID), nil
}
