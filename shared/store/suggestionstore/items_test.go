package suggestionstore

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/routing/suggestions"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/store/dynamotest"
)

func TestSuggestionItemsKeepEveryStoredField(t *testing.T) {
	sg := dynamotest.Filled[suggestions.Suggestion](t)
	got := dynamotest.RoundTrip(t, toSuggestionItem(sg)).toSuggestion(sg.TeamID)
	assert.Equal(t, sg, got)

	sg.RatedLow = false
	got = dynamotest.RoundTrip(t, toSuggestionItem(sg)).toSuggestion(sg.TeamID)
	assert.Equal(t, sg, got)
}

func TestSuggestionItemKeys(t *testing.T) {
	created := time.Date(2026, 1, 2, 3, 4, 5, 600_000_000, time.UTC)
	it := toSuggestionItem(suggestions.Suggestion{ID: "msg_1", TeamID: "t1", Agent: "luke", Skill: "work", Content: "hello",
		CreatedAt: created, ExpiresAt: created.Add(suggestions.Retention)})
	assert.Equal(t, []string{"TEAM#t1", "SUGG#luke#msg_1", "suggestion"}, []string{it.PK, it.SK, it.Type})
	assert.Equal(t, "SUGG#luke#", dynamo.SuggestionPrefix("luke"))
	assert.Equal(t, "SUGGHEAD#luke", dynamo.SuggestionHeadSK("luke"))
	assert.False(t, dynamo.SuggestionHeadSK("luke") >= dynamo.SuggestionPrefix("luke") &&
		dynamo.SuggestionHeadSK("luke") <= dynamo.SuggestionPrefix("luke")+dynamo.PrefixEnd, "the head is none of the agent's suggestions")
	assert.False(t, dynamo.SuggestionSK("luke-2", "msg_1") <= dynamo.SuggestionPrefix("luke")+dynamo.PrefixEnd &&
		dynamo.SuggestionSK("luke-2", "msg_1") >= dynamo.SuggestionPrefix("luke"), "another agent's are not either")

	m := dynamotest.MustItem(t, it)
	assert.Equal(t, &types.AttributeValueMemberN{Value: "1769915045"}, m["expires_at"], "2026-02-01T03:04:05Z, epoch seconds")
	assert.Equal(t, created.Add(suggestions.Retention), dynamotest.RoundTrip(t, it).Expires, "the suggestion's own expiry, exactly")
	assert.NotContains(t, m, "dismissed_at", "absent until dismissed")
	assert.NotContains(t, m, "team_id", "the team is the key's")

	now := time.Unix(1769915045, 0)
	assert.False(t, it.live(now), "expired at its second")
	assert.True(t, it.live(now.Add(-time.Millisecond)))
}

// suggestDB answers an add's reads with a head and the agent's items, and
// its transactions with errs in turn (nil after them).
type suggestDB struct {
	dynamo.API
	head    map[string]types.AttributeValue
	items   []map[string]types.AttributeValue
	errs    []error
	txs     []*dynamodb.TransactWriteItemsInput
	queries []*dynamodb.QueryInput
}

func (d *suggestDB) GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return &dynamodb.GetItemOutput{Item: d.head}, nil
}

func (d *suggestDB) Query(_ context.Context, in *dynamodb.QueryInput, _ ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	d.queries = append(d.queries, in)
	return &dynamodb.QueryOutput{Items: d.items}, nil
}

func (d *suggestDB) TransactWriteItems(_ context.Context, in *dynamodb.TransactWriteItemsInput, _ ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	d.txs = append(d.txs, in)
	var err error
	if len(d.errs) > 0 {
		err, d.errs = d.errs[0], d.errs[1:]
	}
	return &dynamodb.TransactWriteItemsOutput{}, err
}

// suggestion is one of luke's, created at, for a day.
func suggestion(id string, at time.Time) suggestions.Suggestion {
	return suggestions.Suggestion{ID: id, TeamID: "t1", Agent: "luke", Skill: "work", Content: "c " + id, CreatedAt: at, ExpiresAt: at.Add(24 * time.Hour)}
}

func stored(t *testing.T, sg suggestions.Suggestion, dismissed bool) map[string]types.AttributeValue {
	it := toSuggestionItem(sg)
	if dismissed {
		at := sg.CreatedAt
		it.DismissedAt = &at
	}
	return dynamotest.MustItem(t, it)
}

