package cloud

import (
	"bytes"
	"context"
	"errors"
	"hash/crc32"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/logging"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// DynamoDB Local answers errors without X-Amz-Crc32; through the edge the
// SDK gets the header DynamoDB sends, so it reads the error without logging
// a checksum mismatch, and an answer that has the header keeps it.
func TestEdgeGivesDynamoDBErrorsTheirCRC32(t *testing.T) {
	const failed = `{"__type":"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException","Message":"The conditional request failed"}`
	const item = `{"Item":{"pk":{"S":"x"}}}`
	local := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		if r.Header.Get("X-Amz-Target") == "DynamoDB_20120810.GetItem" {
			w.Header().Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE([]byte(item))), 10))
			_, _ = io.WriteString(w, item)
			return
		}
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, failed)
	}))
	defer local.Close()
	u, err := url.Parse(local.URL)
	require.NoError(t, err)
	e := NewEdge(Resources{}, nil, u, u, slog.New(slog.NewTextHandler(io.Discard, nil)))
	edge := httptest.NewServer(e.AWSHandler())
	defer edge.Close()

	var logged bytes.Buffer
	db := dynamodb.New(dynamodb.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(edge.URL),
		Credentials: aws.AnonymousCredentials{},
		Logger:      logging.LoggerFunc(func(_ logging.Classification, format string, v ...any) { logged.WriteString(format) }),
	})
	_, err = db.PutItem(context.Background(), &dynamodb.PutItemInput{
		TableName: aws.String("t"), Item: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "x"}},
		ConditionExpression: aws.String("attribute_not_exists(pk)"),
	})
	var ccf *types.ConditionalCheckFailedException
	require.True(t, errors.As(err, &ccf), "%v", err)
	got, err := db.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String("t"), Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "x"}},
	})
	require.NoError(t, err)
	assert.Equal(t, &types.AttributeValueMemberS{Value: "x"}, got.Item["pk"])
	assert.Empty(t, logged.String(), "the SDK logged while reading the answers")

	req, err := http.NewRequest(http.MethodPost, edge.URL, bytes.NewReader([]byte(`{}`)))
	require.NoError(t, err)
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810.PutItem")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, failed, string(body))
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Equal(t, strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10), resp.Header.Get("X-Amz-Crc32"))
}
