// Package teams owns teams and their API keys. A team is the unit of
// isolation: every other item belongs to exactly one team, and the team id a
// request acts for comes only from its API key (through the authorizer), never
// from the request body or path.
package teams

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/ids"
)

// Team is a tenant.
type Team struct {
	ID           string    `json:"id"`
	Name         string    `json:"name"`
	DefaultAgent string    `json:"default_agent,omitempty"`
	CreatedAt    time.Time `json:"created_at"`
	// A2AID is the team's id on A2A (shared/a2a/server): its agent's base URL
	// is /a2a/{A2AID}. Random and unrelated to ID, so the public agent
	// card names no team id; given at creation, or on first use to a team
	// made before A2A (Service.EnsureA2AID).
	A2AID string `json:"-"`
}

// Key statuses.
const (
	KeyActive  = "active"
	KeyRevoked = "revoked"
)

// APIKey is the stored, non-secret view of a key. The secret itself is shown
// once, when the key is made, and only its SHA-256 is stored: keys are 160
// random bits, so a fast unsalted hash is enough (there is nothing to brute
// force), and it lets the authorizer find a key with one GetItem.
type APIKey struct {
	ID     string `json:"id"`
	TeamID string `json:"team_id"`
	Name   string `json:"name"`
	Prefix string `json:"prefix"` // first characters, to tell keys apart
	Status string `json:"status"`
	// ActAsUsers lets the key act for one of the team's users with
	// X-Conclave-User (the authorizer, docs/api.md "Signing people in"):
	// for a server that signs its users in itself. Set when the key is
	// issued, kept by rotation; false by default.
	ActAsUsers bool       `json:"act_as_users"`
	CreatedAt  time.Time  `json:"created_at"`
	RevokedAt  *time.Time `json:"revoked_at,omitempty"`
}

// KeySpec is what a new key is issued with (POST /v1/keys, the admin
// function's issue-key).
type KeySpec struct {
	Name       string `json:"name"`
	ActAsUsers bool   `json:"act_as_users,omitempty"`
}

// IssuedKey is a key together with its secret, returned only at creation.
type IssuedKey struct {
	APIKey
	Secret string `json:"secret"`
}

// Store persists teams and keys.
type Store interface {
	// CreateTeam writes the team and its first key atomically.
	CreateTeam(ctx context.Context, t Team, k APIKey, hash string) error
	// GetTeam returns ENOTFOUND for an unknown team.
	GetTeam(ctx context.Context, teamID string) (Team, error)
	// PutAPIKey adds a key to an existing team (ENOTFOUND otherwise).
	PutAPIKey(ctx context.Context, k APIKey, hash string) error
	// RevokeAPIKey marks a key revoked; ENOTFOUND when the key is not the
	// team's, ECONFLICT when it is already revoked.
	RevokeAPIKey(ctx context.Context, teamID, keyID string, at time.Time) (APIKey, error)
	// RotateAPIKey revokes oldID and adds k in one transaction, so a team
	// never has both or neither.
	RotateAPIKey(ctx context.Context, teamID, oldID string, k APIKey, hash string, at time.Time) error
	// ListAPIKeys returns the team's keys, newest first.
	ListAPIKeys(ctx context.Context, teamID string) ([]APIKey, error)
	// APIKeyByHash returns ENOTFOUND for an unknown hash.
	APIKeyByHash(ctx context.Context, hash string) (APIKey, error)
	// SetA2AID gives the team a2aID as its A2A id unless it has one (a
	// conditional write: two first uses at once agree) and returns the
	// team's A2A id either way. ENOTFOUND for an unknown team.
	SetA2AID(ctx context.Context, teamID, a2aID string) (string, error)
	// TeamByA2AID returns the team of an A2A id, ENOTFOUND for an unknown
	// one.
	TeamByA2AID(ctx context.Context, a2aID string) (Team, error)
}

// Service implements team and key use cases.
type Service struct {
	Store Store
	Now   func() time.Time
}

// NewService returns a service using the wall clock.
func NewService(s Store) *Service { return &Service{Store: s, Now: time.Now} }

// KeyPrefix starts every secret so leaked keys are recognisable by scanners.
const KeyPrefix = "ck_"

