// Package identity is a team's OpenID Connect provider: the issuer whose
// tokens sign the team's people in (PUT /v1/team/identity), and the
// verifier the authorizer runs on a bearer token (Verifier). Each
// (issuer, audience) pair belongs to one team, so a token names its team
// by its iss and aud claims and by nothing it could choose otherwise.
package identity

import (
	"context"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
)

// Provider is a team's registered OpenID Connect provider.
type Provider struct {
	TeamID string `json:"-"`
	// Issuer is the provider's issuer URL, as its tokens' iss claim and its
	// discovery document name it.
	Issuer string `json:"issuer"`
	// Audiences are the aud values (client ids) the team accepts: 1 to 5.
	Audiences []string `json:"audiences"`
	// UserClaim is the claim naming the user (default sub).
	UserClaim string `json:"user_claim"`
	// AdminClaim and AdminValue make a user an admin: the claim equals the
	// value, or is a list holding it (a groups claim). Empty: nobody is.
	AdminClaim string    `json:"admin_claim,omitempty"`
	AdminValue string    `json:"admin_value,omitempty"`
	UpdatedAt  time.Time `json:"updated_at"`
}

// ReasonPairTaken is the reason of the ECONFLICT a registration gets when
// another team holds one of its (issuer, audience) pairs.
const ReasonPairTaken = "IssuerAudienceTaken"

// Store persists providers: the team's item and one item per (issuer,
// audience) pair, written together.
type Store interface {
	// PutProvider replaces the team's provider and its pairs in one
	// transaction (the pairs it no longer names are released). ECONFLICT
	// (ReasonPairTaken) when another team holds one of the pairs.
	PutProvider(ctx context.Context, p Provider) error
	// GetProvider returns the team's provider; ENOTFOUND when it has none.
	GetProvider(ctx context.Context, teamID string) (Provider, error)
	// ProviderByPair returns the provider (its team included) holding the
	// pair; ENOTFOUND when no team does.
	ProviderByPair(ctx context.Context, issuer, audience string) (Provider, error)
}

// Service registers providers.
type Service struct {
	Store Store
	Now   func() time.Time
	// CheckURL is the stage's network policy on the issuer URL
	// (toolpacks.NetPolicy.CheckURL: https to a public host deployed,
	// loopback in the local cloud); nil accepts any http(s) URL.
	CheckURL func(string) error
}

// Limits of a registration.
const (
	MaxAudiences   = 5
	maxAudienceLen = 256
	maxIssuerLen   = 512
)

var claimName = regexp.MustCompile(`^[A-Za-z0-9_:./-]{1,64}$`)

// Put validates and stores the team's provider (an idempotent replace).
// Returns EINVALID naming the field, ECONFLICT (ReasonPairTaken).
func (s *Service) Put(ctx context.Context, teamID string, in Provider) (Provider, error) {
	p, err := s.normalize(in)
	if err != nil {
		return Provider{}, err
	}
	p.TeamID, p.UpdatedAt = teamID, s.Now().UTC()
	if err := s.Store.PutProvider(ctx, p); err != nil {
		return Provider{}, err
	}
	return p, nil
}

// Get returns the team's provider. Returns ENOTFOUND.
func (s *Service) Get(ctx context.Context, teamID string) (Provider, error) {
	return s.Store.GetProvider(ctx, teamID)
}

func (s *Service) normalize(in Provider) (Provider, error) {
	p := Provider{Issuer: strings.TrimSpace(in.Issuer), UserClaim: strings.TrimSpace(in.UserClaim),
		AdminClaim: strings.TrimSpace(in.AdminClaim), AdminValue: in.AdminValue}
	if err := s.checkIssuer(p.Issuer); err != nil {
		return Provider{}, err
	}
	if len(in.Audiences) < 1 || len(in.Audiences) > MaxAudiences {
		return Provider{}, apperr.Invalid("audiences", "audiences must hold 1 to %d values", MaxAudiences)
	}
	seen := map[string]bool{}
	for _, a := range in.Audiences {
		if a == "" || len(a) > maxAudienceLen || strings.TrimSpace(a) != a || strings.ContainsFunc(a, isControl) {
			return Provider{}, apperr.Invalid("audiences", "each audience must be 1 to %d printable characters", maxAudienceLen)
		}
		if !seen[a] {
			seen[a] = true
			p.Audiences = append(p.Audiences, a)
		}
	}
	if p.UserClaim == "" {
		p.UserClaim = "sub"
	}
	if !claimName.MatchString(p.UserClaim) {
		return Provider{}, apperr.Invalid("user_claim", "user_claim must be a claim name of 1 to 64 letters, digits or _:./-")
	}
	if p.AdminClaim != "" && !claimName.MatchString(p.AdminClaim) {
		return Provider{}, apperr.Invalid("admin_claim", "admin_claim must be a claim name of 1 to 64 letters, digits or _:./-")
	}
	if (p.AdminClaim == "") != (p.AdminValue == "") {
		return Provider{}, apperr.Invalid("admin_value", "admin_claim and admin_value are given together")
	}
	if len(p.AdminValue) > maxAudienceLen {
		return Provider{}, apperr.Invalid("admin_value", "admin_value must be at most %d characters", maxAudienceLen)
	}
	return p, nil
}

// checkIssuer: an absolute URL with no user info, query or fragment (a
// fragment would also make the pair's key ambiguous), within the network
// policy.
func (s *Service) checkIssuer(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || raw == "" || len(raw) > maxIssuerLen || u.Host == "" || u.Opaque != "" ||
		(u.Scheme != "https" && u.Scheme != "http") || u.User != nil || u.RawQuery != "" || u.Fragment != "" || strings.Contains(raw, "#") {
		return apperr.Invalid("issuer", "issuer must be an absolute https URL of at most %d characters, with no user info, query or fragment", maxIssuerLen)
	}
	if s.CheckURL != nil {
		if err := s.CheckURL(raw); err != nil {
			msg := "issuer is outside the stage's network policy"
			if e, ok := apperr.As(err); ok {
				msg += ": " + e.Message
			}
			return apperr.Invalid("issuer", "%s", msg)
		}
	}
	return nil
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }
