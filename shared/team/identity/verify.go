package identity

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/authctx"
)

// Roles a token's user has (the authorizer context's role, authctx's).
const (
	RoleAdmin  = authctx.RoleAdmin
	RoleMember = authctx.RoleMember
)

// Token limits.
const (
	// MaxTokenBytes bounds a bearer token: larger ones are refused unread.
	MaxTokenBytes = 8 << 10
	// MaxSkew is the clock skew allowed on exp, nbf and iat.
	MaxSkew = 60 * time.Second
	// MaxUserID bounds a user id.
	MaxUserID = authctx.MaxUserID
)

// ValidUserID reports whether id is 1 to MaxUserID safe characters (the
// rule lives in authctx, which the approvals policy shares without
// linking the verifier).
func ValidUserID(id string) bool { return authctx.ValidUserID(id) }

// algorithms are the only signatures accepted: none and HMAC are refused
// when the token is parsed, before any key is looked up.
var algorithms = []jose.SignatureAlgorithm{jose.RS256, jose.ES256}

// Caller is who a verified token speaks for.
type Caller struct {
	TeamID string
	UserID string
	Role   string
}

// PairReader finds the provider holding an (issuer, audience) pair
// (Store.ProviderByPair).
type PairReader interface {
	ProviderByPair(ctx context.Context, issuer, audience string) (Provider, error)
}

// KeySource finds an issuer's signing key by its kid (KeyCache).
type KeySource interface {
	Key(ctx context.Context, issuer, kid string) (*jose.JSONWebKey, error)
}

// Verifier verifies bearer tokens with go-jose.
type Verifier struct {
	Pairs PairReader
	Keys  KeySource
	Now   func() time.Time
}

// denied is a refusal: EUNAUTHORIZED, its message the reason logged.
func denied(format string, args ...any) error {
	return apperr.New(apperr.EUNAUTHORIZED, format, args...)
}

// Verify checks raw and returns its caller. Every refusal is
// EUNAUTHORIZED with the reason in its message (for the log, never the
// client); any other error is the table failing (the authorizer's
// "unavailable" path).
func (v *Verifier) Verify(ctx context.Context, raw string) (Caller, error) {
	if len(raw) > MaxTokenBytes {
		return Caller{}, denied("token longer than %d bytes", MaxTokenBytes)
	}
	tok, err := jwt.ParseSigned(raw, algorithms)
	if err != nil {
		return Caller{}, denied("token unreadable or not RS256/ES256: %v", err)
	}
	if len(tok.Headers) != 1 {
		return Caller{}, denied("token has %d signatures", len(tok.Headers))
	}
	var claimed jwt.Claims
	if err := tok.UnsafeClaimsWithoutVerification(&claimed); err != nil {
		return Caller{}, denied("token claims unreadable")
	}
	p, aud, err := v.provider(ctx, claimed)
	if err != nil {
		return Caller{}, err
	}
	key, err := v.Keys.Key(ctx, p.Issuer, tok.Headers[0].KeyID)
	if err != nil {
		return Caller{}, denied("signing key: %v", err)
	}
	if key.Algorithm != "" && key.Algorithm != tok.Headers[0].Algorithm {
		return Caller{}, denied("token alg %s is not its key's %s", tok.Headers[0].Algorithm, key.Algorithm)
	}
	var claims jwt.Claims
	extra := map[string]any{}
	if err := tok.Claims(key.Key, &claims, &extra); err != nil {
		return Caller{}, denied("signature: %v", err)
	}
	if claims.Expiry == nil {
		return Caller{}, denied("token has no exp")
	}
	err = claims.ValidateWithLeeway(jwt.Expected{Issuer: p.Issuer, AnyAudience: jwt.Audience{aud}, Time: v.now()}, MaxSkew)
	if err != nil {
		return Caller{}, denied("claims: %v", err)
	}
	user, _ := extra[p.UserClaim].(string)
	if !ValidUserID(user) {
		return Caller{}, denied("claim %s is not a user id of 1 to %d safe characters", p.UserClaim, MaxUserID)
	}
	role := RoleMember
	if p.AdminClaim != "" && holds(extra[p.AdminClaim], p.AdminValue) {
		role = RoleAdmin
	}
	return Caller{TeamID: p.TeamID, UserID: user, Role: role}, nil
}

// provider is the provider of the token's (iss, aud): the first of its
// audiences (at most MaxAudiences looked up) that a team registered.
func (v *Verifier) provider(ctx context.Context, c jwt.Claims) (Provider, string, error) {
	if c.Issuer == "" || len(c.Audience) == 0 {
		return Provider{}, "", denied("token has no iss or aud")
	}
	for i, aud := range c.Audience {
		if i == MaxAudiences {
			break
		}
		p, err := v.Pairs.ProviderByPair(ctx, c.Issuer, aud)
		if apperr.Is(err, apperr.ENOTFOUND) {
			continue
		}
		if err != nil {
			return Provider{}, "", err
		}
		return p, aud, nil
	}
	return Provider{}, "", denied("issuer %q with its audiences is registered to no team", c.Issuer)
}

func (v *Verifier) now() time.Time {
	if v.Now != nil {
		return v.Now()
	}
	return time.Now()
}

// holds: the claim is value, or a list holding it; a boolean true claim
// holds "true".
func holds(claim any, value string) bool {
	switch c := claim.(type) {
	case string:
		return c == value
	case bool:
		return c && value == "true"
	case []any:
		for _, e := range c {
			if s, ok := e.(string); ok && s == value {
				return true
			}
		}
	}
	return false
}

// ErrUnknownKey is a kid the issuer's key set does not hold, even after
// the refetch the cache allows.
var ErrUnknownKey = errors.New("unknown kid")

func unknownKey(kid string) error { return fmt.Errorf("%w %q", ErrUnknownKey, kid) }
