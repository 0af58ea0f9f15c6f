// Package teamfake is the in-memory fake of teams.Store (teams and their
// API keys), as shared/store/teamstore is the DynamoDB one; both are held
// to the store contract (shared/testkit/storetest).
package teamfake

import (
	"context"
	"time"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/team/teams"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/memtable"
)

var _ teams.Store = (*Teams)(nil)

// Teams is teams.Store on a memtable.Table. Safe for concurrent use.
type Teams struct{ tb *memtable.Table }

// New returns the teams of tb (nil: a table of their own).
func New(tb *memtable.Table) *Teams {
	if tb == nil {
		tb = memtable.New()
	}
	return &Teams{tb: tb}
}

// keyRow is an APIKEY item.
type keyRow struct {
	key  teams.APIKey
	hash string
}

// state is the teams' part of the table.
type state struct {
	teams map[string]teams.Team // by team id
	keys  map[string]keyRow     // by hash
}

func stateOf(tb *memtable.Table) *state {
	return memtable.Part(tb, "teams", func() *state { return &state{teams: map[string]teams.Team{}, keys: map[string]keyRow{}} })
}

// Team returns the team's item (its DefaultAgent included) and whether it
// exists, for the fakes whose writes read it (agentfake). Call with the
// table locked.
func Team(tb *memtable.Table, teamID string) (teams.Team, bool) {
	t, ok := stateOf(tb).teams[teamID]
	return t, ok
}

// SetDefaultAgent sets the team's default agent (its item must exist).
// Call with the table locked.
func SetDefaultAgent(tb *memtable.Table, teamID, slug string) {
	st := stateOf(tb)
	t := st.teams[teamID]
	t.DefaultAgent = slug
	st.teams[teamID] = t
}

func copyKey(k teams.APIKey) teams.APIKey {
	k.RevokedAt = memtable.CloneTime(k.RevokedAt)
	return k
}

// CreateTeam implements teams.Store: the team and its first key, each
// conditioned on not existing. Either failing is ECONFLICT "team already
// exists", as the adapter reports any cancellation of this transaction.
func (s *Teams) CreateTeam(_ context.Context, t teams.Team, k teams.APIKey, hash string) error {
	s.tb.Lock()
	defer s.tb.Unlock()
	st := stateOf(s.tb)
	_, teamTaken := st.teams[t.ID]
	_, keyTaken := st.keys[hash]
	if teamTaken || keyTaken {
		return apperr.New(apperr.ECONFLICT, "team %s already exists", t.ID)
	}
	// The adapter writes only these fields of the team at creation.
	st.teams[t.ID] = teams.Team{ID: t.ID, Name: t.Name, CreatedAt: t.CreatedAt, A2AID: t.A2AID}
	st.keys[hash] = keyRow{key: copyKey(k), hash: hash}
	return nil
}

// GetTeam implements teams.Store. Returns ENOTFOUND.
func (s *Teams) GetTeam(_ context.Context, teamID string) (teams.Team, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	t, ok := stateOf(s.tb).teams[teamID]
	if !ok {
		return teams.Team{}, apperr.NotFound("team", teamID)
	}
	return t, nil
}

// PutAPIKey implements teams.Store. Returns ENOTFOUND (no such team) or
// ECONFLICT (the hash is taken).
func (s *Teams) PutAPIKey(_ context.Context, k teams.APIKey, hash string) error {
	s.tb.Lock()
	defer s.tb.Unlock()
	st := stateOf(s.tb)
	if _, ok := st.teams[k.TeamID]; !ok {
		return apperr.NotFound("team", k.TeamID)
	}
	if _, ok := st.keys[hash]; ok {
		return apperr.New(apperr.ECONFLICT, "key collision, retry")
	}
	st.keys[hash] = keyRow{key: copyKey(k), hash: hash}
	return nil
}

// findKey is the adapter's gsi1 lookup of a key by team and id. (The index
// is eventually consistent there; here it is always current.)
func (st *state) findKey(teamID, keyID string) (keyRow, error) {
	for _, r := range st.keys {
		if r.key.TeamID == teamID && r.key.ID == keyID {
			return r, nil
		}
	}
	return keyRow{}, apperr.NotFound("api key", keyID)
}

