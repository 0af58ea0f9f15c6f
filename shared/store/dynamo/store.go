// Package dynamo implements the domain stores on the single DynamoDB table.
//
// One way to store: every entity has an item struct with dynamodbav tags
// and toXItem/fromXItem conversions beside it; nested values (a skill, a
// score, the last handoff) are maps and lists of item structs, never JSON
// documents of domain types. keys.go holds every key shape and the access
// patterns with the index that serves each.
//
// Every invariant is a condition on the write, so concurrent requests cannot
// break one. A transaction runs through transact (transact.go), which names
// the write whose condition failed by its role; each method turns that into
// the domain's error (an apperr code, tasks.ConditionFailed, or an ECONFLICT
// caused by conversations.ErrChanged). Where explaining a failure needs the
// item, the write asks for it back (ReturnValuesOnConditionCheckFailure
// ALL_OLD) instead of reading it again.
//
// Conditions, updates and filters are built with feature/dynamodb/expression.
// Three short fixed expressions stay literal because the builder would only
// obscure them: "the key is free" (condNew) and "the item exists"
// (condExists) on writes, and the key condition of a prefix query
// (prefixQuery).
package dynamo

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/backoff"
	"github.com/conclave-ai/conclave/shared/platform/idempotency"
	"github.com/conclave-ai/conclave/shared/platform/paging"
)