// Hash returns the stored form of a secret.
func Hash(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

func (s *Service) newKey(teamID, name string) (APIKey, string) {
	secret := KeyPrefix + ids.Secret(20)
	return APIKey{
		ID:        ids.New("key"),
		TeamID:    teamID,
		Name:      name,
		Prefix:    secret[:10],
		Status:    KeyActive,
		CreatedAt: s.Now().UTC(),
	}, secret
}

func validName(field, v string, max int) error {
	v = strings.TrimSpace(v)
	if v == "" {
		return apperr.Invalid(field, "%s is required", field)
	}
	if utf8.RuneCountInString(v) > max {
		return apperr.Invalid(field, "%s must be at most %d characters", field, max)
	}
	return nil
}

// CreateTeam makes a team and its first API key. Returns EINVALID.
func (s *Service) CreateTeam(ctx context.Context, name string) (Team, IssuedKey, error) {
	if err := validName("name", name, 80); err != nil {
		return Team{}, IssuedKey{}, err
	}
	t := Team{ID: ids.New("team"), Name: strings.TrimSpace(name), CreatedAt: s.Now().UTC(), A2AID: NewA2AID()}
	k, secret := s.newKey(t.ID, "initial")
	if err := s.Store.CreateTeam(ctx, t, k, Hash(secret)); err != nil {
		return Team{}, IssuedKey{}, err
	}
	return t, IssuedKey{APIKey: k, Secret: secret}, nil
}

// A2AID returns the team's A2A id, giving it one on first use (teams
// made before A2A have none). Returns ENOTFOUND.
func (s *Service) A2AID(ctx context.Context, teamID string) (string, error) {
	t, err := s.Store.GetTeam(ctx, teamID)
	if err != nil {
		return "", err
	}
	return s.EnsureA2AID(ctx, t)
}

// EnsureA2AID returns the A2A id of t as read, giving it one if it has
// none: a team made since A2A has one from its creation (no write here),
// an older one gets one on first use.
func (s *Service) EnsureA2AID(ctx context.Context, t Team) (string, error) {
	if t.A2AID != "" {
		return t.A2AID, nil
	}
	return s.Store.SetA2AID(ctx, t.ID, NewA2AID())
}

// NewA2AID is a fresh A2A id: a2a_ and 128 random bits, nothing of the
// team or of the time.
func NewA2AID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("teams: crypto/rand failed: " + err.Error())
	}
	return "a2a_" + hex.EncodeToString(b[:])
}

// IssueKey adds a key to a team. Returns EINVALID, ENOTFOUND.
func (s *Service) IssueKey(ctx context.Context, teamID string, spec KeySpec) (IssuedKey, error) {
	if err := validName("name", spec.Name, 80); err != nil {
		return IssuedKey{}, err
	}
	k, secret := s.newKey(teamID, strings.TrimSpace(spec.Name))
	k.ActAsUsers = spec.ActAsUsers
	if err := s.Store.PutAPIKey(ctx, k, Hash(secret)); err != nil {
		return IssuedKey{}, err
	}
	return IssuedKey{APIKey: k, Secret: secret}, nil
}

// RotateKey replaces keyID with a new key of the same name and the same
// act_as_users; the old key stops working at once. Returns ENOTFOUND, ECONFLICT (already revoked).
func (s *Service) RotateKey(ctx context.Context, teamID, keyID string) (IssuedKey, error) {
	keys, err := s.Store.ListAPIKeys(ctx, teamID)
	if err != nil {
		return IssuedKey{}, err
	}
	var old *APIKey
	for i := range keys {
		if keys[i].ID == keyID {
			old = &keys[i]
		}
	}
	if old == nil {
		return IssuedKey{}, apperr.NotFound("api key", keyID)
	}
	k, secret := s.newKey(teamID, old.Name)
	k.ActAsUsers = old.ActAsUsers
	if err := s.Store.RotateAPIKey(ctx, teamID, keyID, k, Hash(secret), s.Now().UTC()); err != nil {
		return IssuedKey{}, err
	}
	return IssuedKey{APIKey: k, Secret: secret}, nil
}

// RevokeKey revokes a key. Returns ENOTFOUND, ECONFLICT.
func (s *Service) RevokeKey(ctx context.Context, teamID, keyID string) (APIKey, error) {
	return s.Store.RevokeAPIKey(ctx, teamID, keyID, s.Now().UTC())
}

// Authenticate resolves a secret to its active key. Every failure is
// EUNAUTHORIZED so callers cannot tell unknown keys from revoked ones.
func (s *Service) Authenticate(ctx context.Context, secret string) (APIKey, error) {
	if !strings.HasPrefix(secret, KeyPrefix) || len(secret) > 128 {
		return APIKey{}, apperr.New(apperr.EUNAUTHORIZED, "invalid API key")
	}
	k, err := s.Store.APIKeyByHash(ctx, Hash(secret))
	if apperr.Is(err, apperr.ENOTFOUND) {
		return APIKey{}, apperr.New(apperr.EUNAUTHORIZED, "invalid API key")
	}
	if err != nil {
		return APIKey{}, err
	}
	if k.Status != KeyActive {
		return APIKey{}, apperr.New(apperr.EUNAUTHORIZED, "invalid API key")
	}
	return k, nil
}
