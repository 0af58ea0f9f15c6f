package dynamo

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/conclave-ai/conclave/shared/idempotency"
)

// idemItem is the record of an idempotent POST: pending while the first
// request runs, then its response.
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

func toIdemItem(teamID string, rec idempotency.Record, expires time.Time) idemItem {
	return idemItem{
		PK: teamPK(teamID), SK: idemSK(rec.Key), Type: "idempotency", Key: rec.Key, RequestHash: rec.RequestHash,
		State: rec.State, StatusCode: rec.StatusCode, Body: rec.Body, ExpiresAt: ttl(expires),
	}
}

func (it idemItem) toRecord() *idempotency.Record {
	return &idempotency.Record{Key: it.Key, RequestHash: it.RequestHash, State: it.State, StatusCode: it.StatusCode, Body: it.Body}
}

// Begin implements idempotency.Store. The claim is a conditional put that
// also succeeds over an expired record (DynamoDB's TTL deletes lazily); a
// claim that fails returns the record it found (ALL_OLD), so replaying
// needs no second read.
func (s *Store) Begin(ctx context.Context, teamID, k, requestHash string, now time.Time) (*idempotency.Record, error) {
	claim := idempotency.Record{Key: k, RequestHash: requestHash, State: idempotency.StatePending}
	item, err := marshal(toIdemItem(teamID, claim, now.Add(idempotency.TTL)))
	if err != nil {
		return nil, internal(err, "marshal")
	}
	e, err := build(nil, name(attrPK).AttributeNotExists().Or(name("expires_at").LessThan(value(ttl(now)))))
	if err != nil {
		return nil, internal(err, "expression")
	}
	_, err = s.DB.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: &s.Table, Item: item, ConditionExpression: e.Condition(),
		ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err == nil {
		return nil, nil
	}
	old, failed := conditionFailed(err)
	if !failed {
		return nil, internal(err, "PutItem")
	}
	if old == nil { // released as it failed: report in progress
		return &claim, nil
	}
	var it idemItem
	if err := unmarshal(old, &it); err != nil {
		return nil, internal(err, "unmarshal")
	}
	return it.toRecord(), nil
}

// Complete implements idempotency.Store.
func (s *Store) Complete(ctx context.Context, teamID string, rec idempotency.Record, now time.Time) error {
	rec.State = idempotency.StateDone
	item, err := marshal(toIdemItem(teamID, rec, now.Add(idempotency.TTL)))
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
	e, err := build(nil, name("state").Equal(value(idempotency.StatePending)))
	if err != nil {
		return internal(err, "expression")
	}
	_, err = s.DB.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: &s.Table, Key: key(teamPK(teamID), idemSK(k)), ConditionExpression: e.Condition(),
		ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
	})
	if _, lost := conditionFailed(err); err != nil && !lost {
		return internal(err, "DeleteItem")
	}
	return nil
}
