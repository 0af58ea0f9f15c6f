package awscalls_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/awscalls"
)

// fakeDynamo answers every request with the next status of statuses (the
// last one repeats) and an empty JSON object.
type fakeDynamo struct {
	statuses []int
	n        atomic.Int32
}

func (f *fakeDynamo) Do(r *http.Request) (*http.Response, error) {
	i := int(f.n.Add(1)) - 1
	status := f.statuses[min(i, len(f.statuses)-1)]
	body := "{}"
	if status >= 500 {
		body = `{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"boom"}`
	}
	return &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {"application/x-amz-json-1.0"}},
		Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
}

func client(t *testing.T, f *fakeDynamo, instrument int) *dynamodb.Client {
	t.Helper()
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("a", "b", ""), HTTPClient: f,
		BaseEndpoint: aws.String("http://127.0.0.1:1")}
	for range instrument {
		awscalls.Instrument(&cfg)
	}
	return dynamodb.NewFromConfig(cfg)
}

func getItem(ctx context.Context, c *dynamodb.Client) error {
	_, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("t"), Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "k"}}})
	return err
}

func TestCountsCallsByServiceAndOperation(t *testing.T) {
	c := client(t, &fakeDynamo{statuses: []int{200}}, 1)
	ctx, n := awscalls.NewContext(context.Background())
	require.NoError(t, getItem(ctx, c))
	require.NoError(t, getItem(ctx, c))
	_, err := c.Query(ctx, &dynamodb.QueryInput{TableName: aws.String("t")})
	require.NoError(t, err)
	assert.Equal(t, map[string]int{"DynamoDB.GetItem": 2, "DynamoDB.Query": 1}, n.Counts())
	assert.Equal(t, 3, n.Total())
	assert.Equal(t, 3, n.Service("DynamoDB"))
	assert.Zero(t, n.Retries())
	assert.Equal(t, `{"DynamoDB.GetItem":2,"DynamoDB.Query":1}`, n.JSON())
	assert.Equal(t, "DynamoDB.GetItem=2 DynamoDB.Query=1", n.String())
}

// A retried call counts every attempt, and Retries says how many.
func TestRetriesCountAsAttempts(t *testing.T) {
	c := client(t, &fakeDynamo{statuses: []int{500, 200}}, 1)
	ctx, n := awscalls.NewContext(context.Background())
	require.NoError(t, getItem(ctx, c))
	assert.Equal(t, map[string]int{"DynamoDB.GetItem": 2}, n.Counts())
	assert.Equal(t, 1, n.Retries())
}

// Each invocation has its own counter; a call outside one is not counted.
func TestCountersArePerContext(t *testing.T) {
	c := client(t, &fakeDynamo{statuses: []int{200}}, 1)
	a, na := awscalls.NewContext(context.Background())
	b, nb := awscalls.NewContext(context.Background())
	require.NoError(t, getItem(a, c))
	require.NoError(t, getItem(b, c))
	require.NoError(t, getItem(b, c))
	require.NoError(t, getItem(context.Background(), c))
	assert.Equal(t, 1, na.Total())
	assert.Equal(t, 2, nb.Total())
	assert.Nil(t, awscalls.FromContext(context.Background()))
}

// Instrumenting a configuration twice counts once.
func TestInstrumentIsIdempotent(t *testing.T) {
	c := client(t, &fakeDynamo{statuses: []int{200}}, 2)
	ctx, n := awscalls.NewContext(context.Background())
	require.NoError(t, getItem(ctx, c))
	assert.Equal(t, 1, n.Total())
}

func TestInstrumentLeavesEarlierCopiesAlone(t *testing.T) {
	cfg := aws.Config{APIOptions: make([]func(*middleware.Stack) error, 0, 4)}
	before := cfg
	awscalls.Instrument(&cfg)
	assert.Len(t, cfg.APIOptions, 1)
	assert.Empty(t, before.APIOptions)
	before.APIOptions = append(before.APIOptions, nil)
	assert.NotNil(t, cfg.APIOptions[0], "an append to the earlier copy does not overwrite the instrumented one")
}

// stalled never answers: each request waits for its context.
type stalled struct{}

func (stalled) Do(r *http.Request) (*http.Response, error) {
	<-r.Context().Done()
	return nil, r.Context().Err()
}

// A call cut off by its context names its service (Cut), the first one
// only; a write is remembered (Wrote) whether it answered or not, a read
// is not.
func TestACallCutByItsContextAndAWriteAreRemembered(t *testing.T) {
	ok := client(t, &fakeDynamo{statuses: []int{200}}, 1)
	ctx, n := awscalls.NewContext(context.Background())
	require.NoError(t, getItem(ctx, ok))
	assert.False(t, n.Wrote(), "a read changes nothing")
	assert.Empty(t, n.Cut())

	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("a", "b", ""), HTTPClient: stalled{},
		BaseEndpoint: aws.String("http://127.0.0.1:1")}
	awscalls.Instrument(&cfg)
	hung := dynamodb.NewFromConfig(cfg)
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	require.Error(t, getItem(cctx, hung))
	assert.Equal(t, "DynamoDB", n.Cut())
	assert.False(t, n.Wrote())

	wctx, wcancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer wcancel()
	_, err := hung.PutItem(wctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "k"}}})
	require.Error(t, err)
	assert.True(t, n.Wrote(), "a write cut off may have been applied")

	// A call that fails on its own (not its context) is no cut.
	fctx, n3 := awscalls.NewContext(context.Background())
	require.Error(t, getItem(fctx, client(t, &fakeDynamo{statuses: []int{400}}, 1)))
	assert.Empty(t, n3.Cut())
}
