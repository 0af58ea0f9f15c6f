package expertgatestore

import (
	"context"
	"errors"
	"math"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
)

// testClassifier is a classifier of classes × features weights, none
// below the normal half range (so that each is within 2⁻¹¹ read back).
func testClassifier(embedder string, classes, features int, readAt time.Time) *routing.Classifier {
	c := &routing.Classifier{Embedder: embedder, Dim: features - 1, Terms: []string{"pto"}, Agents: "ann:1,bob:2",
		ReadAt: readAt, FittedAt: readAt.Add(time.Minute), Bias: make([]float32, classes),
		Quality: &routing.ClassifierQuality{Folds: 5, Examples: 40, AgentTop1: 0.9, Curve: []routing.CurvePoint{{Threshold: 0.5, Routed: 0.8, Right: 0.75}}}}
	for k := range classes {
		c.Skills = append(c.Skills, routing.ClassifierSkill{Agent: "ann", Skill: "s" + string(rune('a'+k%26))})
		c.Bias[k] = float32(k) / 7
	}
	c.Weights = make([]float32, classes*features)
	for i := range c.Weights {
		c.Weights[i] = float32(math.Copysign(0.001+math.Abs(math.Sin(float64(i)))*4, math.Cos(float64(i))))
	}
	return c
}

// assertSameClassifier: want read back, its weights as half floats.
func assertSameClassifier(t *testing.T, want, got *routing.Classifier) {
	t.Helper()
	require.Len(t, got.Weights, len(want.Weights))
	for i, w := range want.Weights {
		if math.Abs(float64(w-got.Weights[i])) > math.Ldexp(math.Abs(float64(w)), -11) {
			require.Failf(t, "weight not within half precision", "weight %d: stored %g, read %g", i, w, got.Weights[i])
		}
	}
	a, b := *want, *got
	a.Weights, b.Weights = nil, nil
	assert.True(t, a.ReadAt.Equal(b.ReadAt) && a.FittedAt.Equal(b.FittedAt), "times")
	a.ReadAt, b.ReadAt, a.FittedAt, b.FittedAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	assert.Equal(t, a, b)
}

// The classifier's items: a head of JSON without the weights, read_at
// of fixed width, and parts of at most maxPartBytes of half floats that
// read back whole, and only whole.
func TestClassifierItems(t *testing.T) {
	at := time.Date(2026, 5, 6, 7, 8, 9, 500_000_000, time.FixedZone("CEST", 2*3600))
	c := testClassifier("amazon.titan-embed-text-v2:0/512", 600, 700, at)
	head, parts, err := toClassifierItems("t1", c, "fit_1")
	require.NoError(t, err)
	assert.Equal(t, "TEAM#t1", head.PK)
	assert.Equal(t, "CLASSIFIER#amazon.titan-embed-text-v2:0/512", head.SK)
	assert.Equal(t, "2026-05-06T05:08:09.500000000Z", head.ReadAt, "UTC, nine digits: strings compare as times")
	assert.NotContains(t, head.Body, "weights")
	assert.Equal(t, 600*700, head.Weights)
	require.Len(t, parts, 3, "840,000 bytes of halves in parts of 350 KiB")
	assert.Equal(t, 3, head.Parts)
	for n, p := range parts {
		assert.Equal(t, dynamo.ClassifierPartSK(c.Embedder, "fit_1", n), p.SK)
		assert.LessOrEqual(t, len(p.Data), maxPartBytes)
	}
	m, err := dynamo.Marshal(head)
	require.NoError(t, err)
	var back classifierItem
	require.NoError(t, dynamo.Unmarshal(m, &back))
	got, err := back.toClassifier(parts)
	require.NoError(t, err)
	assertSameClassifier(t, c, got)

	_, err = back.toClassifier(parts[:2])
	assert.ErrorContains(t, err, "incomplete", "a part missing")
	_, err = back.toClassifier([]classifierPartItem{parts[0], parts[2], parts[1]})
	assert.ErrorContains(t, err, "incomplete", "parts out of order")

	// No weights: no parts, and an empty classifier back.
	empty := &routing.Classifier{Embedder: "e", ReadAt: at}
	head, parts, err = toClassifierItems("t1", empty, "fit_2")
	require.NoError(t, err)
	assert.Empty(t, parts)
	got, err = head.toClassifier(nil)
	require.NoError(t, err)
	assert.Empty(t, got.Weights)

	for _, bad := range []*routing.Classifier{nil, {Embedder: ""}, {Embedder: "a#b"}, {Embedder: "é"},
		{Embedder: "e", Terms: []string{strings.Repeat("x", maxHeadBytes)}}} {
		_, _, err := toClassifierItems("t1", bad, "fit_3")
		assert.Error(t, err)
	}
}

