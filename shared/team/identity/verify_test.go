package identity_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/team/identity"
)

const iss, aud = "https://idp.example.com", "app"

type pairs map[string]identity.Provider

func (p pairs) ProviderByPair(_ context.Context, issuer, audience string) (identity.Provider, error) {
	if v, ok := p[issuer+"#"+audience]; ok {
		return v, nil
	}
	return identity.Provider{}, apperr.NotFound("issuer", issuer)
}

type staticKeys []jose.JSONWebKey

func (s staticKeys) Key(_ context.Context, _, kid string) (*jose.JSONWebKey, error) {
	for i := range s {
		if s[i].KeyID == kid {
			return &s[i], nil
		}
	}
	return nil, identity.ErrUnknownKey
}

type fixture struct {
	rsaKey, ecKey jose.JSONWebKey
	v             *identity.Verifier
	now           time.Time
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	r, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	e, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	f := &fixture{rsaKey: jose.JSONWebKey{Key: r, KeyID: "r1", Algorithm: "RS256"}, ecKey: jose.JSONWebKey{Key: e, KeyID: "e1", Algorithm: "ES256"},
		now: time.Unix(1_800_000_000, 0)}
	p := identity.Provider{TeamID: "team_a", Issuer: iss, Audiences: []string{aud}, UserClaim: "sub", AdminClaim: "groups", AdminValue: "admins"}
	f.v = &identity.Verifier{Pairs: pairs{iss + "#" + aud: p}, Keys: staticKeys{f.rsaKey.Public(), f.ecKey.Public()}, Now: func() time.Time { return f.now }}
	return f
}

func (f *fixture) claims() map[string]any {
	return map[string]any{"iss": iss, "aud": aud, "sub": "alice", "exp": f.now.Add(time.Hour).Unix(), "nbf": f.now.Unix(), "iat": f.now.Unix()}
}

func sign(t *testing.T, k jose.JSONWebKey, claims any) string { return signPadded(t, k, claims, "") }

// signPadded signs with a header field of pad (to size a token exactly).
func signPadded(t *testing.T, k jose.JSONWebKey, claims any, pad string) string {
	t.Helper()
	opts := (&jose.SignerOptions{}).WithType("JWT")
	if pad != "" {
		opts = opts.WithHeader("pad", pad)
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.SignatureAlgorithm(k.Algorithm), Key: k}, opts)
	require.NoError(t, err)
	raw, err := jwt.Signed(s).Claims(claims).Serialize()
	require.NoError(t, err)
	return raw
}

func (f *fixture) refused(t *testing.T, raw, why string) {
	t.Helper()
	_, err := f.v.Verify(context.Background(), raw)
	assert.True(t, apperr.Is(err, apperr.EUNAUTHORIZED), "%s: %v", why, err)
}

func TestVerifierAcceptsRS256AndES256(t *testing.T) {
	f := newFixture(t)
	for _, k := range []jose.JSONWebKey{f.rsaKey, f.ecKey} {
		c, err := f.v.Verify(context.Background(), sign(t, k, f.claims()))
		require.NoError(t, err, k.Algorithm)
		assert.Equal(t, identity.Caller{TeamID: "team_a", UserID: "alice", Role: identity.RoleMember}, c)
	}
	admin := f.claims()
	admin["groups"] = []string{"staff", "admins"}
	c, err := f.v.Verify(context.Background(), sign(t, f.rsaKey, admin))
	require.NoError(t, err)
	assert.Equal(t, identity.RoleAdmin, c.Role)
}

func TestVerifierRefusesNoneAndHMAC(t *testing.T) {
	f := newFixture(t)
	valid := strings.Split(sign(t, f.rsaKey, f.claims()), ".")
	f.refused(t, "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0."+valid[1]+".", "alg none")
	hs := sign(t, jose.JSONWebKey{Key: []byte("a shared secret of thirty-two bytes!"), KeyID: "r1", Algorithm: "HS256"}, f.claims())
	f.refused(t, hs, "HS256")
	f.refused(t, valid[0]+"."+valid[1]+"x."+valid[2], "tampered")
}

func TestVerifierChecksTimesWithAMinuteOfSkew(t *testing.T) {
	f := newFixture(t)
	for name, c := range map[string]struct {
		exp, nbf time.Duration
		ok       bool
	}{
		"exp 59 s ago": {-59 * time.Second, -time.Hour, true}, "exp 61 s ago": {-61 * time.Second, -time.Hour, false},
		"nbf in 59 s": {time.Hour, 59 * time.Second, true}, "nbf in 61 s": {time.Hour, 61 * time.Second, false},
	} {
		cl := f.claims()
		cl["exp"], cl["nbf"], cl["iat"] = f.now.Add(c.exp).Unix(), f.now.Add(c.nbf).Unix(), f.now.Add(-2*time.Hour).Unix()
		_, err := f.v.Verify(context.Background(), sign(t, f.rsaKey, cl))
		assert.Equal(t, c.ok, err == nil, "%s: %v", name, err)
	}
	noExp := f.claims()
	delete(noExp, "exp")
	f.refused(t, sign(t, f.rsaKey, noExp), "no exp")
}

