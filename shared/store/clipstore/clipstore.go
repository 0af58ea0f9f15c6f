// Package clipstore keeps the tool packs' clipboard (toolpacks.Clip) on
// the single table: one item per value, under its team, expiring with
// DynamoDB's TTL a day after its last store (toolpacks.ClipTTL).
package clipstore

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/tools/toolpacks"
)

// Store is the clipboard half of the single-table store.
type Store struct{ *dynamo.Store }

var _ toolpacks.ClipboardStore = (*Store)(nil)

// New returns the store on table.
func New(db dynamo.API, table string) *Store { return &Store{dynamo.New(db, table)} }

// clipItem is a clipboard value as stored.
type clipItem struct {
	PK        string    `dynamodbav:"pk"`
	SK        string    `dynamodbav:"sk"`
	Scope     string    `dynamodbav:"scope"`
	Key       string    `dynamodbav:"clip_key"`
	Value     string    `dynamodbav:"value"`
	StoredBy  string    `dynamodbav:"stored_by"`
	StoredAt  time.Time `dynamodbav:"stored_at"`
	ExpiresAt int64     `dynamodbav:"expires_at"`
}

// PutClip implements toolpacks.ClipboardStore: one unconditional
// PutItem (the last store of a key wins).
func (s *Store) PutClip(ctx context.Context, teamID string, c toolpacks.Clip) error {
	m, err := dynamo.Marshal(clipItem{PK: dynamo.TeamPK(teamID), SK: dynamo.ClipSK(c.Scope, c.Key), Scope: c.Scope, Key: c.Key,
		Value: c.Value, StoredBy: c.StoredBy, StoredAt: c.StoredAt.UTC(), ExpiresAt: dynamo.TTL(c.ExpiresAt)})
	if err != nil {
		return dynamo.Internal(err, "marshal")
	}
	if _, err := s.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: &s.Table, Item: m}); err != nil {
		return dynamo.Internal(err, "PutItem")
	}
	return nil
}

// GetClip implements toolpacks.ClipboardStore: one consistent GetItem;
// a value expired before now is not found (DynamoDB's TTL deletes it
// later, within days).
func (s *Store) GetClip(ctx context.Context, teamID, scope, key string, now time.Time) (toolpacks.Clip, error) {
	c, err := dynamo.Get(ctx, s, dynamo.Key(dynamo.TeamPK(teamID), dynamo.ClipSK(scope, key)), "clipboard key", key, fromItem)
	if err != nil {
		return toolpacks.Clip{}, err
	}
	if !now.Before(c.ExpiresAt) {
		return toolpacks.Clip{}, apperr.NotFound("clipboard key", key)
	}
	return c, nil
}

func fromItem(m map[string]types.AttributeValue) (toolpacks.Clip, error) {
	var it clipItem
	if err := dynamo.Unmarshal(m, &it); err != nil {
		return toolpacks.Clip{}, err
	}
	return toolpacks.Clip{Scope: it.Scope, Key: it.Key, Value: it.Value, StoredBy: it.StoredBy, StoredAt: it.StoredAt, ExpiresAt: time.Unix(it.ExpiresAt, 0).UTC()}, nil
}