// An add at the cap writes, in one transaction, the suggestion (its key
// free or expired), the head on the version read, the delete of the
// oldest live one by created_at (a dismissed one holds its place) and
// the deletes of the expired ones read (no condition: the TTL may be
// first).
func TestAddSuggestionPushesOutTheOldest(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	db := &suggestDB{
		head: dynamotest.MustItem(t, headItem{PK: "TEAM#t1", SK: "SUGGHEAD#luke", Version: 7, ExpiresAt: dynamo.TTL(now.Add(48 * time.Hour))}),
		items: []map[string]types.AttributeValue{
			stored(t, suggestion("msg_1", now.Add(-time.Hour)), false),               // id first, created second
			stored(t, suggestion("msg_2", now.Add(-2*time.Hour)), true),              // the oldest: dismissed, pushed out
			stored(t, suggestion("msg_3", now.Add(-time.Minute)), false),             // the newest
			stored(t, suggestion("msg_0", now.Add(-25*time.Hour)), false),            // expired
			stored(t, suggestion("msg_9", now.Add(-30*time.Hour)), false),            // expired, the new one's id
			stored(t, suggestion("msg_x", now.Add(-24*time.Hour-time.Second)), true), // expired
		},
	}
	s := New(db, "tbl")
	added, err := s.AddSuggestion(ctx, suggestion("msg_9", now), 3)
	require.NoError(t, err)
	assert.True(t, added)
	require.Len(t, db.queries, 1)
	assert.True(t, aws.ToBool(db.queries[0].ConsistentRead), "an add reads every add before it")
	require.Len(t, db.txs, 1)
	tx := db.txs[0]
	assert.Equal(t, []string{"SUGG#luke#msg_9", "SUGGHEAD#luke", "SUGG#luke#msg_2", "SUGG#luke#msg_0", "SUGG#luke#msg_x"}, dynamotest.TxKeys(tx),
		"the expired item of the id is taken, not deleted")

	put := tx.TransactItems[0].Put
	assert.Contains(t, aws.ToString(put.ConditionExpression), "attribute_not_exists")
	assert.Equal(t, []string{"N:" + itoa(dynamo.TTL(now))}, valuesOf(put.ExpressionAttributeValues), "or expired by now")
	up := tx.TransactItems[1].Update
	assert.Contains(t, valuesOf(up.ExpressionAttributeValues), "N:7", "conditioned on the version read")
	assert.Contains(t, valuesOf(up.ExpressionAttributeValues), "N:8", "moved on")
	assert.Contains(t, valuesOf(up.ExpressionAttributeValues), "N:"+itoa(dynamo.TTL(now.Add(48*time.Hour))), "the head expires with its latest")
	assert.NotNil(t, tx.TransactItems[2].Delete.ConditionExpression, "the pushed-out one must exist")
	assert.Nil(t, tx.TransactItems[3].Delete.ConditionExpression)
	assert.Nil(t, tx.TransactItems[4].Delete.ConditionExpression)

	// Below the cap: nothing live is deleted; with no head, the head
	// must still be absent.
	db = &suggestDB{items: db.items}
	added, err = New(db, "tbl").AddSuggestion(ctx, suggestion("msg_9", now), 4)
	require.NoError(t, err)
	assert.True(t, added)
	assert.Equal(t, []string{"SUGG#luke#msg_9", "SUGGHEAD#luke", "SUGG#luke#msg_0", "SUGG#luke#msg_x"}, dynamotest.TxKeys(db.txs[0]))
	up = db.txs[0].TransactItems[1].Update
	assert.Equal(t, "attribute_not_exists (#0)", aws.ToString(up.ConditionExpression))
	assert.Contains(t, valuesOf(up.ExpressionAttributeValues), "N:1")
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// valuesOf lists an expression's values as "N:<n>" or "S:<s>".
func valuesOf(vs map[string]types.AttributeValue) []string {
	var out []string
	for _, v := range vs {
		switch x := v.(type) {
		case *types.AttributeValueMemberN:
			out = append(out, "N:"+x.Value)
		case *types.AttributeValueMemberS:
			out = append(out, "S:"+x.Value)
		}
	}
	return out
}

// A live suggestion of the id (dismissed too) is not added again, and
// nothing is written; a cancellation on the suggestion's own condition
// is the same answer; one on the head is tried again from the reads, up
// to addAttempts, then ECONFLICT to retry.
func TestAddSuggestionOnceAndRetries(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	sg := suggestion("msg_5", now)
	for _, dismissed := range []bool{false, true} {
		db := &suggestDB{items: []map[string]types.AttributeValue{stored(t, suggestion("msg_5", now.Add(-time.Hour)), dismissed)}}
		added, err := New(db, "tbl").AddSuggestion(ctx, sg, 3)
		require.NoError(t, err)
		assert.False(t, added)
		assert.Empty(t, db.txs, "nothing written")
	}

	db := &suggestDB{errs: []error{dynamotest.CanceledAt(2, 0, nil)}}
	added, err := New(db, "tbl").AddSuggestion(ctx, sg, 3)
	require.NoError(t, err)
	assert.False(t, added, "stored meanwhile")
	assert.Len(t, db.txs, 1)

	db = &suggestDB{errs: []error{dynamotest.CanceledAt(2, 1, nil), dynamotest.Canceled("None", "TransactionConflict")}}
	added, err = New(db, "tbl").AddSuggestion(ctx, sg, 3)
	require.NoError(t, err)
	assert.True(t, added, "the third round writes")
	assert.Len(t, db.txs, 3)
	assert.Len(t, db.queries, 3, "each round reads again")

	var errs []error
	for range addAttempts {
		errs = append(errs, dynamotest.CanceledAt(2, 1, nil))
	}
	db = &suggestDB{errs: errs}
	added, err = New(db, "tbl").AddSuggestion(ctx, sg, 3)
	assert.False(t, added)
	assert.Equal(t, apperr.ECONFLICT, apperr.Code(err))
	assert.Len(t, db.txs, addAttempts)

	_, err = New(&suggestDB{}, "tbl").AddSuggestion(ctx, sg, 0)
	assert.Equal(t, apperr.EINVALID, apperr.Code(err))
}
