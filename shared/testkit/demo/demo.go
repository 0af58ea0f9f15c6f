// Package demo is the demo team: the agents and credentials that make run
// seeds into the local cloud and that unit tests load into the in-memory
// store (shared/testkit/memstore), so both pin the same team. The credentials are
// for local use only; a deployed stage never has them (teams there are made
// with the admin CLI and get random keys).
package demo

import (
	"context"
	"time"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/team/teams"
)

// Demo credentials. They exist only in a local table or an in-memory store.
const (
	TeamID      = "team_demo"
	APIKey      = "ck_demo_local_only_0000000000000001"
	OtherTeamID = "team_other"
	OtherAPIKey = "ck_demo_local_only_0000000000000002"
	// A2AID and OtherA2AID are the two teams' A2A ids (docs/a2a.md): fixed,
	// so the docs can name the demo team's agent card.
	A2AID      = "a2a_00000000000000000000000000de0001"
	OtherA2AID = "a2a_00000000000000000000000000de0002"
	// DefaultAgent is the demo team's default agent.
	DefaultAgent = "kyra"
)

// Agents are the demo team's agents: a generalist default and five
// specialists with distinct skills and voices. Kyra's, Luke's and Archie's
// skills are public: the demo team's A2A card offers them.
var Agents = []agents.CreateInput{
	{Slug: "kyra", Name: "Kyra", Tagline: "Generalist and team lead who routes and answers anything",
		Personality: &agents.Personality{Formality: 0.5, Humor: 0.5, TechnicalDepth: 0.5, Description: "Warm, pragmatic generalist; answers directly and knows when to bring in a specialist."},
		Skills:      []agents.Skill{{Name: "general-assistance", Description: "Answer general questions, plan work and coordinate the team", Domains: []string{"general"}, Actions: []string{"answer", "plan", "coordinate"}, Keywords: []string{"help", "question", "plan", "explain"}, Priority: 10, Public: true}}},
	{Slug: "luke", Name: "Luke", Tagline: "Code reviewer with an eye for bugs and readability",
		Personality: &agents.Personality{Formality: 0.6, Humor: 0.2, TechnicalDepth: 0.9, Description: "Meticulous, direct code reviewer who explains the why behind every comment."},
		Skills:      []agents.Skill{{Name: "code-review", Description: "Review and debug code: find bugs, crashes and errors in programs; readability, tests and maintainability", Domains: []string{"software", "code"}, Actions: []string{"review", "debug", "critique"}, Keywords: []string{"code", "review", "pull request", "bug", "debug", "refactor", "function"}, Tools: []string{"search_memories"}, Priority: 70, Public: true}}},
	{Slug: "dana", Name: "Dana", Tagline: "Data analyst who turns numbers into decisions",
		Personality: &agents.Personality{Formality: 0.5, Humor: 0.3, TechnicalDepth: 0.8, Description: "Curious, rigorous analyst; always states assumptions and confidence."},
		Skills:      []agents.Skill{{Name: "data-analysis", Description: "Analyze datasets, metrics and trends; build charts and statistical summaries", Domains: []string{"data", "analytics"}, Actions: []string{"analyze", "summarize", "forecast"}, Keywords: []string{"data", "metrics", "sql", "chart", "trend", "statistics"}, Priority: 70}}},
	{Slug: "archie", Name: "Archie", Tagline: "Software architect for systems that scale",
		Personality: &agents.Personality{Formality: 0.7, Humor: 0.2, TechnicalDepth: 0.95, Description: "Calm, structured architect who weighs trade-offs and draws boundaries."},
		Skills:      []agents.Skill{{Name: "architecture", Description: "Design systems, APIs and data models; evaluate trade-offs and scalability", Domains: []string{"software", "architecture"}, Actions: []string{"design", "evaluate"}, Keywords: []string{"architecture", "design", "scalability", "microservices", "api", "database"}, Priority: 70, Public: true}}},
	{Slug: "sage", Name: "Sage", Tagline: "Security engineer who thinks like an attacker",
		Personality: &agents.Personality{Formality: 0.8, Humor: 0.1, TechnicalDepth: 0.9, Description: "Careful, precise security engineer; names the threat, the impact and the fix."},
		Skills:      []agents.Skill{{Name: "security-review", Description: "Threat modelling, vulnerability review, authentication and secrets handling", Domains: []string{"security"}, Actions: []string{"review", "audit", "threat-model"}, Keywords: []string{"security", "vulnerability", "auth", "encryption", "xss", "injection", "secrets"}, Priority: 80}}},
	{Slug: "wren", Name: "Wren", Tagline: "Writer and editor for clear, friendly prose",
		Personality: &agents.Personality{Formality: 0.3, Humor: 0.7, TechnicalDepth: 0.3, Description: "Playful, empathetic writer who makes complex things readable."},
		Skills:      []agents.Skill{{Name: "writing", Description: "Write and edit documentation, blog posts, emails and release notes", Domains: []string{"writing", "content"}, Actions: []string{"write", "edit", "summarize"}, Keywords: []string{"write", "draft", "edit", "blog", "email", "docs", "tone"}, Priority: 60}}},
}

// withExamples is skills with the agent's Examples on its first skill
// (each demo agent has one).
func withExamples(slug string, skills []agents.Skill) []agents.Skill {
	if len(skills) == 0 || len(Examples[slug]) == 0 {
		return skills
	}
	out := append([]agents.Skill(nil), skills...)
	out[0].Examples = Examples[slug]
	return out
}

// Store is what seeding writes to: the DynamoDB store and the in-memory
// store both implement it.
type Store interface {
	teams.Store
	agents.Store
}

// Seed creates the demo team with its agents and a second, empty team (for
// isolation checks). It is idempotent: what exists already is kept.
func Seed(ctx context.Context, store Store) error { return SeedPublished(ctx, store, nil) }

// SeedPublished is Seed with the agents created announced on bus
// (AgentsChanged, agents.Service.Bus): the local cloud's seed, so the
// classifier-fitter fits the demo team's classifier as it would any team's.
func SeedPublished(ctx context.Context, store Store, bus agents.Publisher) error {
	now := time.Now().UTC()
	for _, t := range []struct{ id, name, key, a2a string }{{TeamID, "Demo team", APIKey, A2AID}, {OtherTeamID, "Other team", OtherAPIKey, OtherA2AID}} {
		k := teams.APIKey{ID: "key_" + t.id, TeamID: t.id, Name: "demo", Prefix: t.key[:10], Status: teams.KeyActive, CreatedAt: now}
		err := store.CreateTeam(ctx, teams.Team{ID: t.id, Name: t.name, CreatedAt: now, A2AID: t.a2a}, k, teams.Hash(t.key))
		if err != nil && !apperr.Is(err, apperr.ECONFLICT) {
			return err
		}
	}
	svc := agents.NewService(store)
	svc.Bus = bus
	for _, in := range Agents {
		in.Skills = withExamples(in.Slug, in.Skills)
		if _, err := svc.Create(ctx, TeamID, in); err != nil && !apperr.Is(err, apperr.ECONFLICT) {
			return err
		}
	}
	_, err := svc.SetDefault(ctx, TeamID, DefaultAgent)
	return err
}