func TestVerifierChecksIssuerAudienceAndKey(t *testing.T) {
	f := newFixture(t)
	for name, change := range map[string]func(map[string]any){
		"wrong issuer":   func(c map[string]any) { c["iss"] = "https://evil.example.com" },
		"wrong audience": func(c map[string]any) { c["aud"] = "other" },
		"no audience":    func(c map[string]any) { delete(c, "aud") },
	} {
		c := f.claims()
		change(c)
		f.refused(t, sign(t, f.rsaKey, c), name)
	}
	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	f.refused(t, sign(t, jose.JSONWebKey{Key: other, KeyID: "r9", Algorithm: "RS256"}, f.claims()), "unknown kid")
	f.refused(t, sign(t, jose.JSONWebKey{Key: other, KeyID: "r1", Algorithm: "RS256"}, f.claims()), "the kid of a key that did not sign")
}

func TestUserIDBoundary(t *testing.T) {
	f := newFixture(t)
	for _, c := range []struct {
		user string
		ok   bool
	}{{strings.Repeat("u", 128), true}, {strings.Repeat("u", 129), false}, {"", false}, {"auth0|5f3a.b@x.io", true}, {"a b", false}, {"a/b", false}} {
		cl := f.claims()
		cl["sub"] = c.user
		_, err := f.v.Verify(context.Background(), sign(t, f.rsaKey, cl))
		assert.Equal(t, c.ok, err == nil, "%q: %v", c.user, err)
	}
}

// A token of exactly 8192 bytes is read; one of 8193 is refused unread.
func TestTokenSizeBoundary(t *testing.T) {
	f := newFixture(t)
	base := len(sign(t, f.rsaKey, f.claims()))
	sized := func(n int) string {
		start := (n-base)*3/4 - 40
		for pad := start; pad < start+80; pad++ {
			for extra := 1; extra < 5; extra++ {
				c := f.claims()
				c["pad"] = strings.Repeat("p", pad)
				if raw := signPadded(t, f.rsaKey, c, strings.Repeat("h", extra)); len(raw) == n {
					return raw
				}
			}
		}
		t.Fatalf("no token of %d bytes", n)
		return ""
	}
	_, err := f.v.Verify(context.Background(), sized(identity.MaxTokenBytes))
	assert.NoError(t, err, "8192 bytes")
	f.refused(t, sized(identity.MaxTokenBytes+1), "8193 bytes")
}

// The key cache fetches an issuer's discovery document and keys once,
// answers from memory after, and refetches on an unknown kid at most once
// a minute.
func TestKeyCacheRefetchesAnUnknownKidAtMostOnceAMinute(t *testing.T) {
	var fetches atomic.Int32
	var set atomic.Value
	k1 := jose.JSONWebKey{Key: mustRSA(t).Public(), KeyID: "k1", Algorithm: "RS256", Use: "sig"}
	set.Store(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{k1}})
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/.well-known/openid-configuration":
			_ = json.NewEncoder(w).Encode(map[string]string{"issuer": srv.URL, "jwks_uri": srv.URL + "/jwks"})
		case "/jwks":
			fetches.Add(1)
			_ = json.NewEncoder(w).Encode(set.Load())
		}
	}))
	defer srv.Close()
	now := time.Unix(1_800_000_000, 0)
	c := &identity.KeyCache{Client: srv.Client(), Now: func() time.Time { return now }}
	ctx := context.Background()
	for range 3 {
		k, err := c.Key(ctx, srv.URL, "k1")
		require.NoError(t, err)
		assert.Equal(t, "k1", k.KeyID)
	}
	assert.EqualValues(t, 1, fetches.Load(), "fetched once, then from memory")

	set.Store(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{k1, {Key: mustRSA(t).Public(), KeyID: "k2", Algorithm: "RS256"}}})
	now = now.Add(30 * time.Second)
	_, err := c.Key(ctx, srv.URL, "k2")
	assert.ErrorIs(t, err, identity.ErrUnknownKey, "within the minute: no refetch")
	assert.EqualValues(t, 1, fetches.Load())
	now = now.Add(31 * time.Second)
	k, err := c.Key(ctx, srv.URL, "k2")
	require.NoError(t, err, "a minute on: refetched")
	assert.Equal(t, "k2", k.KeyID)
	_, err = c.Key(ctx, srv.URL, "k3")
	assert.ErrorIs(t, err, identity.ErrUnknownKey)
	assert.EqualValues(t, 2, fetches.Load(), "an unknown kid does not refetch again within the minute")
}

func mustRSA(t *testing.T) *rsa.PrivateKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	return k
}