func TestClassifierKeys(t *testing.T) {
	assert.Equal(t, "CLASSIFIER#e", dynamo.ClassifierSK("e"))
	assert.Equal(t, "CLASSIFIERPART#e#fit_1#", dynamo.ClassifierPartPrefix("e", "fit_1"))
	assert.Equal(t, "CLASSIFIERPART#e#fit_1#0012", dynamo.ClassifierPartSK("e", "fit_1", 12))
	// The parts are not under the heads' prefix, nor one fit's under another's.
	assert.False(t, strings.HasPrefix(dynamo.ClassifierPartSK("e", "fit_1", 0), dynamo.ClassifierSK("e")+"#"))
	assert.False(t, strings.HasPrefix(dynamo.ClassifierPartSK("e", "fit_12", 0), dynamo.ClassifierPartPrefix("e", "fit_1")))
}

// tableDB is a table in memory, enough of DynamoDB for the classifier's
// calls: Get, Put (the head's condition), Delete and prefix Query, paged
// two items at a time.
type tableDB struct {
	dynamo.API
	mu    sync.Mutex
	items map[[2]string]map[string]types.AttributeValue
	// failPut fails the PutItem of the items it returns true for.
	failPut func(sk string) bool
}

func newTableDB() *tableDB { return &tableDB{items: map[[2]string]map[string]types.AttributeValue{}} }

func keyOf(m map[string]types.AttributeValue) [2]string {
	return [2]string{m["pk"].(*types.AttributeValueMemberS).Value, m["sk"].(*types.AttributeValueMemberS).Value}
}

func (d *tableDB) GetItem(_ context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return &dynamodb.GetItemOutput{Item: d.items[keyOf(in.Key)]}, nil
}

func (d *tableDB) PutItem(_ context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	k := keyOf(in.Item)
	if d.failPut != nil && d.failPut(k[1]) {
		return nil, errors.New("throttled")
	}
	old := d.items[k]
	if in.ConditionExpression != nil {
		mine := in.ExpressionAttributeValues[":r"].(*types.AttributeValueMemberS).Value
		if old != nil && old["read_at"].(*types.AttributeValueMemberS).Value > mine {
			return nil, &types.ConditionalCheckFailedException{}
		}
	}
	d.items[k] = in.Item
	if in.ReturnValues != types.ReturnValueAllOld {
		old = nil
	}
	return &dynamodb.PutItemOutput{Attributes: old}, nil
}

func (d *tableDB) DeleteItem(_ context.Context, in *dynamodb.DeleteItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	old := d.items[keyOf(in.Key)]
	delete(d.items, keyOf(in.Key))
	if in.ReturnValues != types.ReturnValueAllOld {
		old = nil
	}
	return &dynamodb.DeleteItemOutput{Attributes: old}, nil
}

func (d *tableDB) Query(_ context.Context, in *dynamodb.QueryInput, _ ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	v := func(k string) string { return in.ExpressionAttributeValues[k].(*types.AttributeValueMemberS).Value }
	after := ""
	if in.ExclusiveStartKey != nil {
		after = keyOf(in.ExclusiveStartKey)[1]
	}
	var sks []string
	for k := range d.items {
		if k[0] == v(":pk") && k[1] >= v(":p") && k[1] <= v(":end") && k[1] > after {
			sks = append(sks, k[1])
		}
	}
	sort.Strings(sks)
	out := &dynamodb.QueryOutput{}
	for _, sk := range sks {
		if len(out.Items) == 2 {
			out.LastEvaluatedKey = dynamo.Key(v(":pk"), out.Items[1]["sk"].(*types.AttributeValueMemberS).Value)
			break
		}
		out.Items = append(out.Items, d.items[[2]string{v(":pk"), sk}])
	}
	return out, nil
}

