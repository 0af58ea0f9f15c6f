package memstore

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/tools/toolpacks"
)

var _ toolpacks.RemoteStore = (*Store)(nil)

// remoteOf copies r (its tools included) so a caller's later change does
// not reach the store.
func remoteOf(r toolpacks.Remote) toolpacks.Remote {
	raw, _ := json.Marshal(r.Tools)
	r.Tools = nil
	_ = json.Unmarshal(raw, &r.Tools)
	return r
}

// CreateRemote implements toolpacks.RemoteStore: ECONFLICT for a name
// taken, ELIMIT at the cap, as the adapter's transaction.
func (s *Store) CreateRemote(_ context.Context, teamID string, r toolpacks.Remote) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.remotes == nil {
		s.remotes = map[string]map[string]toolpacks.Remote{}
	}
	team := s.remotes[teamID]
	if _, ok := team[r.Name]; ok {
		return apperr.New(apperr.ECONFLICT, "tool pack %q was created meanwhile", r.Name)
	}
	if len(team) >= toolpacks.MaxRemotePacks {
		return toolpacks.LimitError()
	}
	if team == nil {
		team = map[string]toolpacks.Remote{}
		s.remotes[teamID] = team
	}
	team[r.Name] = remoteOf(r)
	return nil
}

// ReplaceRemote implements toolpacks.RemoteStore.
func (s *Store) ReplaceRemote(_ context.Context, teamID string, r toolpacks.Remote) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.remotes[teamID][r.Name]; !ok {
		return apperr.NotFound("tool pack", r.Name)
	}
	s.remotes[teamID][r.Name] = remoteOf(r)
	return nil
}

// GetRemote implements toolpacks.RemoteStore.
func (s *Store) GetRemote(_ context.Context, teamID, name string) (toolpacks.Remote, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.remotes[teamID][name]
	if !ok {
		return toolpacks.Remote{}, apperr.NotFound("tool pack", name)
	}
	return remoteOf(r), nil
}

// ListRemotes implements toolpacks.RemoteStore: by name, as the
// adapter's query.
func (s *Store) ListRemotes(_ context.Context, teamID string) ([]toolpacks.Remote, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []toolpacks.Remote
	for _, r := range s.remotes[teamID] {
		out = append(out, remoteOf(r))
	}
	slices.SortFunc(out, func(a, b toolpacks.Remote) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// DeleteRemote implements toolpacks.RemoteStore.
func (s *Store) DeleteRemote(_ context.Context, teamID, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.remotes[teamID][name]; !ok {
		return apperr.NotFound("tool pack", name)
	}
	delete(s.remotes[teamID], name)
	return nil
}