// API is the part of the DynamoDB client the store uses; tests of the error
// mapping substitute it, everything else uses the real client.
type API interface {
	GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(context.Context, *dynamodb.DeleteItemInput, ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	Query(context.Context, *dynamodb.QueryInput, ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	BatchGetItem(context.Context, *dynamodb.BatchGetItemInput, ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
	TransactWriteItems(context.Context, *dynamodb.TransactWriteItemsInput, ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
	DescribeTable(context.Context, *dynamodb.DescribeTableInput, ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
}

// Store is the core of the single-table store: the client and the table.
// Each domain's adapter (shared/store/<domain>store) embeds it and adds
// that domain's methods; the core keeps what is generic (idempotency
// records, the queue-attempt and rate counters, ping).
type Store struct {
	DB    API
	Table string
}

// New returns a store on table.
func New(db API, table string) *Store { return &Store{DB: db, Table: table} }

var _ idempotency.Store = (*Store)(nil)

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

// Internal wraps an infrastructure failure; its detail stays in logs.
func Internal(err error, op string) error {
	return apperr.Wrap(apperr.EINTERNAL, err, "dynamodb %s failed", op)
}

// ConditionFailed reports whether err is a failed condition on a single
// write, and returns the item as it was when the write asked for ALL_OLD
// (nil if it did not exist).
func ConditionFailed(err error) (map[string]types.AttributeValue, bool) {
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		return nil, false
	}
	return ccf.Item, true
}

// The literal conditions (see the package comment).
var (
	CondNew    = aws.String("attribute_not_exists(pk)")
	condExists = aws.String("attribute_exists(pk)")
)

// Build compiles an update (may be nil) and a condition (may be the zero
// builder). It only fails on a builder left unset or a value the
// attributevalue encoder cannot marshal: a programming error.
func Build(update *expression.UpdateBuilder, cond expression.ConditionBuilder) (expression.Expression, error) {
	b := expression.NewBuilder()
	if update != nil {
		b = b.WithUpdate(*update)
	}
	if cond.IsSet() {
		b = b.WithCondition(cond)
	}
	return b.Build()
}

// AllOf joins conditions with AND; none is the zero (unset) builder.
func AllOf(conds []expression.ConditionBuilder) expression.ConditionBuilder {
	switch len(conds) {
	case 0:
		return expression.ConditionBuilder{}
	case 1:
		return conds[0]
	default:
		return conds[0].And(conds[1], conds[2:]...)
	}
}

// Name shortens the expression builder's attribute operand.
func Name(n string) expression.NameBuilder { return expression.Name(n) }

// Value shortens the expression builder's value operand.
func Value(v any) expression.ValueBuilder { return expression.Value(v) }

// KeyIs is the key condition "k = v".
func KeyIs(k string, v any) expression.KeyConditionBuilder {
	return expression.Key(k).Equal(expression.Value(v))
}

func str(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

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

// Marshal encodes an item struct as DynamoDB stores it (numbers below
// DynamoDB's range flushed to 0, see minNumber).
func Marshal(v any) (map[string]types.AttributeValue, error) {
	m, err := attributevalue.MarshalMap(v)
	if err == nil {
		flushTiny(m)
	}
	return m, err
}

// minNumber is below the smallest magnitude DynamoDB stores (1E-130): a
// float64 can be far smaller (a validated 0–1 weight of 2.2e-313 is still
// in range), and DynamoDB refuses the whole write ("Number underflow"), so
// such a number is stored as the 0 it is to every reader.
const minNumber = 1e-129

// flushTiny replaces every number of m too small for DynamoDB with 0.
func flushTiny(m map[string]types.AttributeValue) {
	for k, v := range m {
		m[k] = flushValue(v)
	}
}

func flushValue(v types.AttributeValue) types.AttributeValue {
	switch x := v.(type) {
	case *types.AttributeValueMemberN:
		if f, err := strconv.ParseFloat(x.Value, 64); err == nil && f != 0 && math.Abs(f) < minNumber {
			return &types.AttributeValueMemberN{Value: "0"}
		}
	case *types.AttributeValueMemberM:
		flushTiny(x.Value)
	case *types.AttributeValueMemberL:
		for i := range x.Value {
			x.Value[i] = flushValue(x.Value[i])
		}
	case *types.AttributeValueMemberNS:
		for i, n := range x.Value {
			if f, err := strconv.ParseFloat(n, 64); err == nil && f != 0 && math.Abs(f) < minNumber {
				x.Value[i] = "0"
			}
		}
	}
	return v
}

// Unmarshal decodes a stored item into an item struct.
func Unmarshal(m map[string]types.AttributeValue, v any) error {
	return attributevalue.UnmarshalMap(m, v)
}

// PrefixEnd closes a key prefix's range: the keys of this table are
// printable ASCII (generated ids, validated slugs, '#' separators), and DEL
// (0x7F) sorts after every one of their characters, so prefix ≤ key ≤
// prefix+prefixEnd is exactly "key begins with prefix". (Not U+10FFFF:
// DynamoDB Local answers a request holding a non-ASCII character with a
// wrong CRC32, which the SDK rejects.)
const PrefixEnd = "\x7f"

// HasPrefix is the key condition "attr begins with prefix", written as the
// range it is. DynamoDB serves both forms the same way; DynamoDB Local (the
// local cloud's engine) evaluates begins_with by reading the whole
// partition, so a team's queries grew slower with everything the team had
// ever stored (measured: 3.7 ms empty, 8 ms at 30,000 items, 21 ms at
// 60,000), while a BETWEEN stays at about 1 ms.
func HasPrefix(attr, prefix string) expression.KeyConditionBuilder {
	return expression.Key(attr).Between(expression.Value(prefix), expression.Value(prefix+PrefixEnd))
}

// PrefixQuery reads the items of a partition whose sort key starts with
// prefix.
func PrefixQuery(pk, prefix string, forward bool) *dynamodb.QueryInput {
	return &dynamodb.QueryInput{
		KeyConditionExpression:    aws.String("pk = :pk AND sk BETWEEN :p AND :end"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(pk), ":p": str(prefix), ":end": str(prefix + PrefixEnd)},
		ScanIndexForward:          aws.Bool(forward),
	}
}

// BuiltQuery is a query on index ("" for the table) from a key condition
// and a filter (the zero builder for none).
func BuiltQuery(index string, keyCond expression.KeyConditionBuilder, filter expression.ConditionBuilder, forward bool) (*dynamodb.QueryInput, error) {
	b := expression.NewBuilder().WithKeyCondition(keyCond)
	if filter.IsSet() {
		b = b.WithFilter(filter)
	}
	e, err := b.Build()
	if err != nil {
		return nil, err
	}
	in := &dynamodb.QueryInput{
		KeyConditionExpression: e.KeyCondition(), FilterExpression: e.Filter(),
		ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
		ScanIndexForward: aws.Bool(forward),
	}
	if index != "" {
		in.IndexName = aws.String(index)
	}
	return in, nil
}

// QueryPage runs one page of a query and decodes its items; the page token
// is bound to scope.
func (s *Store) QueryPage(ctx context.Context, in *dynamodb.QueryInput, scope string, p paging.Page, each func(map[string]types.AttributeValue) error) (string, error) {
	return s.queryPage(ctx, in, scope, p, 1, each)
}

// FillQueries bounds QueryFill: the queries one page may take.
const FillQueries = 4

// QueryFill runs one page of a query whose filter may leave a DynamoDB
// page short of p.Limit (the filter applies after Limit): while the page
// has fewer items than the limit and the query has more, it queries on
// from where it stopped, asking each time for as many items as are
// missing, so it never reads past the page and its token is where the
// next page starts. At most FillQueries queries: a page after them may
// still be short (even empty) and carry a next token. The token is bound
// to scope, as QueryPage's.
func (s *Store) QueryFill(ctx context.Context, in *dynamodb.QueryInput, scope string, p paging.Page, each func(map[string]types.AttributeValue) error) (string, error) {
	return s.queryPage(ctx, in, scope, p, FillQueries, each)
}

// queryPage is QueryPage (queries 1) and QueryFill (queries FillQueries).
func (s *Store) queryPage(ctx context.Context, in *dynamodb.QueryInput, scope string, p paging.Page, queries int, each func(map[string]types.AttributeValue) error) (string, error) {
	start, err := decodeToken(scope, p.Token)
	if err != nil {
		return "", err
	}
	in.TableName = &s.Table
	if start != nil {
		// A token continues the listing; without one the query starts
		// where it was built to (the start of its range, or a key the
		// caller set).
		in.ExclusiveStartKey = start
	}
	kept := 0
	for range queries {
		if p.Limit > 0 {
			in.Limit = aws.Int32(int32(p.Limit - kept))
		}
		out, err := s.DB.Query(ctx, in)
		if err != nil {
			return "", Internal(err, "Query")
		}
		for _, m := range out.Items {
			if err := each(m); err != nil {
				return "", Internal(err, "unmarshal")
			}
		}
		kept += len(out.Items)
		in.ExclusiveStartKey = out.LastEvaluatedKey
		if len(out.LastEvaluatedKey) == 0 || p.Limit <= 0 || kept >= p.Limit {
			break
		}
	}
	next, err := encodeToken(scope, in.ExclusiveStartKey)
	if err != nil {
		return "", Internal(err, "token")
	}
	return next, nil
}

// MaxBatchGet is the most keys one BatchGetItem reads.
const MaxBatchGet = 100

// batchGetAttempts bounds BatchGet's calls: DynamoDB may leave keys
// unprocessed (throttled, or over 16 MB), which are asked for again.
const batchGetAttempts = 4

// BatchGet reads the items at keys (at most MaxBatchGet) consistently, in
// one BatchGetItem, asking again for the keys DynamoDB left unprocessed
// (throttled, or past 16 MB) after backoff's pauses, 100 ms, 200 ms, …:
// EINTERNAL if some are still left after batchGetAttempts calls, or on a
// failed call (the SDK has retried it already). It returns the items
// found in no particular order (DynamoDB's); a key without an item has
// none.
func (s *Store) BatchGet(ctx context.Context, keys []map[string]types.AttributeValue) ([]map[string]types.AttributeValue, error) {
	if len(keys) > MaxBatchGet {
		return nil, Internal(fmt.Errorf("%d keys, above %d", len(keys), MaxBatchGet), "BatchGetItem")
	}
	var out []map[string]types.AttributeValue
	pending := keys
	for attempt := 0; len(pending) > 0; attempt++ {
		if attempt == batchGetAttempts {
			return nil, Internal(fmt.Errorf("%d keys still unprocessed after %d calls", len(pending), attempt), "BatchGetItem")
		}
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return nil, Internal(ctx.Err(), "BatchGetItem")
			case <-time.After(backoff.FirstPause << (attempt - 1)):
			}
		}
		res, err := s.DB.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
			s.Table: {Keys: pending, ConsistentRead: aws.Bool(true)},
		}})
		if err != nil {
			return nil, Internal(err, "BatchGetItem")
		}
		out = append(out, res.Responses[s.Table]...)
		pending = res.UnprocessedKeys[s.Table].Keys
	}
	return out, nil
}

