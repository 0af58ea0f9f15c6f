// Package memory is the team memory bus: what agents learn, private to one
// agent (or the few it names) or shared with the team. Each agent's memory
// context is cached; a shared memory publishes MemoryShared, and its
// consumer (the memory-invalidator function) drops the cached context of
// every agent of the team, so the next reply of any agent sees it without
// anyone telling that agent (architecture decision 5).
package memory

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/clock"
	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/team/agents"
)

// Visibilities.
const (
	Private = "private" // the author, and any agents the memory names
	Shared  = "shared"  // every agent of the team
)

// Types of memory.
var Types = []string{"fact", "preference", "episodic", "procedural", "user_profile"}

// DetailType is the event a shared memory publishes.
const DetailType = "MemoryShared"

// Limits.
const (
	MaxContent = 2000
	// ContextMemories bounds how many memories (newest first) one context
	// holds, so a prompt stays small.
	ContextMemories = 50
)

// Memory is one thing an agent (or the team) knows.
type Memory struct {
	ID         string `json:"id"`
	TeamID     string `json:"-"`
	Author     string `json:"author"`
	Type       string `json:"type"`
	Visibility string `json:"visibility"`
	// Agents who may see a private memory besides its author (a handoff
	// memory is visible to both agents).
	Agents []string `json:"agents,omitempty"`
	// UserID scopes a user_profile memory to one person (profile.go);
	// empty on the team's default profile and on every other type.
	UserID    string    `json:"user_id,omitempty"`
	Content   string    `json:"content"`
	Source    string    `json:"source"` // api, handoff
	CreatedAt time.Time `json:"created_at"`
}

// VisibleTo reports whether agent may see m.
func (m Memory) VisibleTo(agent string) bool {
	if m.Visibility == Shared || m.Author == agent {
		return true
	}
	for _, a := range m.Agents {
		if a == agent {
			return true
		}
	}
	return false
}

// Context is what an agent knows when it answers: the team's shared
// memories (the user profile apart) and its own private memories.
type Context struct {
	Agent       string    `json:"agent"`
	Shared      []Memory  `json:"shared"`
	UserProfile []Memory  `json:"user_profile"`
	Private     []Memory  `json:"private"`
	BuiltAt     time.Time `json:"built_at"`
	// Cached is true when this context came from the cache.
	Cached bool `json:"cached"`
}

// IDs lists every memory in the context.
func (c Context) IDs() []string {
	var out []string
	for _, l := range [][]Memory{c.UserProfile, c.Shared, c.Private} {
		for _, m := range l {
			out = append(out, m.ID)
		}
	}
	return out
}

// SharedEvent is the MemoryShared detail.
type SharedEvent struct {
	TeamID    string    `json:"team_id"`
	MemoryID  string    `json:"memory_id"`
	Author    string    `json:"author"`
	Type      string    `json:"type"`
	CreatedAt time.Time `json:"created_at"`
}

// Store persists memories and cached contexts, scoped by team.
type Store interface {
	PutMemory(ctx context.Context, m Memory) error
	// RecentMemories returns the team's memories, newest first.
	RecentMemories(ctx context.Context, teamID string, limit int) ([]Memory, error)
	ListMemories(ctx context.Context, teamID string, p paging.Page) ([]Memory, string, error)
	GetContext(ctx context.Context, teamID, agent string) (Context, bool, error)
	// MemoryEpoch is the team's invalidation counter; DropContexts bumps it.
	MemoryEpoch(ctx context.Context, teamID string) (int, error)
	// PutContext caches c only if the epoch is still the one read before
	// building it, so a context built while a memory was being added (and
	// the caches dropped) is never cached stale. It reports whether it did.
	PutContext(ctx context.Context, teamID string, c Context, epoch int) (bool, error)
	DropContexts(ctx context.Context, teamID string, agents []string) error
}

// Directory finds the team's agents.
type Directory interface {
	GetAgent(ctx context.Context, teamID, slug string) (agents.Agent, error)
	TeamAgents(ctx context.Context, teamID string) ([]agents.Agent, error)
}

// Publisher announces events.
type Publisher interface {
	Publish(ctx context.Context, detailType string, detail any) error
}

// Service implements the memory bus.
type Service struct {
	Store Store
	Dir   Directory
	Bus   Publisher
	Now   clock.Func
}

// CreateInput is the body of POST /v1/agents/{slug}/memories.
type CreateInput struct {
	Type       string `json:"type"`
	Visibility string `json:"visibility"`
	Content    string `json:"content"`
	// UserID is the person a user_profile memory belongs to (profile.go).
	UserID string `json:"user_id,omitempty"`
}

