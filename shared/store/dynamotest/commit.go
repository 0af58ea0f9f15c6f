package dynamotest

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// CountingDB counts the calls a method makes beside its transaction.
type CountingDB struct {
	FakeDB
	Updates, Deletes int
}

// TxKeys returns the sort key of every write of a transaction, in order.
func TxKeys(in *dynamodb.TransactWriteItemsInput) []string {
	var out []string
	for _, w := range in.TransactItems {
		var k map[string]types.AttributeValue
		switch {
		case w.Put != nil:
			k = w.Put.Item
		case w.Update != nil:
			k = w.Update.Key
		case w.Delete != nil:
			k = w.Delete.Key
		case w.ConditionCheck != nil:
			k = w.ConditionCheck.Key
		}
		out = append(out, k["sk"].(*types.AttributeValueMemberS).Value)
	}
	return out
}

// SeqTxDB answers its transactions with errs in turn (nil after them).
type SeqTxDB struct {
	CountingDB
	Errs []error
	Txs  []*dynamodb.TransactWriteItemsInput
}

// UpdateItem counts the update.
func (c *CountingDB) UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	c.Updates++
	return &dynamodb.UpdateItemOutput{}, nil
}

// DeleteItem counts the delete.
func (c *CountingDB) DeleteItem(context.Context, *dynamodb.DeleteItemInput, ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	c.Deletes++
	return &dynamodb.DeleteItemOutput{}, nil
}

// TransactWriteItems keeps the request and answers the next of Errs.
func (s *SeqTxDB) TransactWriteItems(_ context.Context, in *dynamodb.TransactWriteItemsInput, _ ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	s.Txs = append(s.Txs, in)
	var err error
	if len(s.Errs) > 0 {
		err, s.Errs = s.Errs[0], s.Errs[1:]
	}
	return &dynamodb.TransactWriteItemsOutput{}, err
}
