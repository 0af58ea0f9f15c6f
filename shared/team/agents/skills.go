package agents

import (
	"context"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/tools/toolpacks"
)

// Skill kinds: how a skill executes when it is the reason its agent was
// chosen (seed 003's engines and subgraphs). A chat skill is a model turn
// with tools; a report skill requests a report of its type and a session
// skill starts a collaboration session of its pattern, both with the
// conversation linked so the result is posted back (docs/skills.md).
const (
	KindChat    = "chat"
	KindReport  = "report"
	KindSession = "session"
)

// ReportTypes are the report types a "report:<type>" skill may name: the
// templates of shared/work/reports (a test there keeps the two equal; reports
// imports agents, so the list cannot be read from it here).
var ReportTypes = []string{"action_plan", "code_review", "comparison", "data_analysis", "performance_report", "research_summary", "risk_assessment", "security_audit"}

// SessionPatterns are the patterns a "session:<pattern>" skill may name:
// those of shared/work/sessions (kept equal by a test there).
var SessionPatterns = []string{"brainstorm", "consensus", "peer_review", "pipeline", "supervisor_worker"}

// The context loaders a skill may name: what its agent is given beside its
// usual context (identity, history, team roster, memories) when the skill
// chose it. Each reuses a read that exists (docs/skills.md):
//
//   - recent_memories: the agent's most recent memories, newest first,
//     whatever their relevance (the usual memory context is ranked);
//   - conversation_summary: the conversation's participants and its last
//     handoff's summary;
//   - open_tasks: the agent's unfinished tasks (queued, running, blocked);
//   - team_roster: every active colleague with its skills, not only the
//     ones the roster's budget fits.
const (
	LoaderRecentMemories      = "recent_memories"
	LoaderConversationSummary = "conversation_summary"
	LoaderOpenTasks           = "open_tasks"
	LoaderTeamRoster          = "team_roster"
)

// ContextLoaders lists every loader name, sorted.
var ContextLoaders = []string{LoaderConversationSummary, LoaderOpenTasks, LoaderRecentMemories, LoaderTeamRoster}

// MaxSystemPrompt bounds a skill's system_prompt and MaxSystemPrompts all
// of an agent's together (characters).
const (
	MaxSystemPrompt  = 4000
	MaxSystemPrompts = 20000
)

// The limits of a skill's examples: at most MaxExamples per skill, each 1
// to MaxExampleLength characters after trimming, and MaxExampleBytes (UTF-8)
// of examples per agent. An agent is one item (DynamoDB's 400 KB) and the
// gate embeds every example when it indexes the team: 24 KiB is about 30
// examples for each of ten skills.
const (
	MaxExamples      = 30
	MaxExampleLength = 200
	MaxExampleBytes  = 24 << 10
)

// validateExamples checks skill i's examples (trimmed by normalize);
// total counts the bytes of the agent's examples so far.
func validateExamples(sk Skill, i int, total *int) error {
	field := "skills[" + itoa(i) + "].examples"
	if len(sk.Examples) > MaxExamples {
		return apperr.Invalid(field, "at most %d examples per skill", MaxExamples)
	}
	seen := map[string]bool{}
	for _, e := range sk.Examples {
		if n := utf8.RuneCountInString(e); n == 0 || n > MaxExampleLength {
			return apperr.Invalid(field, "examples must be 1-%d characters after trimming", MaxExampleLength)
		}
		key := strings.ToLower(e)
		if seen[key] {
			return apperr.Invalid(field, "duplicate example %q", e)
		}
		seen[key] = true
		if *total += len(e); *total > MaxExampleBytes {
			return apperr.Invalid(field, "the skills' examples together must be at most %d bytes", MaxExampleBytes)
		}
	}
	return nil
}

