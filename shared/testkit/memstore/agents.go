package memstore

import (
	"context"
	"sort"
	"time"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/team/agents"
)

// copyAgent deep-copies an agent as the adapter's item stores it: IsDefault
// is not stored (the service derives it) and nil skills read back empty.
func copyAgent(a agents.Agent) agents.Agent {
	teamID := a.TeamID
	c := readDoc[agents.Agent](doc(a))
	c.TeamID, c.IsDefault = teamID, false
	if a.Remote != nil {
		// The secret's id is stored, never shown (json:"-").
		c.Remote.SecretID = a.Remote.SecretID
	}
	if c.Skills == nil {
		c.Skills = []agents.Skill{}
	}
	return c
}

// CreateAgent implements agents.Store: the team must exist (ENOTFOUND)
// and the slug be free in it (ECONFLICT, reason DuplicateSlug). As in the
// adapter's transaction, a missing team is reported first.
func (s *Store) CreateAgent(_ context.Context, a agents.Agent) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.teams[a.TeamID]; !ok {
		return apperr.NotFound("team", a.TeamID)
	}
	k := key{a.TeamID, a.Slug}
	if _, ok := s.agents[k]; ok {
		return apperr.New(apperr.ECONFLICT, "an agent with slug %q already exists", a.Slug).WithReason("DuplicateSlug")
	}
	s.agents[k] = copyAgent(a)
	return nil
}

// GetAgent implements agents.Store (and every directory). Returns
// ENOTFOUND.
func (s *Store) GetAgent(_ context.Context, teamID, slug string) (agents.Agent, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.getAgent(teamID, slug)
}

func (s *Store) getAgent(teamID, slug string) (agents.Agent, error) {
	a, ok := s.agents[key{teamID, slug}]
	if !ok {
		return agents.Agent{}, apperr.NotFound("agent", slug)
	}
	return copyAgent(a), nil
}

// ListAgents implements agents.Store: one page by slug. As in the adapter
// the status filter applies after the limit, so a page may hold fewer than
// Limit agents while a next token is returned. The adapter always sends
// p.Limit to DynamoDB, which rejects a limit below 1; so does this store
// (EINTERNAL): callers must normalize the page.
func (s *Store) ListAgents(_ context.Context, teamID string, f agents.Filter, p paging.Page) ([]agents.Agent, string, error) {
	if p.Limit < 1 {
		return nil, "", internal("ListAgents: limit must be at least 1 (DynamoDB rejects Limit 0)")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var keep func(agents.Agent) bool
	if f.Status != "" {
		keep = func(a agents.Agent) bool { return a.Status == f.Status }
	}
	return query(s.agentRows(teamID), false, "agents:"+teamID, p, keep)
}

func (s *Store) agentRows(teamID string) []row[agents.Agent] {
	var rows []row[agents.Agent]
	for k, a := range s.agents {
		if k.team == teamID {
			rows = append(rows, row[agents.Agent]{sk: a.Slug, v: copyAgent(a)})
		}
	}
	return rows
}

// UpdateAgent implements agents.Store: a put conditioned on the agent
// existing at version a.Version-1. Returns ENOTFOUND (missing) or ECONFLICT
// with the current version.
func (s *Store) UpdateAgent(_ context.Context, a agents.Agent) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := key{a.TeamID, a.Slug}
	cur, ok := s.agents[k]
	if !ok {
		return apperr.NotFound("agent", a.Slug)
	}
	if cur.Version != a.Version-1 {
		return apperr.New(apperr.ECONFLICT, "agent %q was changed by another request", a.Slug).WithDetail("current_version", cur.Version)
	}
	s.agents[k] = copyAgent(a)
	return nil
}

