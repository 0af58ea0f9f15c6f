package httpapi_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/authctx"
	"github.com/conclave-ai/conclave/shared/platform/awscalls"
	"github.com/conclave-ai/conclave/shared/platform/httpapi"
)

// hungTable is a DynamoDB that never answers: every request waits for its
// context (the process paused, a connection lost).
type hungTable struct{}

func (hungTable) Do(r *http.Request) (*http.Response, error) {
	<-r.Context().Done()
	return nil, r.Context().Err()
}

func hungClient() *dynamodb.Client {
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("a", "b", ""), HTTPClient: hungTable{},
		BaseEndpoint: aws.String("http://127.0.0.1:1")}
	awscalls.Instrument(&cfg)
	return dynamodb.NewFromConfig(cfg)
}

func key() map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "k"}}
}

// serveWithin serves a request to handler within an invocation of d, the
// way the Lambda runtime does (a context with the deadline and a call
// counter).
func serveWithin(t *testing.T, d time.Duration, lc map[string]any, h httpapi.HandlerFunc) (events.APIGatewayV2HTTPResponse, time.Duration) {
	t.Helper()
	rt := httpapi.NewRouter(slog.New(slog.NewTextHandler(io.Discard, nil)))
	rt.Handle("POST /v1/things", h)
	if lc == nil {
		lc = map[string]any{authctx.TeamID: "team_a"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	ctx, _ = awscalls.NewContext(ctx)
	start := time.Now()
	resp, err := rt.Serve(ctx, events.APIGatewayV2HTTPRequest{RouteKey: "POST /v1/things", RawPath: "/v1/things", Body: `{}`,
		RequestContext: events.APIGatewayV2HTTPRequestContext{RequestID: "req-1", HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "POST"},
			Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{Lambda: lc}}})
	require.NoError(t, err)
	return resp, time.Since(start)
}

// A read that stalls is cut off before the invocation's deadline: the
// function answers 503 DependencyUnavailable naming the service, with
// Retry-After and the request id, before Lambda would time it out.
func TestAStalledReadAnswers503BeforeTheDeadline(t *testing.T) {
	db := hungClient()
	resp, took := serveWithin(t, 2*time.Second, nil, func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		dl, ok := ctx.Deadline()
		require.True(t, ok)
		assert.Greater(t, time.Until(dl), time.Second, "the handler's time is the invocation's less a fifth (2 s → 1.6 s)")
		_, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("t"), Key: key()})
		return httpapi.Response{}, err
	})
	assert.Less(t, took, 2*time.Second, "answered within the invocation")
	assert.Equal(t, 503, resp.StatusCode, resp.Body)
	assert.Equal(t, "1", resp.Headers["Retry-After"])
	b := errorOf(t, resp)
	assert.Equal(t, "unavailable", b.Error.Code)
	assert.Equal(t, httpapi.ReasonDependencyUnavailable, b.Error.Reason)
	assert.Equal(t, "DynamoDB", b.Error.Details["service"])
	assert.Contains(t, b.Error.Message, "nothing was changed")
}

// A write sent before the stall: the request may have taken effect, and
// the answer says so (OutcomeUnknown, send again with the same key).
func TestAStallAfterAWriteSaysTheOutcomeIsUnknown(t *testing.T) {
	db := hungClient()
	resp, _ := serveWithin(t, 2*time.Second, nil, func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		wctx, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
		defer cancel()
		_, _ = db.PutItem(wctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: key()})
		_, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("t"), Key: key()})
		return httpapi.Response{}, err
	})
	assert.Equal(t, 503, resp.StatusCode, resp.Body)
	b := errorOf(t, resp)
	assert.Equal(t, httpapi.ReasonOutcomeUnknown, b.Error.Reason)
	assert.Contains(t, b.Error.Message, "same Idempotency-Key")
}

// A server fault with time to spare is still a 500 (no stall to name);
// an answer the handler chose (404) stands even when late.
func TestOnlyACutOffIsA503(t *testing.T) {
	resp, _ := serveWithin(t, 2*time.Second, nil, func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		return httpapi.Response{}, io.ErrUnexpectedEOF
	})
	assert.Equal(t, 500, resp.StatusCode)
}

// The authorizer could not check the key: the route answers 503 before
// its handler runs.
func TestAnUncheckedKeyAnswers503BeforeAnythingRuns(t *testing.T) {
	ran := false
	resp, _ := serveWithin(t, 2*time.Second, map[string]any{authctx.Unavailable: true}, func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		ran = true
		return httpapi.OK(nil), nil
	})
	assert.False(t, ran)
	assert.Equal(t, 503, resp.StatusCode)
	assert.Equal(t, httpapi.ReasonDependencyUnavailable, errorOf(t, resp).Error.Reason)
}
