package xraytrace_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/xraytrace"
)

// daemon is a UDP listener standing in for the X-Ray daemon.
func daemon(t *testing.T) (*net.UDPConn, string) {
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c, c.LocalAddr().String()
}

// next reads one datagram: the header line, then the document.
func next(t *testing.T, c *net.UDPConn) (map[string]any, bool) {
	buf := make([]byte, 64<<10)
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	n, err := c.Read(buf)
	if err != nil {
		return nil, false
	}
	header, doc, ok := strings.Cut(string(buf[:n]), "\n")
	require.True(t, ok)
	assert.JSONEq(t, `{"format":"json","version":1}`, header)
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(doc), &m))
	return m, true
}

// client is a real DynamoDB client against a server that answers GetItem
// and refuses PutItem as DynamoDB would.
func client(t *testing.T, e *xraytrace.Emitter) *dynamodb.Client {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Header().Set("X-Amzn-RequestId", "REQ123")
		if strings.HasSuffix(r.Header.Get("X-Amz-Target"), ".PutItem") {
			w.WriteHeader(400)
			_, _ = w.Write([]byte(`{"__type":"com.amazon.coral.validate#ValidationException","message":"bad item"}`))
			return
		}
		_, _ = w.Write([]byte(`{}`))
	}))
	t.Cleanup(srv.Close)
	cfg := aws.Config{Region: "eu-west-1", Credentials: credentials.NewStaticCredentialsProvider("a", "b", ""), BaseEndpoint: aws.String(srv.URL)}
	xraytrace.Instrument(&cfg, e)
	return dynamodb.NewFromConfig(cfg)
}

var key = map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "x"}}

const header = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"

func TestEachCallIsASubsegmentOfTheInvocationsTrace(t *testing.T) {
	conn, addr := daemon(t)
	e, err := xraytrace.Dial(addr)
	require.NoError(t, err)
	db := client(t, e)
	ctx := context.WithValue(context.Background(), xraytrace.TraceHeaderKey, header) //nolint:staticcheck // aws-lambda-go's key

	_, err = db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("t"), Key: key})
	require.NoError(t, err)
	seg, ok := next(t, conn)
	require.True(t, ok)
	assert.Equal(t, "DynamoDB", seg["name"])
	assert.Equal(t, "subsegment", seg["type"])
	assert.Equal(t, "aws", seg["namespace"])
	assert.Equal(t, "1-5759e988-bd862e3fe1be46a994272793", seg["trace_id"])
	assert.Equal(t, "53995c3f42cd8ad8", seg["parent_id"])
	assert.Len(t, seg["id"], 16)
	assert.Equal(t, map[string]any{"operation": "GetItem", "region": "eu-west-1", "request_id": "REQ123", "retries": 0.0}, seg["aws"])
	assert.Equal(t, 200.0, seg["http"].(map[string]any)["response"].(map[string]any)["status"])
	assert.GreaterOrEqual(t, seg["end_time"].(float64), seg["start_time"].(float64))
	assert.NotContains(t, seg, "error")

	_, err = db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: key})
	require.Error(t, err)
	seg, ok = next(t, conn)
	require.True(t, ok)
	assert.Equal(t, "PutItem", seg["aws"].(map[string]any)["operation"])
	assert.Equal(t, true, seg["error"], "a 4xx is a client error")
	assert.NotContains(t, seg, "fault")
	assert.Contains(t, seg["cause"].(map[string]any)["exceptions"].([]any)[0].(map[string]any)["message"], "bad item")
}

func TestUnsampledOrUntracedCallsSendNothing(t *testing.T) {
	conn, addr := daemon(t)
	e, err := xraytrace.Dial(addr)
	require.NoError(t, err)
	db := client(t, e)
	for _, ctx := range []context.Context{
		context.Background(),
		context.WithValue(context.Background(), xraytrace.TraceHeaderKey, strings.Replace(header, "Sampled=1", "Sampled=0", 1)), //nolint:staticcheck
	} {
		_, err = db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("t"), Key: key})
		require.NoError(t, err)
	}
	_, got := next(t, conn)
	assert.False(t, got, "nothing reached the daemon")
}

func TestNoDaemonNoInstrumentation(t *testing.T) {
	t.Setenv("AWS_XRAY_DAEMON_ADDRESS", "")
	assert.Nil(t, xraytrace.FromEnv())
	cfg := aws.Config{}
	xraytrace.Instrument(&cfg, nil)
	assert.Empty(t, cfg.APIOptions)
}