// New validates a memory authored by agent (not stored).
func (s *Service) New(author string, in CreateInput, source string) (Memory, error) {
	if in.Type == "" {
		in.Type = "fact"
	}
	ok := false
	for _, t := range Types {
		ok = ok || t == in.Type
	}
	if !ok {
		return Memory{}, apperr.Invalid("type", "type must be one of %s", strings.Join(Types, ", "))
	}
	if in.Visibility == "" {
		in.Visibility = Private
	}
	if in.Visibility != Private && in.Visibility != Shared {
		return Memory{}, apperr.Invalid("visibility", "visibility must be private or shared")
	}
	if in.Type == "user_profile" && in.Visibility != Shared {
		return Memory{}, apperr.Invalid("visibility", "the user profile is shared with every agent")
	}
	if err := validUserID(in); err != nil {
		return Memory{}, err
	}
	n := utf8.RuneCountInString(strings.TrimSpace(in.Content))
	if n == 0 || n > MaxContent {
		return Memory{}, apperr.Invalid("content", "content must be 1 to %d characters", MaxContent)
	}
	return Memory{ID: ids.New("mem"), Author: author, Type: in.Type, Visibility: in.Visibility, UserID: in.UserID, Content: strings.TrimSpace(in.Content), Source: source, CreatedAt: s.Now.UTC()}, nil
}

// Create stores a memory an agent learned. A shared one is announced
// (MemoryShared), and every agent's cached context is dropped by the
// consumer; a private one drops its author's cache at once. A person's
// user_profile is theirs (profileOwner). Returns EINVALID, ENOTFOUND,
// EFORBIDDEN.
func (s *Service) Create(ctx context.Context, teamID, author string, in CreateInput) (Memory, error) {
	in, err := profileOwner(ctx, in)
	if err != nil {
		return Memory{}, err
	}
	if !agents.ValidSlug(author) {
		return Memory{}, apperr.NotFound("agent", author)
	}
	if _, err := s.Dir.GetAgent(ctx, teamID, author); err != nil {
		return Memory{}, err
	}
	m, err := s.New(author, in, "api")
	if err != nil {
		return Memory{}, err
	}
	m.TeamID = teamID
	if err := s.Store.PutMemory(ctx, m); err != nil {
		return Memory{}, err
	}
	if m.Visibility == Private {
		return m, s.Store.DropContexts(ctx, teamID, []string{author})
	}
	if err := s.Bus.Publish(ctx, DetailType, SharedEvent{TeamID: teamID, MemoryID: m.ID, Author: author, Type: m.Type, CreatedAt: m.CreatedAt}); err != nil {
		return Memory{}, apperr.Wrap(apperr.EINTERNAL, err, "memory %s stored but not announced", m.ID)
	}
	return m, nil
}

// Visible lists the memories an agent can see, newest first.
func (s *Service) Visible(ctx context.Context, teamID, agent string) ([]Memory, error) {
	if !agents.ValidSlug(agent) {
		return nil, apperr.NotFound("agent", agent)
	}
	if _, err := s.Dir.GetAgent(ctx, teamID, agent); err != nil {
		return nil, err
	}
	all, err := s.Store.RecentMemories(ctx, teamID, 500)
	if err != nil {
		return nil, err
	}
	out := []Memory{}
	for _, m := range all {
		if m.VisibleTo(agent) {
			out = append(out, m)
		}
	}
	return out, nil
}

// ForAgent returns the agent's memory context when it answers no person
// (a key's own turn, a task): ForPerson with no person, so only the
// team's default profiles.
func (s *Service) ForAgent(ctx context.Context, teamID, agent string) (Context, error) {
	return s.ForPerson(ctx, teamID, agent, "")
}

// ForPerson returns the agent's memory context when it answers person:
// the cached one, or a fresh one that is then cached until a memory
// invalidates it, narrowed to the team's default profiles and person's
// own (Context.For; the cache holds every profile, one per agent).
func (s *Service) ForPerson(ctx context.Context, teamID, agent, person string) (Context, error) {
	c, err := s.forAgent(ctx, teamID, agent)
	if err != nil {
		return Context{}, err
	}
	return c.For(person), nil
}

func (s *Service) forAgent(ctx context.Context, teamID, agent string) (Context, error) {
	if c, ok, err := s.Store.GetContext(ctx, teamID, agent); err != nil {
		return Context{}, err
	} else if ok {
		c.Cached = true
		return c, nil
	}
	epoch, err := s.Store.MemoryEpoch(ctx, teamID)
	if err != nil {
		return Context{}, err
	}
	all, err := s.Store.RecentMemories(ctx, teamID, 4*ContextMemories)
	if err != nil {
		return Context{}, err
	}
	c := Context{Agent: agent, Shared: []Memory{}, UserProfile: []Memory{}, Private: []Memory{}, BuiltAt: s.Now.UTC()}
	n := 0
	for _, m := range all {
		if n == ContextMemories || !m.VisibleTo(agent) {
			continue
		}
		n++
		switch {
		case m.Type == "user_profile":
			c.UserProfile = append(c.UserProfile, m)
		case m.Visibility == Shared:
			c.Shared = append(c.Shared, m)
		default:
			c.Private = append(c.Private, m)
		}
	}
	if _, err := s.Store.PutContext(ctx, teamID, c, epoch); err != nil {
		return Context{}, err
	}
	return c, nil
}

// InvalidateTeam drops the cached context of every agent of the team (the
// MemoryShared consumer). Dropping is idempotent.
func (s *Service) InvalidateTeam(ctx context.Context, teamID string) (int, error) {
	list, err := s.Dir.TeamAgents(ctx, teamID)
	if err != nil {
		return 0, err
	}
	slugs := make([]string, len(list))
	for i, a := range list {
		slugs[i] = a.Slug
	}
	return len(slugs), s.Store.DropContexts(ctx, teamID, slugs)
}
