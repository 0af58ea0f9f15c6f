//go:build integration

// The local issuer's authorization-code flow with PKCE (issue 44, item 7),
// driven as a browser app would drive it, with a plain HTTP client: the
// login page, its form, the redirect, the code's redemption and the token
// it gives, used on the API.
package cloud_test

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/infra/e2e/apitest"
	"github.com/conclave-ai/conclave/localstack/cloud"
)

// appRedirect is a browser app's callback on a loopback dev server.
const appRedirect = "http://localhost:5173/callback"

// pkce is a fresh verifier and its S256 challenge.
func pkce(t *testing.T) (verifier, challenge string) {
	t.Helper()
	b := make([]byte, 32)
	_, err := rand.Read(b)
	require.NoError(t, err)
	verifier = base64.RawURLEncoding.EncodeToString(b)
	sum := sha256.Sum256([]byte(verifier))
	return verifier, base64.RawURLEncoding.EncodeToString(sum[:])
}

// noRedirects is a client that shows redirects instead of following them.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func authorizeQuery(redirect, challenge string) url.Values {
	return url.Values{"response_type": {"code"}, "client_id": {cloud.OIDCAudience}, "redirect_uri": {redirect},
		"state": {"st-1"}, "code_challenge": {challenge}, "code_challenge_method": {"S256"}, "nonce": {"n-1"}, "scope": {"openid"}}
}

// signIn loads the login page, posts its form as user and returns the
// code the redirect carries.
func signIn(t *testing.T, issuer, user string, admin bool, challenge string) string {
	t.Helper()
	q := authorizeQuery(appRedirect, challenge)
	resp, err := http.Get(issuer + "/authorize?" + q.Encode())
	require.NoError(t, err)
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode, string(page))
	assert.Contains(t, resp.Header.Get("Content-Type"), "text/html")
	assert.Contains(t, resp.Header.Get("Content-Security-Policy"), "default-src 'none'")
	assert.Contains(t, string(page), `<form method="post" action="authorize">`)
	assert.NotContains(t, string(page), "<script", "the page works under a strict CSP")

	form := url.Values{"user": {user}}
	for k := range q { // the page's hidden fields
		form.Set(k, q.Get(k))
	}
	if admin {
		form.Set("admin", "1")
	}
	resp, err = noRedirects.PostForm(issuer+"/authorize", form)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	to, err := url.Parse(resp.Header.Get("Location"))
	require.NoError(t, err)
	assert.Equal(t, "localhost:5173", to.Host)
	assert.Equal(t, "/callback", to.Path)
	assert.Equal(t, "st-1", to.Query().Get("state"))
	require.NotEmpty(t, to.Query().Get("code"))
	return to.Query().Get("code")
}

// redeem posts the code to the token endpoint.
func redeem(t *testing.T, issuer string, form url.Values) (int, map[string]any) {
	t.Helper()
	resp, err := http.PostForm(issuer+"/token", form)
	require.NoError(t, err)
	defer resp.Body.Close()
	out := map[string]any{}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	assert.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
	return resp.StatusCode, out
}

func redemption(code, verifier string) url.Values {
	return url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {appRedirect},
		"client_id": {cloud.OIDCAudience}, "code_verifier": {verifier}}
}

func TestTheCodeFlowSignsAPersonIn(t *testing.T) {
	e := mustEnv(t)
	it := newIssuerTeam(t, e)
	var disc map[string]any
	require.NoError(t, json.Unmarshal(apitest.Client{Base: it.issuer, T: t}.Do("GET", "/.well-known/openid-configuration", nil).Body, &disc))
	assert.Equal(t, it.issuer+"/authorize", disc["authorization_endpoint"])
	assert.Equal(t, it.issuer+"/token", disc["token_endpoint"])
	assert.Equal(t, []any{"S256"}, disc["code_challenge_methods_supported"])

	for _, admin := range []bool{false, true} {
		verifier, challenge := pkce(t)
		code := signIn(t, it.issuer, "carol", admin, challenge)
		st, tok := redeem(t, it.issuer, redemption(code, verifier))
		require.Equal(t, 200, st, tok)
		assert.Equal(t, "Bearer", tok["token_type"])
		assert.Equal(t, tok["id_token"], tok["access_token"])
		st, b := withToken(t, tok["id_token"].(string), "GET", "/v1/agents", nil)
		require.Equal(t, 200, st, b)
		if admin { // the team's own record is an admin's to read
			st, b = withToken(t, tok["id_token"].(string), "GET", "/v1/team", nil)
			require.Equal(t, 200, st, b)
			assert.Equal(t, it.id, b["id"], "the signed-in person acts in the team that registered the issuer")
		}

		st, b = redeem(t, it.issuer, redemption(code, verifier))
		assert.Equal(t, 400, st)
		assert.Equal(t, "invalid_grant", b["error"], "a code is good once")
	}
}

