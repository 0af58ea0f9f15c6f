// Package dynamo implements the domain stores on the single DynamoDB table.
// Storage items are separate from domain types (toItem/fromItem) and every
// invariant is a condition on the write, so concurrent requests cannot break
// one: losing a race comes back as an apperr.ECONFLICT (or ELIMIT) error.
package dynamo

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/conclave-ai/conclave/shared/activity"
	"github.com/conclave-ai/conclave/shared/agents"
	"github.com/conclave-ai/conclave/shared/apperr"
	"github.com/conclave-ai/conclave/shared/idempotency"
	"github.com/conclave-ai/conclave/shared/teams"
)

// API is the part of the DynamoDB client the store uses; tests of the error
// mapping substitute it, everything else uses the real client.
type API interface {
	GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(context.Context, *dynamodb.DeleteItemInput, ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	Query(context.Context, *dynamodb.QueryInput, ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	TransactWriteItems(context.Context, *dynamodb.TransactWriteItemsInput, ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
	DescribeTable(context.Context, *dynamodb.DescribeTableInput, ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
}

// Store is the single-table store.
type Store struct {
	DB    API
	Table string
}

// New returns a store on table.
func New(db API, table string) *Store { return &Store{DB: db, Table: table} }

var (
	_ teams.Store       = (*Store)(nil)
	_ agents.Store      = (*Store)(nil)
	_ idempotency.Store = (*Store)(nil)
	_ activity.Store    = (*Store)(nil)
)

// Ping checks that the table exists and is active.
func (s *Store) Ping(ctx context.Context) error {
	out, err := s.DB.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: &s.Table})
	if err != nil {
		return err
	}
	if out.Table.TableStatus != types.TableStatusActive {
		return fmt.Errorf("table status %s", out.Table.TableStatus)
	}
	return nil
}

// internal wraps an infrastructure failure; its detail stays in logs.
func internal(err error, op string) error {
	return apperr.Wrap(apperr.EINTERNAL, err, "dynamodb %s failed", op)
}

// conditionFailed reports whether err is a failed condition on a single write.
func conditionFailed(err error) bool {
	var ccf *types.ConditionalCheckFailedException
	return errors.As(err, &ccf)
}

// cancellationReasons returns the per-item reason codes of a canceled
// transaction ("None", "ConditionalCheckFailed", …), or nil for other errors.
func cancellationReasons(err error) []string {
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		return nil
	}
	out := make([]string, len(tce.CancellationReasons))
	for i, r := range tce.CancellationReasons {
		out[i] = aws.ToString(r.Code)
	}
	return out
}

func str(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

func key(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrPK: str(pk), attrSK: str(sk)}
}

// pageToken is the opaque pagination token: the last evaluated key, bound to
// the partition it was issued for so a token cannot walk another team's data.
type pageToken struct {
	Scope string            `json:"s"`
	Key   map[string]string `json:"k"`
}

func encodeToken(scope string, lek map[string]types.AttributeValue) (string, error) {
	if len(lek) == 0 {
		return "", nil
	}
	t := pageToken{Scope: scope, Key: map[string]string{}}
	for k, v := range lek {
		s, ok := v.(*types.AttributeValueMemberS)
		if !ok {
			return "", fmt.Errorf("non-string key attribute %s", k)
		}
		t.Key[k] = s.Value
	}
	b, err := json.Marshal(t)
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

func decodeToken(scope, token string) (map[string]types.AttributeValue, error) {
	if token == "" {
		return nil, nil
	}
	bad := apperr.Invalid("next_token", "next_token is not valid for this listing")
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return nil, bad
	}
	var t pageToken
	if err := json.Unmarshal(b, &t); err != nil || t.Scope != scope || len(t.Key) == 0 {
		return nil, bad
	}
	out := map[string]types.AttributeValue{}
	for k, v := range t.Key {
		out[k] = str(v)
	}
	return out, nil
}

func marshal(v any) (map[string]types.AttributeValue, error) {
	return attributevalue.MarshalMap(v)
}

func unmarshal(m map[string]types.AttributeValue, v any) error {
	return attributevalue.UnmarshalMap(m, v)
}