// ParseKind splits a skill's kind into its type (KindChat, KindReport,
// KindSession) and target (the report type or session pattern; "" for
// chat). An empty kind is chat. ok is false for anything else, a target
// not in ReportTypes or SessionPatterns included.
func ParseKind(kind string) (typ, target string, ok bool) {
	if kind == "" || kind == KindChat {
		return KindChat, "", true
	}
	typ, target, found := strings.Cut(kind, ":")
	if !found {
		return "", "", false
	}
	switch typ {
	case KindReport:
		return typ, target, slices.Contains(ReportTypes, target)
	case KindSession:
		return typ, target, slices.Contains(SessionPatterns, target)
	}
	return "", "", false
}

// validateExecution checks the fields that say how a skill runs: its
// system prompt, context loaders, tool packs' names (whether the team
// has them is checkPacks') and kind. f names a field of the skill.
func validateExecution(sk Skill, f func(string) string) error {
	if err := toolpacks.ValidateNames(f("packs"), sk.Packs); err != nil {
		return err
	}
	if utf8.RuneCountInString(sk.SystemPrompt) > MaxSystemPrompt {
		return apperr.Invalid(f("system_prompt"), "system_prompt must be at most %d characters", MaxSystemPrompt)
	}
	seen := map[string]bool{}
	for _, l := range sk.ContextLoaders {
		if !slices.Contains(ContextLoaders, l) {
			return apperr.Invalid(f("context_loaders"), "unknown context loader %q; loaders are %s", l, strings.Join(ContextLoaders, ", "))
		}
		if seen[l] {
			return apperr.Invalid(f("context_loaders"), "duplicate context loader %q", l)
		}
		seen[l] = true
	}
	if _, _, ok := ParseKind(sk.Kind); !ok {
		return apperr.Invalid(f("kind"), "kind must be chat, report:<type> (%s) or session:<pattern> (%s)",
			strings.Join(ReportTypes, ", "), strings.Join(SessionPatterns, ", "))
	}
	return nil
}

// normalize writes the defaults a stored agent may lack (skills stored
// before kinds existed are chat skills), so a read shows them and a PATCH
// that changes nothing writes nothing.
func normalize(a *Agent) {
	for i := range a.Skills {
		sk := &a.Skills[i]
		if sk.Kind == "" {
			sk.Kind = KindChat
		}
		// Examples are stored trimmed (validateExamples measures them so);
		// a count is only ever written by a read that drops them.
		if len(sk.Examples) > 0 {
			ex := make([]string, len(sk.Examples))
			for j, e := range sk.Examples {
				ex[j] = strings.TrimSpace(e)
			}
			sk.Examples = ex
		}
		sk.ExampleCount = 0
	}
}

// WithoutExamples is a copy of a whose skills carry ExampleCount instead
// of their examples: what a list shows, the gate's request carries and
// the index reads when it has no use for them.
func WithoutExamples(a Agent) Agent {
	if len(a.Skills) == 0 {
		return a
	}
	skills := slices.Clone(a.Skills)
	for i := range skills {
		skills[i].ExampleCount, skills[i].Examples = len(skills[i].Examples), nil
	}
	a.Skills = skills
	return a
}

// SkillEntry is one skill of the team's registry: the skill with the agent
// that has it. Skill names are unique per agent only, so a skill is
// addressed as agent/name.
type SkillEntry struct {
	Agent       string `json:"agent"`
	AgentName   string `json:"agent_name"`
	AgentStatus string `json:"agent_status"`
	Skill
}

// SkillFilter narrows the registry; every field set must match.
type SkillFilter struct {
	// Agent is an agent's slug.
	Agent string
	// Domain is one of the skill's domains.
	Domain string
	// Kind is a kind ("report:code_review") or a kind's type ("chat",
	// "report", "session").
	Kind string
	// Tool is one of the skill's declared tools.
	Tool string
}

