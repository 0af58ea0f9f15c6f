package dynamo

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/conclave-ai/conclave/shared/platform/idempotency"
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
		PK: TeamPK(teamID), SK: idemSK(rec.Key), Type: "idempotency", Key: rec.Key, RequestHash: rec.RequestHash,
		State: rec.State, StatusCode: rec.StatusCode, Body: rec.Body, ExpiresAt: TTL(expires),
	}
}

func (it idemItem) toRecord() *idempotency.Record {
	return &idempotency.Record{Key: it.Key, RequestHash: it.RequestHash, State: it.State, StatusCode: it.StatusCode, Body: it.Body}
}

// Begin implements idempotency.Store. The claim is a conditional put that
// also succeeds over an expired record (DynamoDB's TTL deletes lazily); a
// claim that fails returns the record it found (ALL_OLD), so replaying
// needs no second read.
func (s *Store) Begin(ctx context.Context, teamID, k, requestHash string, now, until time.Time) (*idempotency.Record, error) {
	claim := idempotency.Record{Key: k, RequestHash: requestHash, State: idempotency.StatePending}
	item, err := Marshal(toIdemItem(teamID, claim, until))
	if err != nil {
		return nil, Internal(err, "marshal")
	}
	e, err := Build(nil, Name(AttrPK).AttributeNotExists().Or(Name("expires_at").LessThan(Value(TTL(now)))))
	if err != nil {
		return nil, Internal(err, "expression")
	}
	_, err = s.DB.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: &s.Table, Item: item, ConditionExpression: e.Condition(),
		ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err == nil {
		return nil, nil
	}
	old, failed := ConditionFailed(err)
	if !failed {
		return nil, Internal(err, "PutItem")
	}
	if old == nil { // released as it failed: report in progress
		return &claim, nil
	}
	var it idemItem
	if err := Unmarshal(old, &it); err != nil {
		return nil, Internal(err, "unmarshal")
	}
	return it.toRecord(), nil
}

// Complete implements idempotency.Store.
func (s *Store) Complete(ctx context.Context, teamID string, rec idempotency.Record, now time.Time) error {
	rec.State = idempotency.StateDone
	item, err := Marshal(toIdemItem(teamID, rec, now.Add(idempotency.TTL)))
	if err != nil {
		return Internal(err, "marshal")
	}
	if _, err := s.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: &s.Table, Item: item}); err != nil {
		return Internal(err, "PutItem")
	}
	return nil
}

// Abandon implements idempotency.Store.
func (s *Store) Abandon(ctx context.Context, teamID, k string) error {
	e, err := Build(nil, Name("state").Equal(Value(idempotency.StatePending)))
	if err != nil {
		return Internal(err, "expression")
	}
	_, err = s.DB.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: &s.Table, Key: Key(TeamPK(teamID), idemSK(k)), ConditionExpression: e.Condition(),
		ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
	})
	if _, lost := ConditionFailed(err); err != nil && !lost {
		return Internal(err, "DeleteItem")
	}
	return nil
}

// RoleIdemRef is the role of an idempotency reference in a transaction.
const RoleIdemRef = "idempotency_ref"

// idemRefItem points from a request's Idempotency-Key to the item its
// create stored, written in the create's own transaction (IdemRef): a
// request sent again after its answer was lost finds the item instead of
// creating a second one. Kept as long as the key (idempotency.TTL).
type idemRefItem struct {
	PK     string `dynamodbav:"pk"`
	SK     string `dynamodbav:"sk"`
	Type   string `dynamodbav:"type"`
	ItemID string `dynamodbav:"item_id"`
	// Items are the ids of every item a create of several stored (a
	// chat turn's messages, ItemID the first).
	Items     []string `dynamodbav:"items,omitempty"`
	ExpiresAt int64    `dynamodbav:"expires_at"`
}