// keys are the sort keys of the table's items.
func (d *tableDB) keys() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for k := range d.items {
		out = append(out, k[1])
	}
	sort.Strings(out)
	return out
}

// The classifier's writes in order, on a table in memory: the parts
// before the head, a refused or failed put leaves the stored classifier
// and no parts of its own, a replace and a delete leave no parts of the
// fit they end. (Against DynamoDB Local: the store contract,
// shared/testkit/storetest/classifiers.go.)
func TestClassifierWrites(t *testing.T) {
	ctx := context.Background()
	db := newTableDB()
	s := New(db, "table")
	at := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	first := testClassifier("e", 600, 700, at)
	ok, err := s.PutClassifier(ctx, "t1", first)
	require.NoError(t, err)
	require.True(t, ok)
	keys := db.keys()
	require.Len(t, keys, 4, "the head and three parts")
	got, ok, err := s.TeamClassifier(ctx, "t1", "e")
	require.NoError(t, err)
	require.True(t, ok)
	assertSameClassifier(t, first, got)

	// Older by a nanosecond: refused, its parts deleted.
	older := testClassifier("e", 3, 4, at.Add(-time.Nanosecond))
	ok, err = s.PutClassifier(ctx, "t1", older)
	require.NoError(t, err)
	assert.False(t, ok)
	assert.Equal(t, keys, db.keys(), "nothing of the refused fit left")

	// A part's put fails: an error, its parts deleted, the stored one read.
	db.failPut = func(sk string) bool { return strings.HasSuffix(sk, "#0002") }
	_, err = s.PutClassifier(ctx, "t1", testClassifier("e", 600, 700, at.Add(time.Hour)))
	assert.Equal(t, apperr.EINTERNAL, apperr.Code(err))
	assert.Equal(t, keys, db.keys(), "nothing of the failed fit left")

	// The head's put fails (it may have been written): its parts stay.
	db.failPut = func(sk string) bool { return sk == "CLASSIFIER#e" }
	_, err = s.PutClassifier(ctx, "t1", testClassifier("e", 3, 4, at.Add(time.Hour)))
	assert.Equal(t, apperr.EINTERNAL, apperr.Code(err))
	assert.Len(t, db.keys(), 5, "one part of the new fit beside the stored one")
	got, _, err = s.TeamClassifier(ctx, "t1", "e")
	require.NoError(t, err)
	assertSameClassifier(t, first, got)
	db.failPut = nil

	// Newer, and equal: replaced, the old fit's parts deleted.
	newer := testClassifier("e", 3, 4, at.Add(time.Second))
	for range 2 {
		ok, err = s.PutClassifier(ctx, "t1", newer)
		require.NoError(t, err)
		assert.True(t, ok)
		assert.Len(t, db.keys(), 3, "the head, its part, and the part of the failed head")
		got, _, err = s.TeamClassifier(ctx, "t1", "e")
		require.NoError(t, err)
		assertSameClassifier(t, newer, got)
	}

	// A part gone under a head (a replace between the reads): an error.
	// (The orphan of the failed head goes too.)
	for _, k := range db.keys() {
		if strings.HasPrefix(k, "CLASSIFIERPART#") {
			_, _ = db.DeleteItem(ctx, &dynamodb.DeleteItemInput{Key: dynamo.Key("TEAM#t1", k)})
		}
	}
	_, _, err = s.TeamClassifier(ctx, "t1", "e")
	assert.ErrorContains(t, err, "incomplete")

	again := *first
	again.ReadAt = at.Add(time.Minute)
	ok, err = s.PutClassifier(ctx, "t1", &again)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, s.DeleteClassifier(ctx, "t1", "e"))
	require.NoError(t, s.DeleteClassifier(ctx, "t1", "e"), "none stored is no error")
	_, ok, err = s.TeamClassifier(ctx, "t1", "e")
	require.NoError(t, err)
	assert.False(t, ok)
	assert.Empty(t, db.keys(), "the head and its parts deleted")
}
