// Package apitest is the HTTP client the end-to-end suite (infra/e2e) and
// the local cloud's integration tests (localstack/cloud) share: a request
// to the API with a team's key, and the answer as status, headers and body.
// It is imported by tests only.
package apitest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Client calls the API at Base with the API key Key (none when empty).
type Client struct {
	Base, Key string
	T         testing.TB
}

// Response is an API answer.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body as a JSON object.
func (r Response) JSON(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(r.Body, &m), string(r.Body))
	return m
}

// ErrorFields returns code, field and reason of an error response.
func (r Response) ErrorFields(t testing.TB) (code, field, reason string) {
	t.Helper()
	e, ok := r.JSON(t)["error"].(map[string]any)
	require.True(t, ok, "error shape: %s", r.Body)
	code, _ = e["code"].(string)
	field, _ = e["field"].(string)
	reason, _ = e["reason"].(string)
	return
}

// Do sends method path with body (nil, a raw string, or a value sent as
// JSON) and header name/value pairs.
func (c Client) Do(method, path string, body any, headers ...string) Response {
	c.T.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		require.NoError(c.T, err)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, c.Base+path, rd)
	require.NoError(c.T, err)
	if c.Key != "" {
		req.Header.Set("X-Api-Key", c.Key)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(c.T, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(c.T, err)
	return Response{resp.StatusCode, resp.Header, raw}
}
