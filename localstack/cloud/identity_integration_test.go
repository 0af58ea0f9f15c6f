//go:build integration

// End-user sign-in (issue 44, items 1 and 7): real tokens signed by the
// local OpenID Connect issuers (localstack/cloud/oidc.go), verified by
// the authorizer for a team that registered the issuer with
// PUT /v1/team/identity.
package cloud_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/infra/e2e/apitest"
	"github.com/conclave-ai/conclave/localstack/cloud"
	"github.com/conclave-ai/conclave/shared/team/teams"
)

// issuerTeam is a fresh team and a fresh local issuer registered with it.
type issuerTeam struct {
	demoTeam
	issuer string // its URL
}

func oidcBase(t *testing.T) string {
	t.Helper()
	base := os.Getenv("CONCLAVE_BASE_URL")
	require.NotEmpty(t, base)
	return base + "/oidc"
}

func freshName() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "it" + hex.EncodeToString(b)
}

// newIssuerTeam makes a team and registers a fresh issuer with it.
func newIssuerTeam(t *testing.T, e env) issuerTeam {
	t.Helper()
	tm, k, err := teams.NewService(e.db.teams).CreateTeam(t.Context(), "identity")
	require.NoError(t, err)
	it := issuerTeam{demoTeam: demoTeam{id: tm.ID, key: k.Secret, t: t}, issuer: oidcBase(t) + "/" + freshName()}
	st, b := it.call("PUT", "/v1/team/identity", map[string]any{"issuer": it.issuer, "audiences": []string{cloud.OIDCAudience},
		"admin_claim": cloud.OIDCAdminClaim, "admin_value": cloud.OIDCAdminGroup})
	require.Equal(t, 200, st, b)
	return it
}

// mint asks the issuer for a token.
func mint(t *testing.T, issuer string, req cloud.TokenRequest) string {
	t.Helper()
	resp := apitest.Client{Base: issuer, T: t}.Do("POST", "/token", req)
	require.Equal(t, 200, resp.Status, string(resp.Body))
	return resp.JSON(t)["id_token"].(string)
}

// withToken calls the API with a bearer token.
func withToken(t *testing.T, token, method, path string, body any) (int, map[string]any) {
	t.Helper()
	resp := apitest.Client{Base: os.Getenv("CONCLAVE_BASE_URL"), T: t}.Do(method, path, body, "Authorization", "Bearer "+token)
	out := map[string]any{}
	if len(resp.Body) > 0 {
		_ = json.Unmarshal(resp.Body, &out)
	}
	return resp.Status, out
}

// A token acts as the team that registered its issuer, with its role: an
// admin calls every route, a member the routes a member may (the role
// table: shared/wire/roles_test.go).
func TestATokenActsAsItsTeamWithItsRole(t *testing.T) {
	e := mustEnv(t)
	it := newIssuerTeam(t, e)
	admin := mint(t, it.issuer, cloud.TokenRequest{User: "root", Admin: true})
	st, b := withToken(t, admin, "GET", "/v1/team", nil)
	require.Equal(t, 200, st, b)
	assert.Equal(t, it.id, b["id"], "the token acts as the team that registered its issuer")
	member := mint(t, it.issuer, cloud.TokenRequest{User: "alice"})
	st, b = withToken(t, member, "GET", "/v1/team", nil)
	assert.Equal(t, 403, st, "a member reads no team settings: %v", b)
	for _, tok := range []string{admin, member} {
		st, _ = withToken(t, tok, "GET", "/v1/agents", nil)
		assert.Equal(t, 200, st)
		st, b = withToken(t, tok, "POST", "/v1/conversations", map[string]any{"title": "by token"})
		assert.Equal(t, 201, st, b)
	}
	st, _ = withToken(t, "", "GET", "/v1/agents", nil)
	assert.Equal(t, 403, st, "an empty bearer token")
	resp := apitest.Client{Base: os.Getenv("CONCLAVE_BASE_URL"), T: t}.Do("GET", "/v1/agents", nil)
	assert.Equal(t, 401, resp.Status, "no credential at all")
	assert.Len(t, it.list("/v1/conversations").items, 2, "one conversation per token")
}

