package bedrock_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/models/bedrock"
	"github.com/conclave-ai/conclave/shared/models/internal/providertest"
)

func model(s *providertest.Server) bedrock.Model {
	client := bedrockruntime.New(bedrockruntime.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(s.URL), RetryMaxAttempts: 1,
		Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", ""),
	})
	return bedrock.Model{Client: client, DefaultModelID: "amazon.nova-lite-v1:0"}
}

func TestConverseText(t *testing.T) {
	s := providertest.Serve(t)
	s.Body = providertest.Recorded(t, "bedrock-converse-text.json")
	resp, err := model(s).Converse(context.Background(), providertest.ToolRequest())
	require.NoError(t, err)
	assert.Equal(t, "Check the nil map on line 12 before writing to it.", resp.Text)
	assert.Equal(t, 412, resp.InputTokens)
	assert.Equal(t, 14, resp.OutputTokens)
	assert.Equal(t, "anthropic.claude-3-5-haiku-20241022-v1:0", resp.ModelID)
	assert.False(t, resp.Refused)

	// What went over the wire: the Converse REST call with system, limits,
	// tools and the tool round trip as toolUse / toolResult blocks.
	assert.Equal(t, "/model/anthropic.claude-3-5-haiku-20241022-v1:0/converse", s.Path)
	assert.Equal(t, "You are Kyra.", s.Got["system"].([]any)[0].(map[string]any)["text"])
	assert.EqualValues(t, 500, s.Got["inferenceConfig"].(map[string]any)["maxTokens"])
	tools := s.Got["toolConfig"].(map[string]any)["tools"].([]any)
	require.Len(t, tools, 2)
	spec := tools[0].(map[string]any)["toolSpec"].(map[string]any)
	assert.Equal(t, "delegate_task", spec["name"])
	assert.Equal(t, "object", spec["inputSchema"].(map[string]any)["json"].(map[string]any)["type"])
	msgs := s.Got["messages"].([]any)
	require.Len(t, msgs, 3)
	use := msgs[1].(map[string]any)["content"].([]any)[0].(map[string]any)["toolUse"].(map[string]any)
	assert.Equal(t, "t1", use["toolUseId"])
	assert.Equal(t, "task_1", use["input"].(map[string]any)["task_id"])
	result := msgs[2].(map[string]any)
	assert.Equal(t, "user", result["role"])
	assert.Equal(t, "t1", result["content"].([]any)[0].(map[string]any)["toolResult"].(map[string]any)["toolUseId"])
	assert.True(t, strings.HasPrefix(s.Auth, "AWS4-HMAC-SHA256"), "requests are SigV4 signed")
	// The request metadata is Converse's requestMetadata (invocation logs
	// are filtered by it), not part of the prompt.
	assert.Equal(t, map[string]any{"team_id": "team_01", "agent": "kyra"}, s.Got["requestMetadata"])
}

func TestConverseWithoutMetadataSendsNone(t *testing.T) {
	s := providertest.Serve(t)
	s.Body = providertest.Recorded(t, "bedrock-converse-text.json")
	_, err := model(s).Converse(context.Background(), models.Request{Messages: []models.Message{{Role: "user", Content: "x"}}})
	require.NoError(t, err)
	assert.NotContains(t, s.Got, "requestMetadata")
}

func TestConverseToolUseAndGuardrail(t *testing.T) {
	s := providertest.Serve(t)
	s.Body = providertest.Recorded(t, "bedrock-converse-tooluse.json")
	resp, err := model(s).Converse(context.Background(), models.Request{Messages: []models.Message{{Role: "user", Content: "signups?"}}})
	require.NoError(t, err)
	assert.Equal(t, "amazon.nova-lite-v1:0", resp.ModelID, "the default model when the request names none")
	require.Len(t, resp.ToolCalls, 1)
	c := resp.ToolCalls[0]
	assert.Equal(t, "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q", c.ID)
	assert.Equal(t, "delegate_task", c.Name)
	var input map[string]string
	require.NoError(t, json.Unmarshal([]byte(c.Input), &input))
	assert.Equal(t, "dana", input["to_agent"])
	assert.Equal(t, 655+88, resp.InputTokens+resp.OutputTokens)

	s.Body = providertest.Recorded(t, "bedrock-converse-guardrail.json")
	resp, err = model(s).Converse(context.Background(), models.Request{Messages: []models.Message{{Role: "user", Content: "x"}}})
	require.NoError(t, err)
	assert.True(t, resp.Refused)
}

func TestErrorsMapToErrModel(t *testing.T) {
	s := providertest.Serve(t)
	for _, tc := range []struct {
		status int
		typ    string
		msg    string
	}{
		{429, "ThrottlingException", "Too many requests, please wait before trying again."},
		{400, "ValidationException", "The provided model identifier is invalid."},
		{424, "ModelErrorException", "The model failed to process the request."},
	} {
		s.Status, s.Headers, s.Body = tc.status, map[string]string{"X-Amzn-Errortype": tc.typ}, `{"message":"`+tc.msg+`"}`
		_, err := model(s).Converse(context.Background(), models.Request{Messages: []models.Message{{Role: "user", Content: "x"}}})
		require.Error(t, err, tc.typ)
		assert.ErrorIs(t, err, models.ErrModel, tc.typ)
		assert.Contains(t, err.Error(), tc.typ)
		assert.Contains(t, err.Error(), tc.msg)
	}
	// A deadline is reported as itself, so callers can tell a timeout.
	ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	time.Sleep(time.Millisecond)
	_, err := model(s).Converse(ctx, models.Request{Messages: []models.Message{{Role: "user", Content: "x"}}})
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.False(t, errors.Is(err, models.ErrModel))
}
