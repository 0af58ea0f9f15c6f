package cloud

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/store/identitystore"
	"github.com/conclave-ai/conclave/shared/team/identity"
	"github.com/conclave-ai/conclave/shared/testkit/demo"
)

// The local OpenID Connect issuers. The edge serves them on the HTTP API's
// port under /oidc/<name> (no port of their own, so clouds on other ports
// never collide): each name is an issuer with its own RS256 key pair, made
// at its first use (demo and other at start), so a test has a registered
// issuer (demo, the demo team's; other, the other team's) and an
// unregistered one (any other name) alike. Each answers
//
//	GET  /oidc/<name>/.well-known/openid-configuration  discovery
//	GET  /oidc/<name>/jwks                              its public keys
//	POST /oidc/<name>/token   {"user","admin","audience","expires_in","not_before_in"}
//	                          a signed token for a demo user (no login: for tests and make token)
//	POST /oidc/<name>/rotate  a new key pair (new kid); loopback callers only
//
// and the authorization-code flow with PKCE a browser app signs a person
// in with (GET /oidc/<name>/authorize, its login page; oidcflow.go). The
// token endpoint takes both: a JSON body is the shortcut above, a form
// the code flow's redemption.
const (
	// OIDCAudience is the audience (client id) the demo teams register.
	OIDCAudience = "conclave-local"
	// OIDCAdminClaim and OIDCAdminGroup make a demo user an admin.
	OIDCAdminClaim = "groups"
	OIDCAdminGroup = "admins"
)

// Issuers are the local issuers, by name.
type Issuers struct {
	// Base is the URL the names hang under (http://127.0.0.1:<api port>/oidc).
	Base string
	// RedirectOrigins are the origins, besides loopback http URLs, that
	// the code flow may redirect to (the local APIs' CORS origins).
	RedirectOrigins []string
	// Now is the issuers' clock (time.Now when nil); each issuer runs
	// ahead of it by what POST /oidc/<name>/clock added.
	Now     func() time.Time
	mu      sync.Mutex
	keys    map[string]*jose.JSONWebKey
	codes   map[string]authCode
	offsets map[string]time.Duration
}

// NewIssuers returns the issuers under base, demo's and other's keys
// made, redirecting to loopback URLs and to redirectOrigins.
func NewIssuers(base string, redirectOrigins ...string) *Issuers {
	is := &Issuers{Base: strings.TrimSuffix(base, "/"), RedirectOrigins: redirectOrigins, keys: map[string]*jose.JSONWebKey{}}
	is.key("demo")
	is.key("other")
	return is
}

// URL is the issuer URL of name.
func (is *Issuers) URL(name string) string { return is.Base + "/" + name }

func (is *Issuers) key(name string) *jose.JSONWebKey {
	is.mu.Lock()
	defer is.mu.Unlock()
	if k := is.keys[name]; k != nil {
		return k
	}
	return is.newKeyLocked(name)
}

func (is *Issuers) newKeyLocked(name string) *jose.JSONWebKey {
	priv, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic("oidc: " + err.Error())
	}
	kid := make([]byte, 8)
	_, _ = rand.Read(kid)
	k := &jose.JSONWebKey{Key: priv, KeyID: hex.EncodeToString(kid), Algorithm: string(jose.RS256), Use: "sig"}
	is.keys[name] = k
	return k
}

// ServeHTTP serves the issuers (the edge mounts it at /oidc/).
func (is *Issuers) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, "/oidc/")
	name, op, _ := strings.Cut(rest, "/")
	if name == "" || strings.ContainsAny(name, ".#?") {
		http.NotFound(w, r)
		return
	}
	switch {
	case r.Method == http.MethodGet && op == ".well-known/openid-configuration":
		writeJSON(w, map[string]any{"issuer": is.URL(name), "jwks_uri": is.URL(name) + "/jwks",
			"authorization_endpoint": is.URL(name) + "/authorize", "token_endpoint": is.URL(name) + "/token",
			"id_token_signing_alg_values_supported": []string{"RS256"}, "response_types_supported": []string{"code"},
			"grant_types_supported": []string{"authorization_code"}, "code_challenge_methods_supported": []string{"S256"},
			"token_endpoint_auth_methods_supported": []string{"none"}, "scopes_supported": []string{"openid"},
			"subject_types_supported": []string{"public"}})
	case r.Method == http.MethodGet && op == "jwks":
		writeJSON(w, jose.JSONWebKeySet{Keys: []jose.JSONWebKey{is.key(name).Public()}})
	case (r.Method == http.MethodGet || r.Method == http.MethodPost) && op == "authorize":
		is.authorize(w, r, name)
	case r.Method == http.MethodPost && op == "token":
		is.token(w, r, name)
	case r.Method == http.MethodPost && op == "clock":
		is.advance(w, r, name)
	case r.Method == http.MethodPost && op == "rotate":
		if !loopbackCaller(r) {
			http.Error(w, "loopback callers only", http.StatusForbidden)
			return
		}
		is.mu.Lock()
		k := is.newKeyLocked(name)
		is.mu.Unlock()
		writeJSON(w, map[string]string{"kid": k.KeyID})
	default:
		http.NotFound(w, r)
	}
}

