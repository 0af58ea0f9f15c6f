package dynamo

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/agents"
	"github.com/conclave-ai/conclave/shared/apperr"
)

// failingDB returns canned errors: it exists only to unit-test how DynamoDB
// errors map to domain errors. Behaviour is tested against the local cloud.
type failingDB struct {
	API
	err error
}

func (f failingDB) TransactWriteItems(context.Context, *dynamodb.TransactWriteItemsInput, ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	return nil, f.err
}
func (f failingDB) PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return nil, f.err
}
func (f failingDB) GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return &dynamodb.GetItemOutput{}, nil
}

func canceled(codes ...string) error {
	var rs []types.CancellationReason
	for _, c := range codes {
		rs = append(rs, types.CancellationReason{Code: aws.String(c)})
	}
	return &types.TransactionCanceledException{Message: aws.String("canceled"), CancellationReasons: rs}
}

func TestCreateAgentErrorMapping(t *testing.T) {
	a := agents.Agent{TeamID: "t", Slug: "luke"}
	cases := []struct {
		err    error
		code   string
		reason string
	}{
		{canceled("None", "ConditionalCheckFailed"), apperr.ECONFLICT, "DuplicateSlug"},
		{canceled("ConditionalCheckFailed", "None"), apperr.ENOTFOUND, ""},
		{errors.New("throttled"), apperr.EINTERNAL, ""},
	}
	for _, c := range cases {
		err := New(failingDB{err: c.err}, "tbl").CreateAgent(context.Background(), a)
		e, ok := apperr.As(err)
		require.True(t, ok)
		assert.Equal(t, c.code, e.Code)
		assert.Equal(t, c.reason, e.Reason)
	}
}

func TestSetStatusOnDefaultAgentIsConflict(t *testing.T) {
	_, err := New(failingDB{err: canceled("None", "ConditionalCheckFailed")}, "tbl").SetStatus(context.Background(), "t", "kyra", agents.StatusPaused, aws.ToTime(nil))
	e, ok := apperr.As(err)
	require.True(t, ok)
	assert.Equal(t, apperr.ECONFLICT, e.Code)
	assert.Equal(t, "DefaultAgent", e.Reason)
}

func TestPageTokensAreBoundToTheirListing(t *testing.T) {
	lek := map[string]types.AttributeValue{"pk": str("TEAM#a"), "sk": str("AGENT#luke")}
	tok, err := encodeToken("agents:a", lek)
	require.NoError(t, err)
	got, err := decodeToken("agents:a", tok)
	require.NoError(t, err)
	assert.Equal(t, lek, got)

	for _, bad := range []string{tok + "x", "not-base64!", "e30"} {
		_, err := decodeToken("agents:a", bad)
		assert.Equal(t, apperr.EINVALID, apperr.Code(err), bad)
	}
	_, err = decodeToken("agents:b", tok)
	assert.Equal(t, apperr.EINVALID, apperr.Code(err), "another team's token is refused")
}
