package memstore

import (
	"context"
	"slices"

	"github.com/conclave-ai/conclave/shared/apperr"
	"github.com/conclave-ai/conclave/shared/interop"
)

var _ interop.PushConfigs = (*Store)(nil)

// PutPushConfig implements interop.PushConfigs: ELIMIT past the task's
// MaxPushConfigs, as the adapter's counter.
func (s *Store) PutPushConfig(_ context.Context, teamID string, c interop.PushConfig) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pushes == nil {
		s.pushes = map[key][]interop.PushConfig{}
	}
	k := key{teamID, c.TaskID}
	if len(s.pushes[k]) >= interop.MaxPushConfigs {
		return interop.PushLimitError()
	}
	s.pushes[k] = append(s.pushes[k], c)
	return nil
}

// GetPushConfig implements interop.PushConfigs. Returns ENOTFOUND.
func (s *Store) GetPushConfig(_ context.Context, teamID, taskID, id string) (interop.PushConfig, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.pushes[key{teamID, taskID}] {
		if c.ID == id {
			return c, nil
		}
	}
	return interop.PushConfig{}, apperr.NotFound("push config", id)
}

// ListPushConfigs implements interop.PushConfigs, oldest first.
func (s *Store) ListPushConfigs(_ context.Context, teamID, taskID string) ([]interop.PushConfig, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]interop.PushConfig{}, s.pushes[key{teamID, taskID}]...), nil
}

// DeletePushConfig implements interop.PushConfigs. Returns ENOTFOUND.
func (s *Store) DeletePushConfig(_ context.Context, teamID, taskID, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := key{teamID, taskID}
	i := slices.IndexFunc(s.pushes[k], func(c interop.PushConfig) bool { return c.ID == id })
	if i < 0 {
		return apperr.NotFound("push config", id)
	}
	s.pushes[k] = slices.Delete(s.pushes[k], i, i+1)
	return nil
}

// ListPushConfigsOfTeam returns every push config of the team (tests:
// that a refusal kept none).
func (s *Store) ListPushConfigsOfTeam(teamID string) []interop.PushConfig {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []interop.PushConfig
	for k, list := range s.pushes {
		if k.team == teamID {
			out = append(out, list...)
		}
	}
	return out
}
