package dynamo

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/store/dynamotest"
)

// batchDB answers BatchGetItem from items by sort key, leaving the first
// unprocessed keys of each call unprocessed as long as leave says.
type batchDB struct {
	dynamotest.FakeDB
	items map[string]map[string]types.AttributeValue
	leave []int // per call: how many of the keys asked for are left unprocessed
	err   error
	calls []*dynamodb.BatchGetItemInput
}

func (b *batchDB) BatchGetItem(_ context.Context, in *dynamodb.BatchGetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	b.calls = append(b.calls, in)
	if b.err != nil {
		return nil, b.err
	}
	keys := in.RequestItems["tbl"].Keys
	left := 0
	if n := len(b.calls) - 1; n < len(b.leave) {
		left = min(b.leave[n], len(keys))
	}
	out := &dynamodb.BatchGetItemOutput{Responses: map[string][]map[string]types.AttributeValue{}}
	for _, k := range keys[left:] {
		if it, ok := b.items[k["sk"].(*types.AttributeValueMemberS).Value]; ok {
			out.Responses["tbl"] = append(out.Responses["tbl"], it)
		}
	}
	if left > 0 {
		out.UnprocessedKeys = map[string]types.KeysAndAttributes{"tbl": {Keys: keys[:left]}}
	}
	return out, nil
}

func skOf(m map[string]types.AttributeValue) string {
	return m["sk"].(*types.AttributeValueMemberS).Value
}

// BatchGet reads every key once, consistently, asks again for the keys
// left unprocessed, skips the keys without an item, and gives up (an
// internal error) when keys stay unprocessed or the call fails.
func TestBatchGetReadsEveryKeyOnce(t *testing.T) {
	ctx := context.Background()
	db := &batchDB{items: map[string]map[string]types.AttributeValue{}, leave: []int{2, 1}}
	var keys []map[string]types.AttributeValue
	for i := range 5 {
		sk := fmt.Sprintf("CONV#c%d", i)
		keys = append(keys, Key("TEAM#t1", sk))
		if i != 3 {
			db.items[sk] = Key("TEAM#t1", sk)
		}
	}
	got, err := New(db, "tbl").BatchGet(ctx, keys)
	require.NoError(t, err)
	var sks []string
	for _, m := range got {
		sks = append(sks, skOf(m))
	}
	assert.ElementsMatch(t, []string{"CONV#c0", "CONV#c1", "CONV#c2", "CONV#c4"}, sks, "each item once; c3 has none")
	require.Len(t, db.calls, 3, "the first call, then the 2 unprocessed keys, then the 1 left")
	assert.Len(t, db.calls[1].RequestItems["tbl"].Keys, 2)
	assert.Len(t, db.calls[2].RequestItems["tbl"].Keys, 1)
	for _, c := range db.calls {
		assert.True(t, *c.RequestItems["tbl"].ConsistentRead)
	}

	none, err := New(db, "tbl").BatchGet(ctx, nil)
	require.NoError(t, err)
	assert.Empty(t, none)
	assert.Len(t, db.calls, 3, "no keys: no call")

	stuck := &batchDB{items: db.items, leave: []int{5, 5, 5, 5, 5}}
	_, err = New(stuck, "tbl").BatchGet(ctx, keys)
	assert.True(t, apperr.Is(err, apperr.EINTERNAL), "%v", err)
	assert.Len(t, stuck.calls, batchGetAttempts)

	failing := &batchDB{err: errors.New("boom")}
	_, err = New(failing, "tbl").BatchGet(ctx, keys)
	assert.True(t, apperr.Is(err, apperr.EINTERNAL))
	assert.Len(t, failing.calls, 1, "a failed call is not asked again (the SDK retried it)")

	_, err = New(failing, "tbl").BatchGet(ctx, make([]map[string]types.AttributeValue, MaxBatchGet+1))
	assert.True(t, apperr.Is(err, apperr.EINTERNAL), "more than one call's keys")
}

// fillDB answers each Query with the next of pages.
type fillDB struct {
	dynamotest.FakeDB
	pages []*dynamodb.QueryOutput
	ins   []dynamodb.QueryInput
}

func (f *fillDB) Query(_ context.Context, in *dynamodb.QueryInput, _ ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	f.ins = append(f.ins, *in)
	out := f.pages[0]
	f.pages = f.pages[1:]
	return out, nil
}

func items(sks ...string) []map[string]types.AttributeValue {
	var out []map[string]types.AttributeValue
	for _, sk := range sks {
		out = append(out, Key("P", sk))
	}
	return out
}

// QueryFill queries on while the filter left the page short, asking only
// for the items missing (so it never reads past the page), and returns
// the token of where it stopped; it stops at the limit, at the end of the
// query, or after FillQueries queries.
func TestQueryFillRefillsAShortPage(t *testing.T) {
	ctx := context.Background()
	lek := func(sk string) map[string]types.AttributeValue { return Key("P", sk) }
	db := &fillDB{pages: []*dynamodb.QueryOutput{
		{Items: items("a"), LastEvaluatedKey: lek("c")}, // 3 evaluated, 2 filtered out
		{Items: items("d"), LastEvaluatedKey: lek("e")}, // 2 asked for, 1 kept
		{Items: items("f"), LastEvaluatedKey: lek("f")}, // the last one missing
	}}
	s := New(db, "tbl")
	var got []string
	next, err := s.QueryFill(ctx, &dynamodb.QueryInput{}, "scope", paging.Page{Limit: 3}, func(m map[string]types.AttributeValue) error {
		got = append(got, skOf(m))
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "d", "f"}, got)
	require.Len(t, db.ins, 3)
	assert.Equal(t, []int32{3, 2, 1}, []int32{*db.ins[0].Limit, *db.ins[1].Limit, *db.ins[2].Limit}, "only what is missing")
	assert.Nil(t, db.ins[0].ExclusiveStartKey)
	assert.Equal(t, lek("c"), db.ins[1].ExclusiveStartKey)
	assert.Equal(t, lek("e"), db.ins[2].ExclusiveStartKey)
	start, err := decodeToken("scope", next)
	require.NoError(t, err)
	assert.Equal(t, lek("f"), start, "the next page starts after the last item read")

	// The token continues; the end of the query ends the page.
	db.pages = []*dynamodb.QueryOutput{{Items: items("g")}}
	got = nil
	next, err = s.QueryFill(ctx, &dynamodb.QueryInput{}, "scope", paging.Page{Limit: 3, Token: next}, func(m map[string]types.AttributeValue) error {
		got = append(got, skOf(m))
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, []string{"g"}, got)
	assert.Empty(t, next)
	assert.Equal(t, lek("f"), db.ins[3].ExclusiveStartKey)

	// Every page filtered out: FillQueries queries, then a short page
	// with its token.
	db.pages, db.ins = nil, nil
	for i := range FillQueries + 1 {
		db.pages = append(db.pages, &dynamodb.QueryOutput{LastEvaluatedKey: lek(fmt.Sprint(i))})
	}
	next, err = s.QueryFill(ctx, &dynamodb.QueryInput{}, "scope", paging.Page{Limit: 2}, func(map[string]types.AttributeValue) error { return nil })
	require.NoError(t, err)
	assert.Len(t, db.ins, FillQueries)
	assert.NotEmpty(t, next)

	_, err = s.QueryFill(ctx, &dynamodb.QueryInput{}, "other", paging.Page{Limit: 2, Token: next}, nil)
	assert.True(t, apperr.Is(err, apperr.EINVALID), "a token of another listing")
}
