// Package mcppack is the MCP packs' adapter (toolpacks.MCP): it speaks
// to a team's MCP server over streamable HTTP with the official Go SDK
// (github.com/modelcontextprotocol/go-sdk), one session per call (a
// Lambda invocation has no connection to keep).
//
// Every connection goes through a dialer that checks the address it is
// about to use against the network policy (toolpacks.NetPolicy): the name
// is resolved by the dialer, and the address checked is the one the
// socket connects to, so DNS rebinding cannot reach a private address.
// No proxy is used (a proxy would hide the address), redirects are not
// followed, and no response is read past toolpacks.MaxResponseBytes.
package mcppack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/tracing/httptrace"
	"github.com/conclave-ai/conclave/shared/tools/toolpacks"
)

// Client implements toolpacks.MCP.
type Client struct {
	Policy toolpacks.NetPolicy
	// Version is the client version the server is told.
	Version string
}

var _ toolpacks.MCP = (*Client)(nil)

// errAddress is a connection the policy refused.
var errAddress = toolpacks.ErrAddress

// httpClient is a client for one server: the policy's dialer, the
// credential's headers, no proxy, no redirect, bounded bodies. Its
// transport is the caller's to close (its idle connections would
// otherwise outlive the call in a warm function).
func (c *Client) httpClient(conn toolpacks.Conn) (*http.Client, *http.Transport) {
	tr := &http.Transport{Proxy: nil, DialContext: c.Policy.Dialer().DialContext, ForceAttemptHTTP2: true,
		TLSHandshakeTimeout: 5 * time.Second, ResponseHeaderTimeout: toolpacks.CallTimeout, MaxIdleConns: 2}
	return &http.Client{
		Transport: httptrace.Transport(&headers{base: tr, set: conn.Headers()}, "mcp"),
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return errors.New("the MCP server answered with a redirect; give its final URL")
		},
	}, tr
}

// headers adds the credential to every request and bounds every body.
type headers struct {
	base http.RoundTripper
	set  map[string]string
}

func (h *headers) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.set {
		r.Header.Set(k, v)
	}
	resp, err := h.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	resp.Body = &bounded{r: resp.Body, left: toolpacks.MaxResponseBytes}
	return resp, nil
}

// bounded fails a body past its size instead of reading on.
type bounded struct {
	r    io.ReadCloser
	left int64
}

func (b *bounded) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, fmt.Errorf("the MCP server's answer is larger than %d bytes", toolpacks.MaxResponseBytes)
	}
	// One byte past the limit is read to tell "exactly the limit" from
	// "more".
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return 0, fmt.Errorf("the MCP server's answer is larger than %d bytes", toolpacks.MaxResponseBytes)
	}
	return n, err
}

func (b *bounded) Close() error { return b.r.Close() }

// connect opens a session; close ends it and drops its connections.
func (c *Client) connect(ctx context.Context, conn toolpacks.Conn) (s *mcp.ClientSession, closeAll func(), err error) {
	if err := c.Policy.CheckURL(conn.URL); err != nil {
		return nil, nil, err
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "conclave", Version: cmpOr(c.Version, "1")}, nil)
	hc, tr := c.httpClient(conn)
	t := &mcp.StreamableClientTransport{Endpoint: conn.URL, HTTPClient: hc, MaxRetries: -1,
		// A call is one request and its answer: no standing stream.
		DisableStandaloneSSE: true, MaxEventSize: toolpacks.MaxResponseBytes}
	s, err = client.Connect(ctx, t, nil)
	if err != nil {
		tr.CloseIdleConnections()
		return nil, nil, refusedOr(err)
	}
	return s, func() {
		_ = s.Close()
		tr.CloseIdleConnections()
	}, nil
}

// refusedOr maps a connection the policy refused to EREJECTED.
func refusedOr(err error) error {
	if errors.Is(err, errAddress) || strings.Contains(err.Error(), errAddress.Error()) {
		return apperr.Wrap(apperr.EREJECTED, err, "the MCP server's address is outside what MCP packs may reach").WithReason(toolpacks.ReasonURLRefused)
	}
	return err
}

// ListTools implements toolpacks.MCP: every page of tools/list.
func (c *Client) ListTools(ctx context.Context, conn toolpacks.Conn) ([]toolpacks.MCPTool, error) {
	s, closeAll, err := c.connect(ctx, conn)
	if err != nil {
		return nil, err
	}
	defer closeAll()
	var out []toolpacks.MCPTool
	for t, err := range s.Tools(ctx, nil) {
		if err != nil {
			return nil, refusedOr(err)
		}
		schema, err := json.Marshal(t.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("tool %q: unreadable input schema: %w", t.Name, err)
		}
		out = append(out, toolpacks.MCPTool{Name: t.Name, Description: t.Description, InputSchema: schema})
		if len(out) > toolpacks.MaxMCPTools {
			break // enough to refuse the pack (toolpacks.modelTools)
		}
	}
	return out, nil
}

// CallTool implements toolpacks.MCP: the text of the result's content
// (text parts as they are; any other part named by its kind), or its
// structured content as JSON when it has no text.
func (c *Client) CallTool(ctx context.Context, conn toolpacks.Conn, tool string, args json.RawMessage) (toolpacks.CallResult, error) {
	s, closeAll, err := c.connect(ctx, conn)
	if err != nil {
		return toolpacks.CallResult{}, err
	}
	defer closeAll()
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	// The arguments as the model wrote them (decoded, a large integer
	// would lose digits as a float).
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return toolpacks.CallResult{}, refusedOr(err)
	}
	var parts []string
	for _, ct := range res.Content {
		switch v := ct.(type) {
		case *mcp.TextContent:
			parts = append(parts, v.Text)
		case *mcp.ImageContent:
			parts = append(parts, "[an image, "+v.MIMEType+", not shown]")
		case *mcp.AudioContent:
			parts = append(parts, "[audio, "+v.MIMEType+", not shown]")
		default:
			raw, _ := json.Marshal(ct)
			parts = append(parts, string(raw))
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		raw, _ := json.Marshal(res.StructuredContent)
		parts = append(parts, string(raw))
	}
	return toolpacks.CallResult{Text: strings.Join(parts, "\n"), IsError: res.IsError}, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
