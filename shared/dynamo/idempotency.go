package dynamo

import (
	"context"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/conclave-ai/conclave/shared/idempotency"
)

type idemItem struct {
	PK          string `dynamodbav:"pk"`
	SK          string `dynamodbav:"sk"`
	Type        string `dynamodbav:"type"`
	Key         string `dynamodbav:"key"`
	RequestHash string `dynamodbav:"request_hash"`
	State       string `dynamodbav:"state"`
	StatusCode  int    `dynamodbav:"status_code,omitempty"`
	Body        string `dynamodbav:"body,omitempty"`
	ExpiresAt   int64  `dynamodbav:"expires_at"`
}

// Begin implements idempotency.Store. The claim is a conditional put that
// also succeeds over an expired record (DynamoDB's TTL deletes lazily).
func (s *Store) Begin(ctx context.Context, teamID, k, requestHash string, now time.Time) (*idempotency.Record, error) {
	item, err := marshal(idemItem{
		PK: teamPK(teamID), SK: idemSK(k), Type: "idempotency", Key: k, RequestHash: requestHash,
		State: idempotency.StatePending, ExpiresAt: now.Add(idempotency.TTL).Unix(),
	})
	if err != nil {
		return nil, internal(err, "marshal")
	}
	_, err = s.DB.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: &s.Table, Item: item,
		ConditionExpression:       aws.String("attribute_not_exists(pk) OR expires_at < :now"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":now": &types.AttributeValueMemberN{Value: strconv.FormatInt(now.Unix(), 10)}},
	})
	if err == nil {
		return nil, nil
	}
	if !conditionFailed(err) {
		return nil, internal(err, "PutItem")
	}
	out, err := s.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.Table, Key: key(teamPK(teamID), idemSK(k)), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, internal(err, "GetItem")
	}
	if out.Item == nil { // released between the two calls: report in progress
		return &idempotency.Record{Key: k, RequestHash: requestHash, State: idempotency.StatePending}, nil
	}
	var it idemItem
	if err := unmarshal(out.Item, &it); err != nil {
		return nil, internal(err, "unmarshal")
	}
	return &idempotency.Record{Key: it.Key, RequestHash: it.RequestHash, State: it.State, StatusCode: it.StatusCode, Body: it.Body}, nil
}

// Complete implements idempotency.Store.
func (s *Store) Complete(ctx context.Context, teamID string, rec idempotency.Record, now time.Time) error {
	item, err := marshal(idemItem{
		PK: teamPK(teamID), SK: idemSK(rec.Key), Type: "idempotency", Key: rec.Key, RequestHash: rec.RequestHash,
		State: idempotency.StateDone, StatusCode: rec.StatusCode, Body: rec.Body, ExpiresAt: now.Add(idempotency.TTL).Unix(),
	})
	if err != nil {
		return internal(err, "marshal")
	}
	if _, err := s.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: &s.Table, Item: item}); err != nil {
		return internal(err, "PutItem")
	}
	return nil
}

// Abandon implements idempotency.Store.
func (s *Store) Abandon(ctx context.Context, teamID, k string) error {
	_, err := s.DB.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: &s.Table, Key: key(teamPK(teamID), idemSK(k)),
		ConditionExpression:       aws.String("#st = :pending"),
		ExpressionAttributeNames:  map[string]string{"#st": "state"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pending": str(idempotency.StatePending)},
	})
	if err != nil && !conditionFailed(err) {
		return internal(err, "DeleteItem")
	}
	return nil
}