// forged tokens: each refused (403), on a read route and a write route,
// and nothing is written.
func TestForgedAndInvalidTokensAreRefused(t *testing.T) {
	e := mustEnv(t)
	it := newIssuerTeam(t, e)
	valid := mint(t, it.issuer, cloud.TokenRequest{User: "alice"})
	st, _ := withToken(t, valid, "GET", "/v1/agents", nil)
	require.Equal(t, 200, st, "the valid token passes (and the issuer's keys are cached)")
	parts := strings.Split(valid, ".")
	require.Len(t, parts, 3)
	kid := jwksKid(t, it.issuer)

	var claims map[string]any
	raw, _ := base64.RawURLEncoding.DecodeString(parts[1])
	require.NoError(t, json.Unmarshal(raw, &claims))
	tampered := map[string]any{}
	for k, v := range claims {
		tampered[k] = v
	}
	tampered["sub"] = "mallory"
	tamperedJSON, _ := json.Marshal(tampered)

	none := b64(`{"alg":"none","typ":"JWT"}`) + "." + parts[1] + "."
	own, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	unknownKid, err := cloud.SignToken(&jose.JSONWebKey{Key: own, KeyID: "not-" + kid, Algorithm: string(jose.RS256)}, claims)
	require.NoError(t, err)
	hmac := hmacWithPublicKey(t, it.issuer, kid, claims)

	cases := map[string]string{
		"expired":            mint(t, it.issuer, cloud.TokenRequest{User: "alice", ExpiresIn: -120}),
		"not yet valid":      mint(t, it.issuer, cloud.TokenRequest{User: "alice", NotBeforeIn: 120}),
		"wrong issuer":       mint(t, oidcBase(t)+"/"+freshName(), cloud.TokenRequest{User: "alice"}),
		"wrong audience":     mint(t, it.issuer, cloud.TokenRequest{User: "alice", Audience: "someone-else"}),
		"alg none":           none,
		"HMAC w/ public key": hmac,
		"unknown kid":        unknownKid,
		"tampered payload":   parts[0] + "." + base64.RawURLEncoding.EncodeToString(tamperedJSON) + "." + parts[2],
		"user id too long":   mint(t, it.issuer, cloud.TokenRequest{User: strings.Repeat("u", 129)}),
	}
	for name, tok := range cases {
		st, _ := withToken(t, tok, "GET", "/v1/agents", nil)
		assert.Equal(t, 403, st, name)
		st, _ = withToken(t, tok, "POST", "/v1/conversations", map[string]any{"title": name})
		assert.Equal(t, 403, st, name)
	}
	assert.Empty(t, it.list("/v1/conversations").items, "nothing written")
}

func b64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

func jwksKid(t *testing.T, issuer string) string {
	t.Helper()
	var set jose.JSONWebKeySet
	require.NoError(t, json.Unmarshal(apitest.Client{Base: issuer, T: t}.Do("GET", "/jwks", nil).Body, &set))
	require.Len(t, set.Keys, 1)
	return set.Keys[0].KeyID
}

// hmacWithPublicKey is the algorithm-confusion attack: HS256 keyed with
// the issuer's public key (its PEM), under the issuer's kid.
func hmacWithPublicKey(t *testing.T, issuer, kid string, claims map[string]any) string {
	t.Helper()
	var set jose.JSONWebKeySet
	require.NoError(t, json.Unmarshal(apitest.Client{Base: issuer, T: t}.Do("GET", "/jwks", nil).Body, &set))
	der, err := x509.MarshalPKIXPublicKey(set.Keys[0].Key)
	require.NoError(t, err)
	secret := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	tok, err := cloud.SignToken(&jose.JSONWebKey{Key: secret, KeyID: kid, Algorithm: string(jose.HS256)}, claims)
	require.NoError(t, err)
	return tok
}