func TestTheCodeFlowRefusesMismatches(t *testing.T) {
	e := mustEnv(t)
	it := newIssuerTeam(t, e)
	verifier, challenge := pkce(t)
	other, _ := pkce(t)

	code := signIn(t, it.issuer, "dave", false, challenge)
	st, b := redeem(t, it.issuer, redemption(code, other))
	assert.Equal(t, 400, st)
	assert.Equal(t, "invalid_grant", b["error"], "a wrong verifier")
	st, b = redeem(t, it.issuer, redemption(code, verifier))
	assert.Equal(t, "invalid_grant", b["error"], "a code tried with a wrong verifier is spent")

	for name, change := range map[string]func(url.Values){
		"another client_id":    func(f url.Values) { f.Set("client_id", "someone-else") },
		"another redirect_uri": func(f url.Values) { f.Set("redirect_uri", "http://localhost:5173/other") },
		"another issuer's code": func(f url.Values) {
			f.Set("code", signIn(t, oidcBase(t)+"/"+freshName(), "dave", false, challenge))
		},
	} {
		f := redemption(signIn(t, it.issuer, "dave", false, challenge), verifier)
		change(f)
		st, b := redeem(t, it.issuer, f)
		assert.Equal(t, 400, st, name)
		assert.Equal(t, "invalid_grant", b["error"], name)
	}
	st, b = redeem(t, it.issuer, url.Values{"grant_type": {"authorization_code"}, "code": {"x"}})
	assert.Equal(t, "invalid_request", b["error"], "missing fields")
	st, b = redeem(t, it.issuer, url.Values{"grant_type": {"password"}})
	assert.Equal(t, "unsupported_grant_type", b["error"])

	// The issuer's clock moved past the code's minute.
	code = signIn(t, it.issuer, "dave", false, challenge)
	resp := apitest.Client{Base: it.issuer, T: t}.Do("POST", "/clock", map[string]any{"advance_seconds": int(cloud.CodeTTL.Seconds()) + 1})
	require.Equal(t, 204, resp.Status, string(resp.Body))
	st, b = redeem(t, it.issuer, redemption(code, verifier))
	assert.Equal(t, 400, st)
	assert.Equal(t, "invalid_grant", b["error"], "an expired code")
	assert.Contains(t, b["error_description"], "expired")
}

func TestTheLoginPageRefusesBadRequests(t *testing.T) {
	issuer := oidcBase(t) + "/" + freshName()
	_, challenge := pkce(t)
	for name, c := range map[string]struct{ key, value string }{
		"a foreign redirect_uri":   {"redirect_uri", "https://evil.example/callback"},
		"a loopback lookalike":     {"redirect_uri", "http://localhost.evil.example/cb"},
		"a redirect with fragment": {"redirect_uri", appRedirect + "#x"},
		"plain PKCE":               {"code_challenge_method", "plain"},
		"no PKCE":                  {"code_challenge", ""},
		"response_type token":      {"response_type", "token"},
		"no state":                 {"state", ""},
	} {
		q := authorizeQuery(appRedirect, challenge)
		q.Set(c.key, c.value)
		for _, post := range []bool{false, true} {
			var resp *http.Response
			var err error
			if post {
				q.Set("user", "erin")
				resp, err = noRedirects.PostForm(issuer+"/authorize", q)
			} else {
				resp, err = noRedirects.Get(issuer + "/authorize?" + q.Encode())
			}
			require.NoError(t, err)
			var b map[string]any
			_ = json.NewDecoder(resp.Body).Decode(&b)
			resp.Body.Close()
			assert.Equal(t, 400, resp.StatusCode, name)
			assert.Equal(t, "invalid_request", b["error"], name)
			assert.Empty(t, resp.Header.Get("Location"), "%s: never redirected", name)
		}
	}
	q := authorizeQuery(appRedirect, challenge)
	q.Set("user", "not a user id")
	resp, err := noRedirects.PostForm(issuer+"/authorize", q)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, 400, resp.StatusCode, "a user id with spaces")
	assert.True(t, strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json"))
}
