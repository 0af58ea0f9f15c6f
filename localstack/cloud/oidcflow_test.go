package cloud_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/localstack/cloud"
)

// flowIssuers serves issuers whose clock the test moves.
func flowIssuers(t *testing.T, origins ...string) (*cloud.Issuers, *httptest.Server, *time.Time) {
	t.Helper()
	now := time.Unix(1_800_000_000, 0)
	is := cloud.NewIssuers("http://placeholder/oidc", origins...)
	is.Now = func() time.Time { return now }
	srv := httptest.NewServer(is)
	t.Cleanup(srv.Close)
	is.Base = srv.URL + "/oidc"
	return is, srv, &now
}

const verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk" // RFC 7636, appendix B

func challengeOf(v string) string {
	sum := sha256.Sum256([]byte(v))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// code signs in through the login form and returns the redirect's code.
func code(t *testing.T, srv *httptest.Server, redirect string) string {
	t.Helper()
	form := url.Values{"response_type": {"code"}, "client_id": {"app"}, "redirect_uri": {redirect}, "state": {"s"},
		"code_challenge": {challengeOf(verifier)}, "code_challenge_method": {"S256"}, "nonce": {"n0"}, "user": {"alice"}, "admin": {"1"}}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.PostForm(srv.URL+"/oidc/demo/authorize", form)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	loc, err := url.Parse(resp.Header.Get("Location"))
	require.NoError(t, err)
	return loc.Query().Get("code")
}

func exchange(t *testing.T, srv *httptest.Server, code, redirect string) (int, map[string]any) {
	t.Helper()
	resp, err := http.PostForm(srv.URL+"/oidc/demo/token", url.Values{"grant_type": {"authorization_code"}, "code": {code},
		"redirect_uri": {redirect}, "client_id": {"app"}, "code_verifier": {verifier}})
	require.NoError(t, err)
	defer resp.Body.Close()
	out := map[string]any{}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return resp.StatusCode, out
}

// The code flow's token is the issuer's, for the client, the user and
// the nonce of the request, and verifies with the issuer's published key.
func TestTheIssuersCodeFlowGivesAVerifiableToken(t *testing.T) {
	is, srv, _ := flowIssuers(t, "https://chat.example.com")
	redirect := "https://chat.example.com/callback?from=app"
	st, out := exchange(t, srv, code(t, srv, redirect), redirect)
	require.Equal(t, 200, st, out)

	tok, err := jwt.ParseSigned(out["id_token"].(string), []jose.SignatureAlgorithm{jose.RS256})
	require.NoError(t, err)
	var jwks jose.JSONWebKeySet
	resp, err := http.Get(is.URL("demo") + "/jwks")
	require.NoError(t, err)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&jwks))
	resp.Body.Close()
	var claims struct {
		jwt.Claims
		Nonce  string   `json:"nonce"`
		Groups []string `json:"groups"`
	}
	require.NoError(t, tok.Claims(jwks.Keys[0].Key, &claims))
	assert.Equal(t, is.URL("demo"), claims.Issuer)
	assert.Equal(t, "alice", claims.Subject)
	assert.Equal(t, jwt.Audience{"app"}, claims.Audience)
	assert.Equal(t, "n0", claims.Nonce)
	assert.Equal(t, []string{cloud.OIDCAdminGroup}, claims.Groups)
}

// A code is good for CodeTTL by the issuer's clock, and once.
func TestAnIssuersCodeExpiresAndIsSpent(t *testing.T) {
	_, srv, now := flowIssuers(t)
	redirect := "http://127.0.0.1:8765/cb"
	c := code(t, srv, redirect)
	*now = now.Add(cloud.CodeTTL - time.Second)
	st, _ := exchange(t, srv, c, redirect)
	assert.Equal(t, 200, st, "a second before its end")
	st, out := exchange(t, srv, c, redirect)
	assert.Equal(t, 400, st)
	assert.Equal(t, "invalid_grant", out["error"], "spent")

	c = code(t, srv, redirect)
	*now = now.Add(cloud.CodeTTL)
	st, out = exchange(t, srv, c, redirect)
	assert.Equal(t, 400, st)
	assert.Equal(t, "invalid_grant", out["error"], "at its end")
}

// The login page asks for nothing a strict policy forbids.
func TestTheLoginPageNeedsNoScript(t *testing.T) {
	_, srv, _ := flowIssuers(t)
	q := url.Values{"response_type": {"code"}, "client_id": {"app"}, "redirect_uri": {"http://localhost:5173/"}, "state": {`"><script>x</script>`},
		"code_challenge": {challengeOf(verifier)}, "code_challenge_method": {"S256"}}
	resp, err := http.Get(srv.URL + "/oidc/demo/authorize?" + q.Encode())
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	var page strings.Builder
	_, _ = io.Copy(&page, resp.Body)
	assert.NotContains(t, page.String(), "<script", "no script, and the state is escaped")
	assert.NotContains(t, page.String(), "style=")
	assert.Equal(t, "default-src 'none'; form-action 'self' http://localhost:5173; frame-ancestors 'none'", resp.Header.Get("Content-Security-Policy"))
}
