package memstore

import (
	"context"
	"slices"

	"github.com/conclave-ai/conclave/shared/a2a/server"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
)

var _ server.PushConfigs = (*Store)(nil)

// PutPushConfig implements server.PushConfigs: ELIMIT past the task's
// MaxPushConfigs, as the adapter's counter.
func (s *Store) PutPushConfig(_ context.Context, teamID string, c server.PushConfig) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pushes == nil {
		s.pushes = map[key][]server.PushConfig{}
	}
	k := key{teamID, c.TaskID}
	if len(s.pushes[k]) >= server.MaxPushConfigs {
		return server.PushLimitError()
	}
	s.pushes[k] = append(s.pushes[k], c)
	return nil
}

// GetPushConfig implements server.PushConfigs. Returns ENOTFOUND.
func (s *Store) GetPushConfig(_ context.Context, teamID, taskID, id string) (server.PushConfig, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.pushes[key{teamID, taskID}] {
		if c.ID == id {
			return c, nil
		}
	}
	return server.PushConfig{}, apperr.NotFound("push config", id)
}

// ListPushConfigs implements server.PushConfigs, oldest first.
func (s *Store) ListPushConfigs(_ context.Context, teamID, taskID string) ([]server.PushConfig, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]server.PushConfig{}, s.pushes[key{teamID, taskID}]...), nil
}

// DeletePushConfig implements server.PushConfigs. Returns ENOTFOUND.
func (s *Store) DeletePushConfig(_ context.Context, teamID, taskID, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := key{teamID, taskID}
	i := slices.IndexFunc(s.pushes[k], func(c server.PushConfig) bool { return c.ID == id })
	if i < 0 {
		return apperr.NotFound("push config", id)
	}
	s.pushes[k] = slices.Delete(s.pushes[k], i, i+1)
	return nil
}

// ListPushConfigsOfTeam returns every push config of the team (tests:
// that a refusal kept none).
func (s *Store) ListPushConfigsOfTeam(teamID string) []server.PushConfig {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []server.PushConfig
	for k, list := range s.pushes {
		if k.team == teamID {
			out = append(out, list...)
		}
	}
	return out
}
