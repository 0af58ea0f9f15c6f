package memstore

import (
	"context"
	"strconv"
	"time"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/team/teams"
)

// teamRow is the TEAM item: the team and its default agent.
type teamRow struct {
	team teams.Team
}

// keyRow is an APIKEY item.
type keyRow struct {
	key  teams.APIKey
	hash string
}

func copyKey(k teams.APIKey) teams.APIKey {
	if k.RevokedAt != nil {
		at := *k.RevokedAt
		k.RevokedAt = &at
	}
	return k
}

// CreateTeam implements teams.Store: the team and its first key, each
// conditioned on not existing. Either failing is ECONFLICT "team already
// exists", as the adapter reports any cancellation of this transaction.
func (s *Store) CreateTeam(_ context.Context, t teams.Team, k teams.APIKey, hash string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, teamTaken := s.teams[t.ID]
	_, keyTaken := s.apiKeys[hash]
	if teamTaken || keyTaken {
		return apperr.New(apperr.ECONFLICT, "team %s already exists", t.ID)
	}
	// The adapter writes only these fields of the team at creation.
	s.teams[t.ID] = teamRow{team: teams.Team{ID: t.ID, Name: t.Name, CreatedAt: t.CreatedAt, A2AID: t.A2AID}}
	s.apiKeys[hash] = keyRow{key: copyKey(k), hash: hash}
	return nil
}

// GetTeam implements teams.Store. Returns ENOTFOUND.
func (s *Store) GetTeam(_ context.Context, teamID string) (teams.Team, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.teams[teamID]
	if !ok {
		return teams.Team{}, apperr.NotFound("team", teamID)
	}
	return r.team, nil
}

// PutAPIKey implements teams.Store. Returns ENOTFOUND (no such team) or
// ECONFLICT (the hash is taken).
func (s *Store) PutAPIKey(_ context.Context, k teams.APIKey, hash string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.teams[k.TeamID]; !ok {
		return apperr.NotFound("team", k.TeamID)
	}
	if _, ok := s.apiKeys[hash]; ok {
		return apperr.New(apperr.ECONFLICT, "key collision, retry")
	}
	s.apiKeys[hash] = keyRow{key: copyKey(k), hash: hash}
	return nil
}

// findKey is the adapter's gsi1 lookup of a key by team and id. (The index
// is eventually consistent there; here it is always current.) Call with
// the lock held.
func (s *Store) findKey(teamID, keyID string) (keyRow, error) {
	for _, r := range s.apiKeys {
		if r.key.TeamID == teamID && r.key.ID == keyID {
			return r, nil
		}
	}
	return keyRow{}, apperr.NotFound("api key", keyID)
}

// revokeCheck is the condition of the adapter's revoke update: the key is
// still active. Call with the lock held.
func (s *Store) revokeCheck(r keyRow, keyID string) error {
	if r.key.Status != teams.KeyActive {
		return apperr.New(apperr.ECONFLICT, "api key %s is already revoked", keyID).WithDetail("status", teams.KeyRevoked)
	}
	return nil
}

// RevokeAPIKey implements teams.Store. Returns ENOTFOUND (not the team's
// key) or ECONFLICT (already revoked).
func (s *Store) RevokeAPIKey(_ context.Context, teamID, keyID string, at time.Time) (teams.APIKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.findKey(teamID, keyID)
	if err != nil {
		return teams.APIKey{}, err
	}
	if err := s.revokeCheck(r, keyID); err != nil {
		return teams.APIKey{}, err
	}
	r.key.Status, r.key.RevokedAt = teams.KeyRevoked, &at
	s.apiKeys[r.hash] = r
	return copyKey(r.key), nil
}

// RotateAPIKey implements teams.Store: the old key revoked and the new one
// added at once. Returns ENOTFOUND or ECONFLICT (already revoked, or the
// new hash is taken).
func (s *Store) RotateAPIKey(_ context.Context, teamID, oldID string, k teams.APIKey, hash string, at time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.findKey(teamID, oldID)
	if err != nil {
		return err
	}
	if err := s.revokeCheck(r, oldID); err != nil {
		return err
	}
	if _, ok := s.apiKeys[hash]; ok {
		return apperr.New(apperr.ECONFLICT, "key collision, retry")
	}
	r.key.Status, r.key.RevokedAt = teams.KeyRevoked, &at
	s.apiKeys[r.hash] = r
	s.apiKeys[hash] = keyRow{key: copyKey(k), hash: hash}
	return nil
}

// ListAPIKeys implements teams.Store, newest first (by key id, which sorts
// by time).
func (s *Store) ListAPIKeys(_ context.Context, teamID string) ([]teams.APIKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var rows []row[teams.APIKey]
	for _, r := range s.apiKeys {
		if r.key.TeamID == teamID {
			rows = append(rows, row[teams.APIKey]{sk: r.key.ID, v: copyKey(r.key)})
		}
	}
	out, _, err := query(rows, true, "keys:"+teamID, pageAll, nil)
	if len(out) == 0 {
		out = nil // the adapter returns nil for a team without keys
	}
	return out, err
}

// APIKeyByHash implements teams.Store. Returns ENOTFOUND.
func (s *Store) APIKeyByHash(_ context.Context, hash string) (teams.APIKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.apiKeys[hash]
	if !ok {
		return teams.APIKey{}, apperr.NotFound("api key", "")
	}
	return copyKey(r.key), nil
}

// CountRequest implements authorizer.RequestCounter.
func (s *Store) CountRequest(_ context.Context, teamID string, second int64) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rates == nil {
		s.rates = map[string]int{}
	}
	k := teamID + "#" + strconv.FormatInt(second, 10)
	s.rates[k]++
	return s.rates[k], nil
}

// SetA2AID implements teams.Store: the id is given only to a team that has
// none (as the adapter's condition attribute_not_exists(a2a_id)).
func (s *Store) SetA2AID(_ context.Context, teamID, a2aID string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.teams[teamID]
	if !ok {
		return "", apperr.NotFound("team", teamID)
	}
	if r.team.A2AID == "" {
		r.team.A2AID = a2aID
		s.teams[teamID] = r
	}
	return r.team.A2AID, nil
}

// TeamByA2AID implements teams.Store. Returns ENOTFOUND.
func (s *Store) TeamByA2AID(_ context.Context, a2aID string) (teams.Team, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.teams {
		if a2aID != "" && r.team.A2AID == a2aID {
			return r.team, nil
		}
	}
	return teams.Team{}, apperr.NotFound("a2a agent", a2aID)
}