// Another team's registered issuer authenticates as that team, which gets
// 404 on this team's data.
func TestAnotherTeamsTokenIsThatTeam(t *testing.T) {
	e := mustEnv(t)
	mine, theirs := newIssuerTeam(t, e), newIssuerTeam(t, e)
	conv := mine.conversation("")
	tok := mint(t, theirs.issuer, cloud.TokenRequest{User: "bob", Admin: true})
	st, b := withToken(t, tok, "GET", "/v1/team", nil)
	require.Equal(t, 200, st, b)
	assert.Equal(t, theirs.id, b["id"])
	st, _ = withToken(t, tok, "GET", "/v1/conversations/"+conv, nil)
	assert.Equal(t, 404, st)
	// An admin's: the key's conversation is no member's (ownership).
	st, _ = withToken(t, mint(t, mine.issuer, cloud.TokenRequest{User: "bob", Admin: true}), "GET", "/v1/conversations/"+conv, nil)
	assert.Equal(t, 200, st, "the same conversation to this team's own admin token")
}

// Each (issuer, audience) pair is one team's: a second team's registration
// is 409; a replacement releases the pairs it no longer names.
func TestAnIssuerAudiencePairBelongsToOneTeam(t *testing.T) {
	e := mustEnv(t)
	a := newIssuerTeam(t, e)
	b := newIssuerTeam(t, e)
	st, body := b.call("PUT", "/v1/team/identity", map[string]any{"issuer": a.issuer, "audiences": []string{"x", cloud.OIDCAudience}})
	require.Equal(t, 409, st, body)
	st, got := b.call("GET", "/v1/team/identity", nil)
	require.Equal(t, 200, st)
	assert.Equal(t, b.issuer, got["issuer"], "a refused registration changes nothing")
	st, again := a.call("PUT", "/v1/team/identity", map[string]any{"issuer": a.issuer, "audiences": []string{cloud.OIDCAudience}})
	assert.Equal(t, 200, st, "the same PUT again: idempotent")
	assert.Equal(t, a.issuer, again["issuer"])
	// a moves to another audience: its old pair is free for b.
	st, _ = a.call("PUT", "/v1/team/identity", map[string]any{"issuer": a.issuer, "audiences": []string{"moved"}})
	require.Equal(t, 200, st)
	st, body = b.call("PUT", "/v1/team/identity", map[string]any{"issuer": a.issuer, "audiences": []string{cloud.OIDCAudience},
		"admin_claim": cloud.OIDCAdminClaim, "admin_value": cloud.OIDCAdminGroup})
	require.Equal(t, 200, st, body)
	// An admin's token: the team's record is not a member's to read.
	st, tb := withToken(t, mint(t, a.issuer, cloud.TokenRequest{User: "carol", Admin: true}), "GET", "/v1/team", nil)
	require.Equal(t, 200, st)
	assert.Equal(t, b.id, tb["id"], "the pair's tokens now name b")

	for field, in := range map[string]map[string]any{
		"issuer":     {"issuer": "https://idp.example.com", "audiences": []string{"x"}}, // not loopback in the local cloud
		"audiences":  {"issuer": a.issuer, "audiences": []string{}},
		"user_claim": {"issuer": a.issuer, "audiences": []string{"x"}, "user_claim": "a b"},
	} {
		st, body := b.call("PUT", "/v1/team/identity", in)
		require.Equal(t, 400, st, field)
		assert.Equal(t, field, body["error"].(map[string]any)["field"], field)
	}
}

// A new signing key at the issuer (a new kid) is picked up without a
// restart: the authorizer refetches the issuer's keys on an unknown kid,
// at most once a minute.
func TestIssuerKeyRotationIsPickedUp(t *testing.T) {
	e := mustEnv(t)
	it := newIssuerTeam(t, e)
	st, _ := withToken(t, mint(t, it.issuer, cloud.TokenRequest{User: "dave"}), "GET", "/v1/agents", nil)
	require.Equal(t, 200, st)
	fetched := time.Now()
	resp := apitest.Client{Base: it.issuer, T: t}.Do("POST", "/rotate", nil)
	require.Equal(t, http.StatusOK, resp.Status)
	tok := mint(t, it.issuer, cloud.TokenRequest{User: "dave"})
	deadline := fetched.Add(75 * time.Second)
	for {
		st, _ = withToken(t, tok, "GET", "/v1/agents", nil)
		if st == 200 || time.Now().After(deadline) {
			break
		}
		time.Sleep(3 * time.Second)
	}
	assert.Equal(t, 200, st, "the new kid is picked up within a minute of the last fetch")
}