// TokenRequest is the body of POST /oidc/<name>/token.
type TokenRequest struct {
	User     string `json:"user"`
	Admin    bool   `json:"admin"`
	Audience string `json:"audience,omitempty"` // default OIDCAudience
	// ExpiresIn and NotBeforeIn are seconds from now (default 3600 and
	// 0): a negative ExpiresIn makes an expired token, a positive
	// NotBeforeIn one not valid yet (the refusal tests').
	ExpiresIn   int `json:"expires_in,omitempty"`
	NotBeforeIn int `json:"not_before_in,omitempty"`
}

func (is *Issuers) token(w http.ResponseWriter, r *http.Request, name string) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<16))
	if err != nil {
		oauthError(w, "invalid_request", "the body could not be read")
		return
	}
	if !isJSON(body) {
		form, err := url.ParseQuery(string(body))
		if err != nil {
			oauthError(w, "invalid_request", "the form could not be read")
			return
		}
		is.redeem(w, form, name)
		return
	}
	var in TokenRequest
	if err := json.Unmarshal(body, &in); err != nil || in.User == "" {
		http.Error(w, `give {"user": "<name>"}`, http.StatusBadRequest)
		return
	}
	is.issue(w, name, in, "")
}

// issue answers with a token of issuer name for in (nonce, when the
// authorization request had one, goes into the token unchanged).
func (is *Issuers) issue(w http.ResponseWriter, name string, in TokenRequest, nonce string) {
	if in.Audience == "" {
		in.Audience = OIDCAudience
	}
	if in.ExpiresIn == 0 {
		in.ExpiresIn = 3600
	}
	now := is.now(name)
	claims := map[string]any{"iss": is.URL(name), "aud": in.Audience, "sub": in.User, "iat": now.Unix(),
		"exp": now.Add(time.Duration(in.ExpiresIn) * time.Second).Unix(), "nbf": now.Add(time.Duration(in.NotBeforeIn) * time.Second).Unix()}
	if in.Admin {
		claims[OIDCAdminClaim] = []string{OIDCAdminGroup}
	}
	if nonce != "" {
		claims["nonce"] = nonce
	}
	raw, err := SignToken(is.key(name), claims)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, map[string]any{"id_token": raw, "access_token": raw, "token_type": "Bearer", "expires_in": in.ExpiresIn})
}

// SignToken signs claims with key (its alg and kid in the header).
func SignToken(key *jose.JSONWebKey, claims any) (string, error) {
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.SignatureAlgorithm(key.Algorithm), Key: key},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		return "", err
	}
	return jwt.Signed(sig).Claims(claims).Serialize()
}

func loopbackCaller(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	ip, perr := netip.ParseAddr(host)
	return err == nil && perr == nil && ip.Unmap().IsLoopback()
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// SeedIdentity registers the local issuers with the demo teams: demo's
// with the demo team, other's with the other team (idempotent: a
// registration replaces the team's own).
func SeedIdentity(ctx context.Context, core *dynamo.Store, is *Issuers) error {
	s := &identity.Service{Store: identitystore.New(core.DB, core.Table), Now: time.Now}
	for team, name := range map[string]string{demo.TeamID: "demo", demo.OtherTeamID: "other"} {
		_, err := s.Put(ctx, team, identity.Provider{Issuer: is.URL(name), Audiences: []string{OIDCAudience},
			AdminClaim: OIDCAdminClaim, AdminValue: OIDCAdminGroup})
		if err != nil {
			return err
		}
	}
	return nil
}