func (f SkillFilter) validate() error {
	if f.Kind == "" {
		return nil
	}
	switch f.Kind {
	case KindChat, KindReport, KindSession:
		return nil
	}
	if _, _, ok := ParseKind(f.Kind); !ok {
		return apperr.Invalid("kind", "kind must be chat, report, session, report:<type> or session:<pattern>")
	}
	return nil
}

func (f SkillFilter) match(sk Skill) bool {
	if f.Domain != "" && !slices.Contains(sk.Domains, f.Domain) {
		return false
	}
	if f.Tool != "" && !slices.Contains(sk.Tools, f.Tool) {
		return false
	}
	if f.Kind != "" {
		typ, _, _ := ParseKind(sk.Kind)
		if sk.Kind != f.Kind && typ != f.Kind {
			return false
		}
	}
	return true
}

// entries are the skills of a (archived agents have none in the registry:
// they cannot be chosen) that f matches; full keeps each system prompt.
func entries(a Agent, f SkillFilter, full bool) []SkillEntry {
	if a.Status == StatusArchived {
		return nil
	}
	normalize(&a)
	var out []SkillEntry
	for _, sk := range a.Skills {
		if !f.match(sk) {
			continue
		}
		if !full {
			sk.SystemPrompt = ""
			sk.ExampleCount, sk.Examples = len(sk.Examples), nil
		}
		out = append(out, SkillEntry{Agent: a.Slug, AgentName: a.Name, AgentStatus: a.Status, Skill: sk})
	}
	return out
}

// Skills is the team's skill registry, read from its agents (there is no
// second copy of a skill): one page of agents, by slug, gives the skills of
// each that f matches, in the agent's order. The page's limit counts
// agents, so a page may hold no skill yet have a next token. Entries leave
// out system_prompt (Skill has it). Archived agents' skills are not
// listed. Returns EINVALID.
func (s *Service) Skills(ctx context.Context, teamID string, f SkillFilter, p paging.Page) ([]SkillEntry, string, error) {
	if err := f.validate(); err != nil {
		return nil, "", err
	}
	p, err := p.Normalize()
	if err != nil {
		return nil, "", err
	}
	out := []SkillEntry{}
	if f.Agent != "" {
		// One agent: one read, one page.
		if !ValidSlug(f.Agent) {
			return out, "", nil
		}
		a, err := s.Store.GetAgent(ctx, teamID, f.Agent)
		if apperr.Is(err, apperr.ENOTFOUND) {
			return out, "", nil
		}
		if err != nil {
			return nil, "", err
		}
		return append(out, entries(a, f, false)...), "", nil
	}
	list, next, err := s.Store.ListAgents(ctx, teamID, Filter{}, p)
	if err != nil {
		return nil, "", err
	}
	for _, a := range list {
		out = append(out, entries(a, f, false)...)
	}
	return out, next, nil
}

// Skill is one skill of the registry, system prompt included. Returns
// ENOTFOUND (an unknown or archived agent, another team's, or a skill the
// agent does not have).
func (s *Service) Skill(ctx context.Context, teamID, agent, name string) (SkillEntry, error) {
	if !ValidSlug(agent) {
		return SkillEntry{}, apperr.NotFound("agent", agent)
	}
	a, err := s.Store.GetAgent(ctx, teamID, agent)
	if err != nil {
		return SkillEntry{}, err
	}
	for _, e := range entries(a, SkillFilter{}, true) {
		if e.Name == name {
			return e, nil
		}
	}
	return SkillEntry{}, apperr.NotFound("skill", agent+"/"+name)
}

// WithSkill is a as it answers through its skill name (seed 003: tools
// belong to the skill that matched): the same agent holding that skill
// alone, so what is derived from its skills (the tools its model is
// offered, the tools that need a human's approval) is that skill's. False
// when a has no skill of that name.
func (a Agent) WithSkill(name string) (Agent, bool) {
	for _, sk := range a.Skills {
		if sk.Name == name {
			a.Skills = []Skill{sk}
			return a, true
		}
	}
	return a, false
}