// SetStatus implements agents.Store. Leaving active is conditioned on the
// agent not being the team's default (ECONFLICT, reason DefaultAgent);
// a missing agent is ENOTFOUND. The status change bumps the version.
func (s *Store) SetStatus(_ context.Context, teamID, slug, status string, at time.Time) (agents.Agent, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := key{teamID, slug}
	a, ok := s.agents[k]
	if !ok {
		return agents.Agent{}, apperr.NotFound("agent", slug)
	}
	// A missing team item passes the adapter's condition
	// (attribute_not_exists(default_agent)), so only a real default blocks.
	if status != agents.StatusActive && s.teams[teamID].team.DefaultAgent == slug {
		return agents.Agent{}, apperr.New(apperr.ECONFLICT, "%q is the team's default agent and must stay active; set another default first", slug).
			WithReason("DefaultAgent")
	}
	a.Status, a.UpdatedAt, a.Version = status, at, a.Version+1
	s.agents[k] = a
	return copyAgent(a), nil
}

// SetDefault implements agents.Store: the agent must be active (ECONFLICT
// with its status; ENOTFOUND when missing) and the team exist (ENOTFOUND).
func (s *Store) SetDefault(_ context.Context, teamID, slug string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.agents[key{teamID, slug}]
	if !ok {
		return apperr.NotFound("agent", slug)
	}
	if a.Status != agents.StatusActive {
		return apperr.New(apperr.ECONFLICT, "agent %q is %s; only an active agent can be the default", slug, a.Status).
			WithDetail("status", a.Status)
	}
	t, ok := s.teams[teamID]
	if !ok {
		return apperr.NotFound("team", teamID)
	}
	t.team.DefaultAgent = slug
	s.teams[teamID] = t
	return nil
}

// DefaultAgent implements agents.Store (and conversations.AgentDirectory):
// the team's default agent, "" if none. Returns ENOTFOUND for an unknown
// team.
func (s *Store) DefaultAgent(_ context.Context, teamID string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.teams[teamID]
	if !ok {
		return "", apperr.NotFound("team", teamID)
	}
	return t.team.DefaultAgent, nil
}

// agentsWith returns the team's agents passing keep, by slug. Call with
// the lock held.
func (s *Store) agentsWith(teamID string, keep func(agents.Agent) bool) []agents.Agent {
	var out []agents.Agent
	for k, a := range s.agents {
		if k.team == teamID && keep(a) {
			out = append(out, copyAgent(a))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Slug < out[j].Slug })
	return out
}

// ActiveAgents implements expertgate.Source, conversations.AgentDirectory
// and messaging.Directory: the active agents by slug (nil when none, as
// the adapter).
func (s *Store) ActiveAgents(_ context.Context, teamID string) ([]agents.Agent, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.agentsWith(teamID, func(a agents.Agent) bool { return a.Status == agents.StatusActive }), nil
}

// TeamAgents implements memory.Directory and discovery.Directory: the
// agents that are not archived, by slug.
func (s *Store) TeamAgents(_ context.Context, teamID string) ([]agents.Agent, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.agentsWith(teamID, func(a agents.Agent) bool { return a.Status != agents.StatusArchived }), nil
}

// AgentLoads implements expertgate.Source and discovery.Directory: every
// agent's counters that has any, negative counters read as zero.
func (s *Store) AgentLoads(_ context.Context, teamID string) (map[string]routing.Load, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]routing.Load{}
	for k, l := range s.loads {
		if k.team == teamID {
			out[k.id] = routing.Load{ActiveTasks: max(0, l.activeTasks), ActiveConversations: max(0, l.activeConversations), LatencyMS: l.latencyMS}
		}
	}
	return out, nil
}

// DueCards implements agents.DueCards: the A2A agents of every team
// whose next card check is before before, earliest first, at most limit.
func (s *Store) DueCards(_ context.Context, before time.Time, limit int) ([]agents.Agent, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []agents.Agent
	for _, a := range s.agents {
		if a.Remote != nil && a.Remote.NextCheck().Before(before) {
			out = append(out, copyAgent(a))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Remote.NextCheck().Before(out[j].Remote.NextCheck()) })
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}
