// Package pushfake is the in-memory fake of server.PushConfigs (the A2A
// push-notification configs), as shared/store/pushstore is the DynamoDB
// one; both are held to the store contract (shared/testkit/storetest).
package pushfake

import (
	"context"
	"slices"

	"github.com/conclave-ai/conclave/shared/a2a/server"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/memtable"
)

var _ server.PushConfigs = (*PushConfigs)(nil)

// PushConfigs is server.PushConfigs on a memtable.Table. Safe for concurrent use.
type PushConfigs struct{ tb *memtable.Table }

// New returns the push configs of tb (nil: a table of their own).
func New(tb *memtable.Table) *PushConfigs {
	if tb == nil {
		tb = memtable.New()
	}
	return &PushConfigs{tb: tb}
}

// configs are the push configs, by team and task, oldest first. Call with
// the table locked.
func (s *PushConfigs) configs() map[memtable.Key][]server.PushConfig {
	return *memtable.Part(s.tb, "pushconfigs", func() *map[memtable.Key][]server.PushConfig {
		m := map[memtable.Key][]server.PushConfig{}
		return &m
	})
}

// PutPushConfig implements server.PushConfigs: ELIMIT past the task's
// MaxPushConfigs, as the adapter's counter.
func (s *PushConfigs) PutPushConfig(_ context.Context, teamID string, c server.PushConfig) error {
	s.tb.Lock()
	defer s.tb.Unlock()
	k := memtable.Key{Team: teamID, ID: c.TaskID}
	if len(s.configs()[k]) >= server.MaxPushConfigs {
		return server.PushLimitError()
	}
	s.configs()[k] = append(s.configs()[k], c)
	return nil
}

// GetPushConfig implements server.PushConfigs. Returns ENOTFOUND.
func (s *PushConfigs) GetPushConfig(_ context.Context, teamID, taskID, id string) (server.PushConfig, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	for _, c := range s.configs()[memtable.Key{Team: teamID, ID: taskID}] {
		if c.ID == id {
			return c, nil
		}
	}
	return server.PushConfig{}, apperr.NotFound("push config", id)
}

// ListPushConfigs implements server.PushConfigs, oldest first.
func (s *PushConfigs) ListPushConfigs(_ context.Context, teamID, taskID string) ([]server.PushConfig, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	return append([]server.PushConfig{}, s.configs()[memtable.Key{Team: teamID, ID: taskID}]...), nil
}

// DeletePushConfig implements server.PushConfigs. Returns ENOTFOUND.
func (s *PushConfigs) DeletePushConfig(_ context.Context, teamID, taskID, id string) error {
	s.tb.Lock()
	defer s.tb.Unlock()
	k := memtable.Key{Team: teamID, ID: taskID}
	i := slices.IndexFunc(s.configs()[k], func(c server.PushConfig) bool { return c.ID == id })
	if i < 0 {
		return apperr.NotFound("push config", id)
	}
	s.configs()[k] = slices.Delete(s.configs()[k], i, i+1)
	return nil
}

// ListPushConfigsOfTeam returns every push config of the team (tests:
// that a refusal kept none).
func (s *PushConfigs) ListPushConfigsOfTeam(teamID string) []server.PushConfig {
	s.tb.Lock()
	defer s.tb.Unlock()
	var out []server.PushConfig
	for k, list := range s.configs() {
		if k.Team == teamID {
			out = append(out, list...)
		}
	}
	return out
}
