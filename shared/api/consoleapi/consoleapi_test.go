package consoleapi_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/api/consoleapi"
)

func bundle(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "vendor"), 0o755))
	for name, body := range map[string]string{
		"index.html": "<!doctype html><title>Console</title>", "app.js": "export const a = 1;", "style.css": "body{}",
		"vendor/marked.esm.js": "export function marked() {}", "package.json": "{}", ".hidden.js": "x",
	} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
	}
	return dir
}

var local = consoleapi.Config{StreamURL: "http://127.0.0.1:14580",
	OIDC: &consoleapi.OIDC{Issuer: "http://127.0.0.1:4580/oidc/demo", ClientID: "conclave-local"}}

func get(t *testing.T, h *consoleapi.Handler, route string, params, headers map[string]string) events.APIGatewayV2HTTPResponse {
	t.Helper()
	res, err := h.Serve(context.Background(), events.APIGatewayV2HTTPRequest{RouteKey: route, PathParameters: params, Headers: headers,
		RequestContext: events.APIGatewayV2HTTPRequestContext{RequestID: "req-1"}})
	require.NoError(t, err)
	return res
}

func body(t *testing.T, res events.APIGatewayV2HTTPResponse) string {
	t.Helper()
	b := []byte(res.Body)
	if res.IsBase64Encoded {
		var err error
		b, err = base64.StdEncoding.DecodeString(res.Body)
		require.NoError(t, err)
	}
	if res.Headers["Content-Encoding"] == "gzip" {
		r, err := gzip.NewReader(bytes.NewReader(b))
		require.NoError(t, err)
		b, err = io.ReadAll(r)
		require.NoError(t, err)
	}
	return string(b)
}

func TestThePageAndItsFilesAreServedUnderAPolicyThatAllowsOnlyTheAPIs(t *testing.T) {
	h, err := consoleapi.Load(bundle(t), local)
	require.NoError(t, err)
	page := get(t, h, consoleapi.RouteIndex, nil, nil)
	require.Equal(t, 200, page.StatusCode)
	assert.Equal(t, "<!doctype html><title>Console</title>", body(t, page))
	assert.Equal(t, "text/html; charset=utf-8", page.Headers["Content-Type"])
	assert.Equal(t, "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "+
		"connect-src 'self' http://127.0.0.1:14580 http://127.0.0.1:4580; form-action 'none'; frame-ancestors 'none'; base-uri 'none'",
		page.Headers["Content-Security-Policy"])
	assert.Equal(t, "nosniff", page.Headers["X-Content-Type-Options"])
	assert.Equal(t, "DENY", page.Headers["X-Frame-Options"])
	assert.Equal(t, "no-referrer", page.Headers["Referrer-Policy"])

	js := get(t, h, consoleapi.RouteFile, map[string]string{"file": "app.js"}, nil)
	require.Equal(t, 200, js.StatusCode)
	assert.Equal(t, "text/javascript; charset=utf-8", js.Headers["Content-Type"], "a module script must be served as JavaScript")
	vendor := get(t, h, consoleapi.RouteVendor, map[string]string{"file": "marked.esm.js"}, nil)
	require.Equal(t, 200, vendor.StatusCode)
	assert.Equal(t, "export function marked() {}", body(t, vendor))

	var cfg map[string]any
	conf := get(t, h, consoleapi.RouteFile, map[string]string{"file": "config.json"}, nil)
	require.Equal(t, 200, conf.StatusCode)
	require.NoError(t, json.Unmarshal([]byte(body(t, conf)), &cfg))
	assert.Equal(t, map[string]any{"stream_url": "http://127.0.0.1:14580", "allow_remote_images": false,
		"oidc": map[string]any{"issuer": "http://127.0.0.1:4580/oidc/demo", "client_id": "conclave-local"}}, cfg)
}

func TestGzipAndRevalidation(t *testing.T) {
	h, err := consoleapi.Load(bundle(t), local)
	require.NoError(t, err)
	plain := get(t, h, consoleapi.RouteFile, map[string]string{"file": "style.css"}, nil)
	assert.Empty(t, plain.Headers["Content-Encoding"])
	zipped := get(t, h, consoleapi.RouteFile, map[string]string{"file": "style.css"}, map[string]string{"accept-encoding": "br, gzip"})
	assert.Equal(t, "gzip", zipped.Headers["Content-Encoding"])
	assert.Equal(t, "body{}", body(t, zipped))
	refused := get(t, h, consoleapi.RouteFile, map[string]string{"file": "style.css"}, map[string]string{"Accept-Encoding": "gzip;q=0"})
	assert.Empty(t, refused.Headers["Content-Encoding"])

	etag := plain.Headers["ETag"]
	require.NotEmpty(t, etag)
	same := get(t, h, consoleapi.RouteFile, map[string]string{"file": "style.css"}, map[string]string{"if-none-match": etag})
	assert.Equal(t, 304, same.StatusCode)
	assert.Empty(t, same.Body)
	other := get(t, h, consoleapi.RouteFile, map[string]string{"file": "style.css"}, map[string]string{"if-none-match": `"0"`})
	assert.Equal(t, 200, other.StatusCode)
}

