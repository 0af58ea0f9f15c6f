// Package agentfake is the in-memory fake of agents.Store and the agent
// directories (the team's active agents, those not archived, the A2A
// agents due a card check), as shared/store/agentstore is the DynamoDB
// one; both are held to the store contract (shared/testkit/storetest).
// It also keeps the agents' counters (Load), which the tasks' and
// conversations' writes move, as the adapters' LOAD items.
package agentfake

import (
	"context"
	"sort"
	"time"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/memtable"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/teamfake"
)

var (
	_ agents.Store    = (*Agents)(nil)
	_ agents.DueCards = (*Agents)(nil)
)

// Agents is agents.Store on a memtable.Table: an agent needs its team,
// whose item (teamfake) holds the default agent. Safe for concurrent use.
type Agents struct{ tb *memtable.Table }

// New returns the agents of tb (nil: a table of their own).
func New(tb *memtable.Table) *Agents {
	if tb == nil {
		tb = memtable.New()
	}
	return &Agents{tb: tb}
}

// state is the agents' part of the table.
type state struct {
	agents map[memtable.Key]agents.Agent
	loads  map[memtable.Key]*Load // by team and agent slug
}

func stateOf(tb *memtable.Table) *state {
	return memtable.Part(tb, "agents", func() *state {
		return &state{agents: map[memtable.Key]agents.Agent{}, loads: map[memtable.Key]*Load{}}
	})
}

// Load is an agent's LOAD item: counters that may go below zero exactly as
// the adapters' unconditional ADDs can (readers clamp them).
type Load struct {
	ActiveTasks         int
	QueuedWork          int
	SlotWaiters         int
	ActiveConversations int
	LatencyMS           float64
}

// LoadOf returns the agent's counters, made as the adapters' ADD makes
// the item. Call with the table locked.
func LoadOf(tb *memtable.Table, teamID, slug string) *Load {
	st := stateOf(tb)
	k := memtable.Key{Team: teamID, ID: slug}
	l := st.loads[k]
	if l == nil {
		l = &Load{}
		st.loads[k] = l
	}
	return l
}

// LoadIf returns the agent's counters, nil when it has none. Call with
// the table locked.
func LoadIf(tb *memtable.Table, teamID, slug string) *Load {
	return stateOf(tb).loads[memtable.Key{Team: teamID, ID: slug}]
}

// Loads returns the counters of the team's agents that have any, by slug.
// Call with the table locked.
func Loads(tb *memtable.Table, teamID string) map[string]*Load {
	out := map[string]*Load{}
	for k, l := range stateOf(tb).loads {
		if k.Team == teamID {
			out[k.ID] = l
		}
	}
	return out
}

