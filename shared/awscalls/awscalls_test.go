package awscalls_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/awscalls"
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