// QueryAll runs a query to its last page, decoding every item.
func (s *Store) QueryAll(ctx context.Context, in *dynamodb.QueryInput, each func(map[string]types.AttributeValue) error) error {
	in.TableName = &s.Table
	for {
		out, err := s.DB.Query(ctx, in)
		if err != nil {
			return Internal(err, "Query")
		}
		for _, m := range out.Items {
			if err := each(m); err != nil {
				return Internal(err, "unmarshal")
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			return nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// GetItem reads one item consistently; a missing item is nil.
func (s *Store) GetItem(ctx context.Context, k map[string]types.AttributeValue) (map[string]types.AttributeValue, error) {
	out, err := s.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.Table, Key: k, ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, Internal(err, "GetItem")
	}
	return out.Item, nil
}

// TTL is an expires_at value: epoch seconds.
func TTL(t time.Time) int64 { return t.Unix() }

// ItemReader reads one item by its key (Store.GetItem, which every
// domain's store embeds).
type ItemReader interface {
	GetItem(ctx context.Context, k map[string]types.AttributeValue) (map[string]types.AttributeValue, error)
}

// Get is every store's read of one record by its key: the item (a
// consistent read) decoded by decode; ENOTFOUND naming kind and id when
// there is none, EINTERNAL when it does not decode.
func Get[T any](ctx context.Context, r ItemReader, k map[string]types.AttributeValue, kind, id string, decode func(map[string]types.AttributeValue) (T, error)) (T, error) {
	var zero T
	m, err := r.GetItem(ctx, k)
	if err != nil {
		return zero, err
	}
	if m == nil {
		return zero, apperr.NotFound(kind, id)
	}
	v, err := decode(m)
	if err != nil {
		return zero, Internal(err, "unmarshal")
	}
	return v, nil
}

// Exists is ENOTFOUND naming kind and id unless the item at k exists (a
// consistent read): the check of a reference to another domain's record
// by a function that does not serve that domain (a consultation's
// conversation).
func Exists(ctx context.Context, r ItemReader, k map[string]types.AttributeValue, kind, id string) error {
	_, err := Get(ctx, r, k, kind, id, func(map[string]types.AttributeValue) (struct{}, error) { return struct{}{}, nil })
	return err
}

// PutNew is every store's create of one record: item (marshalled) put
// only where no item has its key. created is false, and nothing is
// written, when one has: the caller says what that means (a conflict, a
// redelivery written once). EINTERNAL when the item does not marshal or
// the put fails otherwise.
func (s *Store) PutNew(ctx context.Context, item any) (created bool, err error) {
	m, err := Marshal(item)
	if err != nil {
		return false, Internal(err, "marshal")
	}
	_, err = s.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: &s.Table, Item: m, ConditionExpression: CondNew})
	if _, failed := ConditionFailed(err); failed {
		return false, nil
	}
	if err != nil {
		return false, Internal(err, "PutItem")
	}
	return true, nil
}
