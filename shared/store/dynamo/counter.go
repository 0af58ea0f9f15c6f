package dynamo

import (
	"context"
	"errors"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// ttlCount is the one expiring counter (queue attempts, the per-team rate):
// it adds one to attr on the item at k and returns the new value, and gives
// the item its expiry (expires_at, epoch seconds) only when the ADD creates
// it, so a later increment keeps the first expiry. One UpdateItem whose
// answer is the count: concurrent increments each see their own.
func (s *Store) ttlCount(ctx context.Context, k map[string]types.AttributeValue, attr string, expires int64) (int, error) {
	u := expression.Add(Name(attr), Value(1)).
		Set(Name("expires_at"), Name("expires_at").IfNotExists(Value(expires)))
	e, err := Build(&u, expression.ConditionBuilder{})
	if err != nil {
		return 0, Internal(err, "expression")
	}
	out, err := s.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &s.Table, Key: k, UpdateExpression: e.Update(),
		ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
		ReturnValues: types.ReturnValueUpdatedNew,
	})
	if err != nil {
		return 0, Internal(err, "UpdateItem")
	}
	n, ok := out.Attributes[attr].(*types.AttributeValueMemberN)
	if !ok {
		return 0, Internal(errors.New("no "+attr+" in the answer"), "UpdateItem")
	}
	v, err := strconv.Atoi(n.Value)
	if err != nil {
		return 0, Internal(err, attr)
	}
	return v, nil
}
