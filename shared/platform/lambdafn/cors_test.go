package lambdafn_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
)

// A streamed answer names a listed origin, and only a listed one.
func TestAStreamerEchoesOnlyAListedOrigin(t *testing.T) {
	const app = "https://chat.example.com"
	stream := lambdafn.Streamer(func(context.Context, events.APIGatewayProxyRequest) (*events.APIGatewayProxyStreamingResponse, error) {
		return &events.APIGatewayProxyStreamingResponse{StatusCode: 200,
			Headers: map[string]string{"Content-Type": "text/event-stream"}, Body: strings.NewReader("data: x\n\n")}, nil
	}).AllowOrigins([]string{app, "http://localhost:5173"})
	for _, c := range []struct {
		name    string
		ev      events.APIGatewayProxyRequest
		allowed string
	}{
		{"a listed origin", events.APIGatewayProxyRequest{Headers: map[string]string{"Origin": app}}, app},
		{"lower-case header (HTTP/2)", events.APIGatewayProxyRequest{Headers: map[string]string{"origin": app}}, app},
		{"multi-value header", events.APIGatewayProxyRequest{MultiValueHeaders: map[string][]string{"Origin": {app}}}, app},
		{"an unlisted origin", events.APIGatewayProxyRequest{Headers: map[string]string{"Origin": "https://evil.example"}}, ""},
		{"a listed origin's lookalike", events.APIGatewayProxyRequest{Headers: map[string]string{"Origin": app + ".evil.example"}}, ""},
		{"two origins", events.APIGatewayProxyRequest{MultiValueHeaders: map[string][]string{"Origin": {app, "https://evil.example"}}}, ""},
		{"no origin (a server)", events.APIGatewayProxyRequest{}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			// WHEN the function answers the request
			resp, err := stream(t.Context(), c.ev)
			require.NoError(t, err)
			// THEN the origin is echoed if listed, and the answer varies by it
			assert.Equal(t, "Origin", resp.Headers["Vary"])
			assert.Equal(t, "text/event-stream", resp.Headers["Content-Type"], "the function's headers stay")
			if c.allowed == "" {
				assert.NotContains(t, resp.Headers, "Access-Control-Allow-Origin")
				assert.NotContains(t, resp.Headers, "Access-Control-Expose-Headers")
				return
			}
			assert.Equal(t, c.allowed, resp.Headers["Access-Control-Allow-Origin"])
			assert.Equal(t, "Retry-After,X-Request-Id,X-Trace-Id,traceresponse", resp.Headers["Access-Control-Expose-Headers"])
			assert.NotContains(t, resp.Headers, "Access-Control-Allow-Credentials", "the credential is a header, never a cookie")
		})
	}
}

// A stage that lists no origin adds nothing; an earlier Vary is kept.
func TestAStreamerWithoutOriginsIsUnchanged(t *testing.T) {
	answer := func(context.Context, events.APIGatewayProxyRequest) (*events.APIGatewayProxyStreamingResponse, error) {
		return &events.APIGatewayProxyStreamingResponse{StatusCode: 200, Headers: map[string]string{"Vary": "Accept"}}, nil
	}
	ev := events.APIGatewayProxyRequest{Headers: map[string]string{"Origin": "https://chat.example.com"}}
	resp, err := lambdafn.Streamer(answer).AllowOrigins(nil)(t.Context(), ev)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"Vary": "Accept"}, resp.Headers)

	resp, err = lambdafn.Streamer(answer).AllowOrigins([]string{"https://chat.example.com"})(t.Context(), ev)
	require.NoError(t, err)
	assert.Equal(t, "Accept, Origin", resp.Headers["Vary"])
	assert.Equal(t, "https://chat.example.com", resp.Headers["Access-Control-Allow-Origin"])
}