// Only the bundle's own files answer: not its package files, not a hidden
// file, not a path that climbs out, not a name with another extension.
func TestAnythingElseIsAJSONNotFound(t *testing.T) {
	h, err := consoleapi.Load(bundle(t), local)
	require.NoError(t, err)
	for _, tc := range []struct{ route, file string }{
		{consoleapi.RouteFile, "nope.js"}, {consoleapi.RouteFile, "package.json"}, {consoleapi.RouteFile, ".hidden.js"},
		{consoleapi.RouteFile, "..%2Findex.html"}, {consoleapi.RouteFile, "../index.html"}, {consoleapi.RouteVendor, "../app.js"},
		{consoleapi.RouteFile, "marked.esm.js"}, {consoleapi.RouteVendor, "index.html"}, {consoleapi.RouteFile, ""},
		{"GET /v1/agents", "app.js"},
	} {
		res := get(t, h, tc.route, map[string]string{"file": tc.file}, nil)
		require.Equal(t, 404, res.StatusCode, tc)
		assert.Equal(t, "application/json", res.Headers["Content-Type"])
		var e struct {
			Error struct{ Code, Field string } `json:"error"`
		}
		require.NoError(t, json.Unmarshal([]byte(res.Body), &e))
		assert.Equal(t, "not_found", e.Error.Code)
	}
}

func TestWithoutAProviderOrAStreamThePolicyAllowsThisOriginOnly(t *testing.T) {
	assert.Contains(t, consoleapi.CSP(consoleapi.Config{}), "connect-src 'self';")
	h, err := consoleapi.Load(bundle(t), consoleapi.Config{})
	require.NoError(t, err)
	conf := get(t, h, consoleapi.RouteFile, map[string]string{"file": "config.json"}, nil)
	assert.JSONEq(t, `{"stream_url": "", "oidc": null, "allow_remote_images": false}`, body(t, conf))
}

func TestABundleWithoutItsPageIsRefused(t *testing.T) {
	_, err := consoleapi.Load(t.TempDir(), local)
	assert.ErrorContains(t, err, "no index.html")
}

// The provider's token endpoint is often on another origin than its
// issuer (Cognito's hosted domain): read from its discovery document at
// the first request, it joins the policy and config.json.
func TestTheProvidersTokenEndpointIsAllowed(t *testing.T) {
	var issuer string
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.Equal(t, "/pool/.well-known/openid-configuration", r.URL.Path)
		_ = json.NewEncoder(w).Encode(map[string]string{"issuer": issuer, "token_endpoint": "https://login.example.com/oauth2/token"})
	}))
	defer idp.Close()
	issuer = idp.URL + "/pool"
	h, err := consoleapi.Load(bundle(t), consoleapi.Config{StreamURL: "https://stream.example.com/dev", OIDC: &consoleapi.OIDC{Issuer: issuer, ClientID: "app"}})
	require.NoError(t, err)
	h.WithDiscovery(idp.Client(), slog.New(slog.DiscardHandler))
	page := get(t, h, consoleapi.RouteIndex, nil, nil)
	assert.Contains(t, page.Headers["Content-Security-Policy"], "connect-src 'self' https://stream.example.com "+idp.URL+" https://login.example.com;")
	var cfg struct{ OIDC consoleapi.OIDC }
	require.NoError(t, json.Unmarshal([]byte(body(t, get(t, h, consoleapi.RouteFile, map[string]string{"file": "config.json"}, nil))), &cfg))
	assert.Equal(t, "https://login.example.com/oauth2/token", cfg.OIDC.TokenEndpoint)
}

// A provider that cannot be read leaves its issuer's origin alone allowed,
// and the console answers.
func TestAProviderThatCannotBeReadLeavesTheIssuerAlone(t *testing.T) {
	idp := httptest.NewServer(http.NotFoundHandler())
	defer idp.Close()
	h, err := consoleapi.Load(bundle(t), consoleapi.Config{OIDC: &consoleapi.OIDC{Issuer: idp.URL, ClientID: "app"}})
	require.NoError(t, err)
	h.WithDiscovery(idp.Client(), slog.New(slog.DiscardHandler))
	page := get(t, h, consoleapi.RouteIndex, nil, nil)
	require.Equal(t, 200, page.StatusCode)
	assert.Contains(t, page.Headers["Content-Security-Policy"], "connect-src 'self' "+idp.URL+";")
	_, err = consoleapi.Discover(context.Background(), idp.Client(), idp.URL)
	assert.ErrorContains(t, err, "discovery answered 404")
}
