package gateclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/routing/expertgate"
	"github.com/conclave-ai/conclave/shared/routing/expertgate/gateclient"
	"github.com/conclave-ai/conclave/shared/team/agents"
)

type invoker struct {
	out *lambda.InvokeOutput
	err error
	got *lambda.InvokeInput
}

func (i *invoker) Invoke(_ context.Context, in *lambda.InvokeInput, _ ...func(*lambda.Options)) (*lambda.InvokeOutput, error) {
	i.got = in
	return i.out, i.err
}

// The client's error mapping (a stand-in Lambda client is only used for
// this; the integration tests invoke the real function through the edge).
func TestClientMapsInvokeFailures(t *testing.T) {
	ok, _ := json.Marshal(expertgate.Response{AgentsScored: 3})
	inv := &invoker{out: &lambda.InvokeOutput{StatusCode: 200, Payload: ok}}
	c := &gateclient.Client{Lambda: inv, FunctionName: "conclave-dev-expert-gate"}
	resp, err := c.Score(context.Background(), expertgate.Request{TeamID: "t", Query: "q"})
	require.NoError(t, err)
	assert.Equal(t, 3, resp.AgentsScored)
	assert.Equal(t, "conclave-dev-expert-gate", aws.ToString(inv.got.FunctionName))
	var sent expertgate.Request
	require.NoError(t, json.Unmarshal(inv.got.Payload, &sent))
	assert.Equal(t, "t", sent.TeamID)

	inv.out = &lambda.InvokeOutput{StatusCode: 200, FunctionError: aws.String("Unhandled"), Payload: []byte(`{"errorMessage":"boom","errorType":"Error"}`)}
	_, err = c.Score(context.Background(), expertgate.Request{TeamID: "t", Query: "q"})
	assert.True(t, apperr.Is(err, apperr.EINTERNAL))
	assert.Contains(t, err.Error(), "boom")

	inv.out, inv.err = nil, errors.New("connection refused")
	_, err = c.Score(context.Background(), expertgate.Request{TeamID: "t", Query: "q"})
	assert.True(t, apperr.Is(err, apperr.EINTERNAL))

	inv.out, inv.err = &lambda.InvokeOutput{StatusCode: 200, Payload: []byte(`not json`)}, nil
	_, err = c.Score(context.Background(), expertgate.Request{TeamID: "t", Query: "q"})
	assert.True(t, apperr.Is(err, apperr.EINTERNAL))
}

// The agents a turn read go with the request, unless they would make the
// payload larger than Lambda accepts: then the gate reads them itself.
func TestClientSendsAgentsThatFit(t *testing.T) {
	ok, _ := json.Marshal(expertgate.Response{})
	inv := &invoker{out: &lambda.InvokeOutput{StatusCode: 200, Payload: ok}}
	c := &gateclient.Client{Lambda: inv, FunctionName: "gate"}
	sent := func() expertgate.Request {
		var r expertgate.Request
		require.NoError(t, json.Unmarshal(inv.got.Payload, &r))
		return r
	}
	_, err := c.Score(context.Background(), expertgate.Request{TeamID: "t", Query: "q", Agents: []agents.Agent{{Slug: "luke", Status: agents.StatusActive}}})
	require.NoError(t, err)
	require.Len(t, sent().Agents, 1)
	assert.Equal(t, "luke", sent().Agents[0].Slug)

	huge := agents.Agent{Slug: "big", Status: agents.StatusActive, Tagline: strings.Repeat("x", gateclient.MaxPayload)}
	_, err = c.Score(context.Background(), expertgate.Request{TeamID: "t", Query: "q", Agents: []agents.Agent{huge}})
	require.NoError(t, err)
	assert.Nil(t, sent().Agents)
	assert.Less(t, len(inv.got.Payload), 1000)
}
