package mcppack

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/tools/toolpacks"
)

type echoIn struct {
	Text string `json:"text"`
	Size int    `json:"size,omitempty"`
}

// server is an MCP server of the Go SDK on loopback, with a tool that
// echoes (or answers size bytes) and a record of the Authorization
// headers it received.
func server(t *testing.T) (*httptest.Server, *[]string) {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "echoes"}, func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
		text := "echo: " + in.Text
		if in.Size > 0 {
			text = strings.Repeat("x", in.Size)
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
	})
	var mu sync.Mutex
	auth := &[]string{}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		*auth = append(*auth, r.Header.Get("Authorization"))
		mu.Unlock()
		if r.URL.Path == "/moved" {
			http.Redirect(w, r, "/mcp", http.StatusTemporaryRedirect)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, auth
}

// The client lists and calls over streamable HTTP with the credential on
// every request.
func TestListAndCall(t *testing.T) {
	srv, auth := server(t)
	c := &Client{Policy: toolpacks.NetPolicy{LoopbackOnly: true}}
	conn := toolpacks.Conn{URL: srv.URL + "/mcp", Credential: "tok"}
	tools, err := c.ListTools(context.Background(), conn)
	require.NoError(t, err)
	require.Len(t, tools, 1)
	assert.Equal(t, "echo", tools[0].Name)
	var schema map[string]any
	require.NoError(t, json.Unmarshal(tools[0].InputSchema, &schema))
	assert.Equal(t, "object", schema["type"])
	res, err := c.CallTool(context.Background(), conn, "echo", json.RawMessage(`{"text":"hi"}`))
	require.NoError(t, err)
	assert.Equal(t, "echo: hi", res.Text)
	assert.False(t, res.IsError)
	require.NotEmpty(t, *auth)
	for _, a := range *auth {
		assert.Equal(t, "Bearer tok", a)
	}
}

// No answer is read past MaxResponseBytes; a redirect is not followed.
func TestBoundsAndRedirects(t *testing.T) {
	srv, _ := server(t)
	c := &Client{Policy: toolpacks.NetPolicy{LoopbackOnly: true}}
	conn := toolpacks.Conn{URL: srv.URL + "/mcp"}
	res, err := c.CallTool(context.Background(), conn, "echo", json.RawMessage(`{"text":"","size":1000}`))
	require.NoError(t, err)
	assert.Len(t, res.Text, 1000)
	_, err = c.CallTool(context.Background(), conn, "echo", json.RawMessage(`{"text":"","size":1100000}`))
	assert.Error(t, err, "an answer past the limit fails")
	_, err = c.ListTools(context.Background(), toolpacks.Conn{URL: srv.URL + "/moved"})
	assert.Error(t, err, "a redirect is not followed")
}

// Deployed, a connection to a loopback address is refused by the dialer
// itself, whatever name led there (DNS rebinding), and the URL check
// refuses http and loopback before any connection.
func TestTheDialerChecksTheAddressItConnectsTo(t *testing.T) {
	srv, auth := server(t)
	c := &Client{}
	hc, _ := c.httpClient(toolpacks.Conn{})
	resp, err := hc.Get(srv.URL + "/mcp")
	if resp != nil {
		resp.Body.Close()
	}
	require.Error(t, err)
	assert.True(t, errors.Is(err, errAddress), "%v", err)
	assert.Empty(t, *auth, "nothing reached the server")
	_, err = c.ListTools(context.Background(), toolpacks.Conn{URL: srv.URL + "/mcp"})
	e, ok := apperr.As(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, toolpacks.ReasonURLRefused, e.Reason)
	assert.Equal(t, apperr.EREJECTED, refusedOr(errAddress).(*apperr.Error).Code)
}
