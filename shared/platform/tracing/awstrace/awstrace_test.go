package awstrace_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"

	"github.com/conclave-ai/conclave/shared/platform/tracing"
	"github.com/conclave-ai/conclave/shared/platform/tracing/awstrace"
	"github.com/conclave-ai/conclave/shared/platform/tracing/tracingtest"
)

// awsServer answers DynamoDB's GetItem, refuses PutItem as DynamoDB would,
// and answers Step Functions' StartExecution.
func awsServer(t *testing.T) aws.Config {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Header().Set("X-Amzn-RequestId", "REQ123")
		switch target := r.Header.Get("X-Amz-Target"); {
		case strings.HasSuffix(target, ".PutItem"):
			w.WriteHeader(400)
			_, _ = w.Write([]byte(`{"__type":"com.amazon.coral.validate#ValidationException","message":"bad item"}`))
		case strings.HasSuffix(target, ".StartExecution"):
			_, _ = w.Write([]byte(`{"executionArn":"arn:aws:states:us-east-1:1:execution:m:n","startDate":1}`))
		default:
			_, _ = w.Write([]byte(`{}`))
		}
	}))
	t.Cleanup(srv.Close)
	cfg := aws.Config{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), RetryMaxAttempts: 1,
		Credentials: credentials.NewStaticCredentialsProvider("AKID", "SECRET", "")}
	awstrace.Instrument(&cfg)
	return cfg
}

// Every AWS call is a client span named service.operation with the AWS
// SDK conventions, under the invocation's span; a refused call's span
// failed with the error's code. The Step Functions client names its
// operation later than the others: its span is named all the same.
func TestEveryAWSCallIsAClientSpan(t *testing.T) {
	p, c := tracingtest.New(t, false)
	cfg := awsServer(t)
	ctx, root := tracing.StartRoot(tracing.WithProvider(context.Background(), p), "turn", trace.SpanKindServer, "", nil)
	db := dynamodb.NewFromConfig(cfg)
	_, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("t"), Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "a"}}})
	require.NoError(t, err)
	_, err = db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "a"}}})
	require.Error(t, err)
	_, err = sfn.NewFromConfig(cfg).StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String("arn:aws:states:us-east-1:1:stateMachine:m")})
	require.NoError(t, err)
	root.End()
	p.Flush(context.Background())

	spans := c.Spans()
	get, put, start := spans["DynamoDB.GetItem"], spans["DynamoDB.PutItem"], spans["SFN.StartExecution"]
	require.NotEmpty(t, get.SpanID, spans)
	require.NotEmpty(t, put.SpanID, spans)
	require.NotEmpty(t, start.SpanID, spans)
	assert.Equal(t, spans["turn"].SpanID, get.ParentSpanID)
	assert.Equal(t, 3, get.Kind)
	attrs := map[string]string{}
	for _, a := range get.Attributes {
		if a.Value.String != nil {
			attrs[a.Key] = *a.Value.String
		}
	}
	assert.Equal(t, map[string]string{"rpc.system": "aws-api", "rpc.service": "DynamoDB", "rpc.method": "GetItem",
		"cloud.region": "us-east-1", "aws.request_id": "REQ123"}, attrs)
	assert.Equal(t, 2, put.Status.Code)
	assert.Equal(t, "ValidationException", put.Status.Message, "the error's code, not its text (no content recorded)")
	assert.Equal(t, 0, start.Status.Code)
}

// Outside an invocation (no provider) a call makes no span and works.
func TestACallWithoutAProviderIsUntouched(t *testing.T) {
	cfg := awsServer(t)
	_, err := dynamodb.NewFromConfig(cfg).GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String("t"),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "a"}}})
	require.NoError(t, err)
}