// revokeCheck is the condition of the adapter's revoke update: the key is
// still active.
func revokeCheck(r keyRow, keyID string) error {
	if r.key.Status != teams.KeyActive {
		return apperr.New(apperr.ECONFLICT, "api key %s is already revoked", keyID).WithDetail("status", teams.KeyRevoked)
	}
	return nil
}

// RevokeAPIKey implements teams.Store. Returns ENOTFOUND (not the team's
// key) or ECONFLICT (already revoked).
func (s *Teams) RevokeAPIKey(_ context.Context, teamID, keyID string, at time.Time) (teams.APIKey, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	st := stateOf(s.tb)
	r, err := st.findKey(teamID, keyID)
	if err != nil {
		return teams.APIKey{}, err
	}
	if err := revokeCheck(r, keyID); err != nil {
		return teams.APIKey{}, err
	}
	r.key.Status, r.key.RevokedAt = teams.KeyRevoked, &at
	st.keys[r.hash] = r
	return copyKey(r.key), nil
}

// RotateAPIKey implements teams.Store: the old key revoked and the new one
// added at once. Returns ENOTFOUND or ECONFLICT (already revoked, or the
// new hash is taken).
func (s *Teams) RotateAPIKey(_ context.Context, teamID, oldID string, k teams.APIKey, hash string, at time.Time) error {
	s.tb.Lock()
	defer s.tb.Unlock()
	st := stateOf(s.tb)
	r, err := st.findKey(teamID, oldID)
	if err != nil {
		return err
	}
	if err := revokeCheck(r, oldID); err != nil {
		return err
	}
	if _, ok := st.keys[hash]; ok {
		return apperr.New(apperr.ECONFLICT, "key collision, retry")
	}
	r.key.Status, r.key.RevokedAt = teams.KeyRevoked, &at
	st.keys[r.hash] = r
	st.keys[hash] = keyRow{key: copyKey(k), hash: hash}
	return nil
}

// ListAPIKeys implements teams.Store, newest first (by key id, which sorts
// by time); nil for a team without keys, as the adapter.
func (s *Teams) ListAPIKeys(_ context.Context, teamID string) ([]teams.APIKey, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	var rows []memtable.Row[teams.APIKey]
	for _, r := range stateOf(s.tb).keys {
		if r.key.TeamID == teamID {
			rows = append(rows, memtable.Row[teams.APIKey]{SK: r.key.ID, V: copyKey(r.key)})
		}
	}
	out, _, err := memtable.Query(rows, true, "keys:"+teamID, memtable.PageAll, nil)
	if len(out) == 0 {
		out = nil
	}
	return out, err
}

// APIKeyByHash implements teams.Store. Returns ENOTFOUND.
func (s *Teams) APIKeyByHash(_ context.Context, hash string) (teams.APIKey, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	r, ok := stateOf(s.tb).keys[hash]
	if !ok {
		return teams.APIKey{}, apperr.NotFound("api key", "")
	}
	return copyKey(r.key), nil
}

// SetA2AID implements teams.Store: the id is given only to a team that has
// none (as the adapter's condition attribute_not_exists(a2a_id)).
func (s *Teams) SetA2AID(_ context.Context, teamID, a2aID string) (string, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	st := stateOf(s.tb)
	t, ok := st.teams[teamID]
	if !ok {
		return "", apperr.NotFound("team", teamID)
	}
	if t.A2AID == "" {
		t.A2AID = a2aID
		st.teams[teamID] = t
	}
	return t.A2AID, nil
}

// TeamByA2AID implements teams.Store. Returns ENOTFOUND.
func (s *Teams) TeamByA2AID(_ context.Context, a2aID string) (teams.Team, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	for _, t := range stateOf(s.tb).teams {
		if a2aID != "" && t.A2AID == a2aID {
			return t, nil
		}
	}
	return teams.Team{}, apperr.NotFound("a2a agent", a2aID)
}
