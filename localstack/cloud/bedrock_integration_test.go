//go:build integration

package cloud_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	brtypes "github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/localstack/cloud"
)

// TestMain runs the package's tests, then holds the whole run to the
// production model path's contract: the functions sent the edge's Bedrock
// runtime no request the real service would refuse. (The edge logs each
// one at error level in edge.log with the rule it breaks.)
func TestMain(m *testing.M) {
	code := m.Run()
	if os.Getenv("CONCLAVE_EDGE_URL") == "" {
		os.Exit(code)
	}
	counts, err := bedrockCounts()
	if err != nil {
		fmt.Fprintln(os.Stderr, "could not read the edge's Bedrock counts:", err)
		os.Exit(1)
	}
	fmt.Printf("edge Bedrock runtime, calls served in this cloud's life: %v\n", counts)
	if n := counts["Converse.invalid"] + counts["ConverseStream.invalid"] + counts["InvokeModel.invalid"]; n > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: the edge refused %d Bedrock request(s) the real service would refuse (see INVALID in the edge's log)\n", n)
		code = 1
	}
	os.Exit(code)
}

func bedrockCounts() (map[string]int64, error) {
	resp, err := http.Get(os.Getenv("CONCLAVE_EDGE_URL") + cloud.BackendsPath)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var counts map[string]map[string]int64
	if err := json.NewDecoder(resp.Body).Decode(&counts); err != nil {
		return nil, err
	}
	return counts[cloud.BackendBedrock], nil
}

// The functions reach Bedrock through the edge: a chat turn is a Converse
// call the edge answered and validated.
func TestFunctionsConverseThroughTheEdge(t *testing.T) {
	e := mustEnv(t)
	before, err := bedrockCounts()
	require.NoError(t, err)
	d := mustDemoTeam(t, e)
	d.post(d.conversation("kyra"), map[string]any{"content": "How do I fix a nil map panic in Go?"})
	after, err := bedrockCounts()
	require.NoError(t, err)
	assert.Greater(t, after["Converse"], before["Converse"], "the turn's model call was a Converse call the edge served")
}

// A malformed Converse request sent with the real SDK gets Bedrock's 400
// ValidationException, naming the rule it breaks.
func TestEdgeRefusesAMalformedConverseRequest(t *testing.T) {
	e := mustEnv(t)
	client := bedrockruntime.NewFromConfig(e.cfg, func(o *bedrockruntime.Options) {
		o.BaseEndpoint = aws.String(os.Getenv("CONCLAVE_EDGE_URL"))
		o.RetryMaxAttempts = 1
		// Sent malformed on purpose: counted apart from the application's.
		o.APIOptions = append(o.APIOptions, smithyhttp.AddHeaderValue(cloud.ExpectInvalidHeader, "1"))
	})
	before, err := bedrockCounts()
	require.NoError(t, err)
	_, err = client.Converse(context.Background(), &bedrockruntime.ConverseInput{
		ModelId: aws.String("anthropic.claude-3-5-haiku-20241022-v1:0"),
		Messages: []brtypes.Message{
			{Role: brtypes.ConversationRoleUser, Content: []brtypes.ContentBlock{&brtypes.ContentBlockMemberText{Value: "one"}}},
			{Role: brtypes.ConversationRoleUser, Content: []brtypes.ContentBlock{&brtypes.ContentBlockMemberText{Value: "two"}}},
		},
	})
	var api smithy.APIError
	require.ErrorAs(t, err, &api)
	assert.Equal(t, "ValidationException", api.ErrorCode())
	assert.Contains(t, api.ErrorMessage(), "alternation: two user messages in a row")
	after, err := bedrockCounts()
	require.NoError(t, err)
	assert.Equal(t, before["Converse.invalid_expected"]+1, after["Converse.invalid_expected"])
}