// copyAgent deep-copies an agent as the adapter's item stores it: IsDefault
// is not stored (the service derives it) and nil skills read back empty.
func copyAgent(a agents.Agent) agents.Agent {
	teamID := a.TeamID
	c := memtable.ReadDoc[agents.Agent](memtable.Doc(a))
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
func (s *Agents) CreateAgent(_ context.Context, a agents.Agent) error {
	s.tb.Lock()
	defer s.tb.Unlock()
	if _, ok := teamfake.Team(s.tb, a.TeamID); !ok {
		return apperr.NotFound("team", a.TeamID)
	}
	st := stateOf(s.tb)
	k := memtable.Key{Team: a.TeamID, ID: a.Slug}
	if _, ok := st.agents[k]; ok {
		return apperr.New(apperr.ECONFLICT, "an agent with slug %q already exists", a.Slug).WithReason("DuplicateSlug")
	}
	st.agents[k] = copyAgent(a)
	return nil
}

// GetAgent implements agents.Store (and every directory). Returns
// ENOTFOUND.
func (s *Agents) GetAgent(_ context.Context, teamID, slug string) (agents.Agent, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	a, ok := Agent(s.tb, teamID, slug)
	if !ok {
		return agents.Agent{}, apperr.NotFound("agent", slug)
	}
	return a, nil
}

// Agent returns a copy of the team's agent and whether it exists, for the
// fakes whose writes check it (taskfake's assignee and creator). Call with
// the table locked.
func Agent(tb *memtable.Table, teamID, slug string) (agents.Agent, bool) {
	a, ok := stateOf(tb).agents[memtable.Key{Team: teamID, ID: slug}]
	if !ok {
		return agents.Agent{}, false
	}
	return copyAgent(a), true
}

// ListAgents implements agents.Store: one page by slug. As in the adapter
// the status filter applies after the limit, so a page may hold fewer than
// Limit agents while a next token is returned. The adapter always sends
// p.Limit to DynamoDB, which rejects a limit below 1; so does this store
// (EINTERNAL): callers must normalize the page.
func (s *Agents) ListAgents(_ context.Context, teamID string, f agents.Filter, p paging.Page) ([]agents.Agent, string, error) {
	if p.Limit < 1 {
		return nil, "", memtable.Internal("ListAgents: limit must be at least 1 (DynamoDB rejects Limit 0)")
	}
	s.tb.Lock()
	defer s.tb.Unlock()
	var keep func(agents.Agent) bool
	if f.Status != "" {
		keep = func(a agents.Agent) bool { return a.Status == f.Status }
	}
	var rows []memtable.Row[agents.Agent]
	for k, a := range stateOf(s.tb).agents {
		if k.Team == teamID {
			rows = append(rows, memtable.Row[agents.Agent]{SK: a.Slug, V: copyAgent(a)})
		}
	}
	return memtable.Query(rows, false, "agents:"+teamID, p, keep)
}

// UpdateAgent implements agents.Store: a put conditioned on the agent
// existing at version a.Version-1. Returns ENOTFOUND (missing) or ECONFLICT
// with the current version.
func (s *Agents) UpdateAgent(_ context.Context, a agents.Agent) error {
	s.tb.Lock()
	defer s.tb.Unlock()
	st := stateOf(s.tb)
	k := memtable.Key{Team: a.TeamID, ID: a.Slug}
	cur, ok := st.agents[k]
	if !ok {
		return apperr.NotFound("agent", a.Slug)
	}
	if cur.Version != a.Version-1 {
		return apperr.New(apperr.ECONFLICT, "agent %q was changed by another request", a.Slug).WithDetail("current_version", cur.Version)
	}
	st.agents[k] = copyAgent(a)
	return nil
}

// SetStatus implements agents.Store. Leaving active is conditioned on the
// agent not being the team's default (ECONFLICT, reason DefaultAgent);
// a missing agent is ENOTFOUND. The status change bumps the version.
func (s *Agents) SetStatus(_ context.Context, teamID, slug, status string, at time.Time) (agents.Agent, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	st := stateOf(s.tb)
	k := memtable.Key{Team: teamID, ID: slug}
	a, ok := st.agents[k]
	if !ok {
		return agents.Agent{}, apperr.NotFound("agent", slug)
	}
	// A missing team item passes the adapter's condition
	// (attribute_not_exists(default_agent)), so only a real default blocks.
	if t, _ := teamfake.Team(s.tb, teamID); status != agents.StatusActive && t.DefaultAgent == slug {
		return agents.Agent{}, apperr.New(apperr.ECONFLICT, "%q is the team's default agent and must stay active; set another default first", slug).
			WithReason("DefaultAgent")
	}
	a.Status, a.UpdatedAt, a.Version = status, at, a.Version+1
	st.agents[k] = a
	return copyAgent(a), nil
}

// SetDefault implements agents.Store: the agent must be active (ECONFLICT
// with its status; ENOTFOUND when missing) and the team exist (ENOTFOUND).
func (s *Agents) SetDefault(_ context.Context, teamID, slug string) error {
	s.tb.Lock()
	defer s.tb.Unlock()
	a, ok := stateOf(s.tb).agents[memtable.Key{Team: teamID, ID: slug}]
	if !ok {
		return apperr.NotFound("agent", slug)
	}
	if a.Status != agents.StatusActive {
		return apperr.New(apperr.ECONFLICT, "agent %q is %s; only an active agent can be the default", slug, a.Status).
			WithDetail("status", a.Status)
	}
	if _, ok := teamfake.Team(s.tb, teamID); !ok {
		return apperr.NotFound("team", teamID)
	}
	teamfake.SetDefaultAgent(s.tb, teamID, slug)
	return nil
}

// DefaultAgent implements agents.Store (and conversations.AgentDirectory):
// the team's default agent, "" if none. Returns ENOTFOUND for an unknown
// team.
func (s *Agents) DefaultAgent(_ context.Context, teamID string) (string, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	t, ok := teamfake.Team(s.tb, teamID)
	if !ok {
		return "", apperr.NotFound("team", teamID)
	}
	return t.DefaultAgent, nil
}

// agentsWith returns the team's agents passing keep, by slug. Call with
// the table locked.
func (s *Agents) agentsWith(teamID string, keep func(agents.Agent) bool) []agents.Agent {
	var out []agents.Agent
	for k, a := range stateOf(s.tb).agents {
		if k.Team == teamID && keep(a) {
			out = append(out, copyAgent(a))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Slug < out[j].Slug })
	return out
}

// ActiveAgents implements expertgate.Source, conversations.AgentDirectory
// and messaging.Directory: the active agents by slug (nil when none, as
// the adapter).
func (s *Agents) ActiveAgents(_ context.Context, teamID string) ([]agents.Agent, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	return s.agentsWith(teamID, func(a agents.Agent) bool { return a.Status == agents.StatusActive }), nil
}

// TeamAgents implements memory.Directory and discovery.Directory: the
// agents that are not archived, by slug.
func (s *Agents) TeamAgents(_ context.Context, teamID string) ([]agents.Agent, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	return s.agentsWith(teamID, func(a agents.Agent) bool { return a.Status != agents.StatusArchived }), nil
}

// DueCards implements agents.DueCards: the A2A agents of every team
// whose next card check is before before, earliest first, at most limit.
func (s *Agents) DueCards(_ context.Context, before time.Time, limit int) ([]agents.Agent, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	var out []agents.Agent
	for _, a := range stateOf(s.tb).agents {
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