// IdemRef is the reference from key (a create of kind, "amsg", …) to id.
func IdemRef(teamID, kind, key, id string, now time.Time) any {
	return idemRefItem{PK: TeamPK(teamID), SK: idemRefSK(kind, key), Type: RoleIdemRef, ItemID: id, ExpiresAt: TTL(now.Add(idempotency.TTL))}
}

// IdemRefItems is the reference from key to the items a create of
// several stored, ids[0] first (IdemRef's item id).
func IdemRefItems(teamID, kind, key string, ids []string, now time.Time) any {
	return idemRefItem{PK: TeamPK(teamID), SK: idemRefSK(kind, key), Type: RoleIdemRef, ItemID: ids[0], Items: ids, ExpiresAt: TTL(now.Add(idempotency.TTL))}
}

func idemRefSK(kind, key string) string { return "IDEMREF#" + kind + "#" + key }

// RefItemsOf reports whether err is a transaction canceled because its
// idempotency reference exists, and the ids of the items it names.
func RefItemsOf(err error) ([]string, bool) {
	c, ok := AsCanceled(err)
	if !ok || c.Role != RoleIdemRef || c.Old == nil {
		return nil, false
	}
	var it idemRefItem
	if Unmarshal(c.Old, &it) != nil || it.ItemID == "" {
		return nil, false
	}
	if len(it.Items) == 0 {
		return []string{it.ItemID}, true
	}
	return it.Items, true
}

// ReadRef returns the ids of the items the create of kind under key
// stored (nil, nil when none did), read strongly: the reference is written
// with them.
func (s *Store) ReadRef(ctx context.Context, teamID, kind, key string) ([]string, error) {
	m, err := s.GetItem(ctx, Key(TeamPK(teamID), idemRefSK(kind, key)))
	if err != nil || m == nil {
		return nil, err
	}
	var it idemRefItem
	if err := Unmarshal(m, &it); err != nil {
		return nil, Internal(err, "unmarshal")
	}
	if len(it.Items) == 0 {
		return []string{it.ItemID}, nil
	}
	return it.Items, nil
}

// RefOf reports whether err is a transaction canceled because its
// idempotency reference exists, and the id of the item it names.
func RefOf(err error) (string, bool) {
	c, ok := AsCanceled(err)
	if !ok || c.Role != RoleIdemRef || c.Old == nil {
		return "", false
	}
	var it idemRefItem
	if Unmarshal(c.Old, &it) != nil || it.ItemID == "" {
		return "", false
	}
	return it.ItemID, true
}

// Keyed adds to t the reference from the request's Idempotency-Key to id,
// when the request is for a create of kind (idempotency.KeyFor). Called
// before the create's other writes, so a repeat is refused by its
// reference (Replayed) whatever else it meets.
func (t *Txn) Keyed(ctx context.Context, teamID, kind, id string, now time.Time) {
	if k := idempotency.KeyFor(ctx, kind); k != "" {
		t.Create(RoleIdemRef, IdemRef(teamID, kind, k, id, now))
	}
}

// Replayed returns idempotency.Replayed for a transaction canceled
// because its reference exists (Keyed), else err unchanged.
func Replayed(err error, kind string) error {
	if id, ok := RefOf(err); ok {
		return idempotency.Replayed{Kind: kind, ID: id}
	}
	return err
}

// PutNewKeyed is PutNew for a create of kind: with the request's
// Idempotency-Key, the item and the reference to it in one transaction
// (idempotency.Replayed when the reference exists).
func (s *Store) PutNewKeyed(ctx context.Context, teamID, kind, id string, item any) (created bool, err error) {
	if idempotency.KeyFor(ctx, kind) == "" {
		return s.PutNew(ctx, item)
	}
	tx := s.Txn()
	tx.Keyed(ctx, teamID, kind, id, time.Now())
	tx.Create("item", item)
	err = Replayed(tx.Run(ctx), kind)
	if c, ok := AsCanceled(err); ok && c.Role == "item" {
		return false, nil
	}
	return err == nil, err
}
