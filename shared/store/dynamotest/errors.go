package dynamotest

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
)

// FailingDB returns canned errors: it exists only to unit-test how DynamoDB
// errors map to domain errors. Behaviour is tested against the local cloud.
type FailingDB struct {
	*dynamodb.Client // nil: a method the fake does not answer panics
	Err              error
}

// Canceled is a canceled transaction whose writes answered codes, in order.
func Canceled(codes ...string) error {
	var rs []types.CancellationReason
	for _, c := range codes {
		rs = append(rs, types.CancellationReason{Code: aws.String(c)})
	}
	return &types.TransactionCanceledException{Message: aws.String("canceled"), CancellationReasons: rs}
}

// FakeDB records what the store sends and answers with canned results; like
// FailingDB it exists only for the error mapping, which needs no network.
type FakeDB struct {
	*dynamodb.Client // nil: a method the fake does not answer panics
	TxErr            error
	PutErr           error
	Gets             int
	LastTx           *dynamodb.TransactWriteItemsInput
	LastPut          *dynamodb.PutItemInput
}

// CanceledAt fails the condition of write i of n (with old as the item it
// returns), every other write "None".
func CanceledAt(n, i int, old map[string]types.AttributeValue) error {
	rs := make([]types.CancellationReason, n)
	for j := range rs {
		rs[j] = types.CancellationReason{Code: aws.String("None")}
	}
	rs[i] = types.CancellationReason{Code: aws.String("ConditionalCheckFailed"), Item: old}
	return &types.TransactionCanceledException{Message: aws.String("canceled"), CancellationReasons: rs}
}

// MustItem is v marshalled as a stored item.
func MustItem(t *testing.T, v any) map[string]types.AttributeValue {
	t.Helper()
	m, err := attributevalue.MarshalMap(v)
	require.NoError(t, err)
	return m
}

// TransactWriteItems answers Err.
func (f FailingDB) TransactWriteItems(context.Context, *dynamodb.TransactWriteItemsInput, ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	return nil, f.Err
}

// PutItem answers Err.
func (f FailingDB) PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return nil, f.Err
}

// GetItem finds nothing.
func (f FailingDB) GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return &dynamodb.GetItemOutput{}, nil
}

// TransactWriteItems keeps the request (LastTx) and answers TxErr.
func (f *FakeDB) TransactWriteItems(_ context.Context, in *dynamodb.TransactWriteItemsInput, _ ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	f.LastTx = in
	return &dynamodb.TransactWriteItemsOutput{}, f.TxErr
}

// PutItem keeps the request (LastPut) and answers PutErr.
func (f *FakeDB) PutItem(_ context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	f.LastPut = in
	return &dynamodb.PutItemOutput{}, f.PutErr
}

// GetItem counts the read (Gets) and finds nothing.
func (f *FakeDB) GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	f.Gets++
	return &dynamodb.GetItemOutput{}, nil
}

// DeleteItem succeeds.
func (f *FakeDB) DeleteItem(context.Context, *dynamodb.DeleteItemInput, ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	return &dynamodb.DeleteItemOutput{}, nil
}

// UpdateItem succeeds.
func (f *FakeDB) UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	return &dynamodb.UpdateItemOutput{}, nil
}
