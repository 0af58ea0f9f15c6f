// Package agents owns the team's AI agents: their identity, personality,
// status and skills. Skills are declarative data (what an agent can do and
// when it may be chosen), so routing can score them without code per agent.
package agents

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/conclave-ai/conclave/shared/platform/answerby"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/tools/catalog"
)

// Statuses.
const (
	StatusActive   = "active"
	StatusPaused   = "paused"
	StatusArchived = "archived"
)

// Personality places an agent's voice on three 0–1 scales.
type Personality struct {
	Formality      float64 `json:"formality"`
	Humor          float64 `json:"humor"`
	TechnicalDepth float64 `json:"technical_depth"`
	Description    string  `json:"description"`
}

// Skill is one declarative capability. The gating flags let a skill registry
// filter candidates before any scoring.
type Skill struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Domains     []string `json:"domains,omitempty"`
	Actions     []string `json:"actions,omitempty"`
	Keywords    []string `json:"keywords,omitempty"`
	Tools       []string `json:"tools,omitempty"`
	// Packs are tool packs whose tools the agent may use in a chat reply
	// this skill answers (packs.go).
	Packs []string `json:"packs,omitempty"`
	// Priority breaks ties between equally matching skills; higher wins.
	Priority int `json:"priority"`
	// InternalOnly skills are reachable by other agents (delegation,
	// consultation) but never chosen for a user's message.
	InternalOnly bool `json:"internal_only,omitempty"`
	// RequiresExplicitKeywords: match only when a keyword is present.
	RequiresExplicitKeywords bool `json:"requires_explicit_keywords,omitempty"`
	// OverrideContinuity: an explicit match beats staying with the current agent.
	OverrideContinuity bool `json:"override_continuity,omitempty"`
	// RequiresEditor / EditorTypes: only eligible with an open document (of these types).
	RequiresEditor bool     `json:"requires_editor,omitempty"`
	EditorTypes    []string `json:"editor_types,omitempty"`
	// RequiresImageContext: only eligible when the message carries an image.
	RequiresImageContext bool `json:"requires_image_context,omitempty"`
	// SupportsHITL: the skill may pause for a human's confirmation.
	SupportsHITL bool `json:"supports_hitl,omitempty"`
	// SystemPrompt is added to the agent's system prompt when this skill
	// is the reason the agent was chosen (at most MaxSystemPrompt
	// characters; skills.go).
	SystemPrompt string `json:"system_prompt,omitempty"`
	// ContextLoaders name what the agent is given beside its usual context
	// when this skill chose it: names of ContextLoaders (skills.go).
	ContextLoaders []string `json:"context_loaders,omitempty"`
	// Kind is how the skill executes: KindChat (a model turn with tools,
	// the default), "report:<type>" or "session:<pattern>" (skills.go).
	Kind string `json:"kind,omitempty"`
	// Public skills are offered outside the team: the team's public A2A
	// agent card lists them (with up to five of their examples), and a
	// client with the team's key sees every skill but internal ones on
	// the extended card (shared/a2a/server, docs/a2a.md).
	Public bool `json:"public,omitempty"`
	// Examples are messages users send that this skill should answer
	// (Lex's sample utterances, Dialogflow's training phrases, A2A's
	// AgentSkill.examples): the gate routes by how close a message is to
	// them as well as to the description (docs/routing.md). At most
	// MaxExamples, each 1 to MaxExampleLength characters after trimming,
	// no two alike; MaxExampleBytes of them per agent (skills.go). Shown
	// on the agent's own read and its skill's; agent and skill lists give
	// ExampleCount instead.
	Examples []string `json:"examples,omitempty"`
	// ExampleCount is len(Examples), set on reads that leave the examples
	// out (lists); never read from a request.
	ExampleCount int `json:"example_count,omitempty"`
}

// Model chooses how the agent answers. Script is honoured only by the local
// deterministic model (make run and tests) to make it fail, time out or call
// tools on purpose; the Bedrock and OpenAI adapters ignore it.
type Model struct {
	Provider string `json:"provider,omitempty"`
	ID       string `json:"id,omitempty"`
	Script   string `json:"script,omitempty"`
}

// Agent is one AI agent of a team, addressed by its slug.
type Agent struct {
	TeamID      string      `json:"-"`
	Slug        string      `json:"slug"`
	Name        string      `json:"name"`
	Tagline     string      `json:"tagline"`
	Personality Personality `json:"personality"`
	Status      string      `json:"status"`
	Skills      []Skill     `json:"skills"`
	Model       *Model      `json:"model,omitempty"`
	// Remote is set for an external A2A agent (remote.go): its model is
	// the remote agent itself (Model.Provider ProviderA2A).
	Remote    *Remote   `json:"a2a,omitempty"`
	IsDefault bool      `json:"is_default"`
	Version   int       `json:"version"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Filter narrows a listing.
type Filter struct {
	Status string
}

// Store persists agents. Every method is scoped by team id.
type Store interface {
	// CreateAgent returns ECONFLICT when the slug is taken in the team.
	CreateAgent(ctx context.Context, a Agent) error
	// GetAgent returns ENOTFOUND.
	GetAgent(ctx context.Context, teamID, slug string) (Agent, error)
	// ListAgents returns one page ordered by slug and the next token.
	ListAgents(ctx context.Context, teamID string, f Filter, p paging.Page) ([]Agent, string, error)
	// UpdateAgent writes a if the stored version is a.Version-1 (ECONFLICT
	// otherwise, ENOTFOUND when missing).
	UpdateAgent(ctx context.Context, a Agent) error
	// SetStatus changes the status; moving the team's default agent away
	// from active is ECONFLICT.
	SetStatus(ctx context.Context, teamID, slug, status string, at time.Time) (Agent, error)
	// SetDefault makes slug the team's default agent; it must be active
	// (ECONFLICT) and exist (ENOTFOUND).
	SetDefault(ctx context.Context, teamID, slug string) error
	// DefaultAgent returns the slug of the team's default agent ("" if none).
	DefaultAgent(ctx context.Context, teamID string) (string, error)
}

// VectorWriter is told of every agent the service writes, to store the
// vectors of its skills for routing (architecture decision 6b; the agents
// function wires one when the stage's embedder is Titan, whose vectors
// cost a Bedrock call per skill: see shared/routing/expertgate, vectors.go).
type VectorWriter interface {
	// AgentWritten is called once a is stored: created (previous 0) or
	// updated from version previous to a.Version.
	AgentWritten(ctx context.Context, a Agent, previous int) error
}

// ChangedDetailType is the event published when a team's agents change
// in a way routing reads (ChangedEvent): the classifier-fitter fits the
// team's routing classifier again (shared/routing/expertgate).
const ChangedDetailType = "AgentsChanged"

// ChangedEvent is the AgentsChanged detail.
type ChangedEvent struct {
	TeamID  string    `json:"team_id"`
	Agent   string    `json:"agent"`
	Version int       `json:"version"`
	Change  string    `json:"change"` // created, updated, status
	At      time.Time `json:"at"`
}

// Publisher announces events (shared/aws/eventbus).
type Publisher interface {
	Publish(ctx context.Context, detailType string, detail any) error
}

// Service implements agent use cases.
type Service struct {
	Store Store
	Now   func() time.Time
	// Bus, when set, hears of every agent created, updated, paused,
	// activated or archived (AgentsChanged). Its failure never fails the
	// write: the agent is stored and the failure logged; the team's
	// classifier is then fitted at its next change, and until then the
	// gate scores with the one it has (it maps skills by name) or by
	// example similarity.
	Bus Publisher
	// Vectors, when set, is told of each agent created or updated. Its
	// failure never fails the write: the agent is stored, the failure is
	// logged, and the ExpertGate computes the missing vectors when it next
	// indexes the team.
	Vectors VectorWriter
	// Cards and Secrets take external A2A agents (remote.go): the card
	// fetched and checked, the credential kept under SecretPrefix + team
	// + "/" + slug + "/" + a random id. Nil: POST /v1/agents refuses a2a.
	Cards        Cards
	Secrets      Secrets
	SecretPrefix string
	// Models, when set, refuses a model the stage does not offer (models.go).
	Models Catalog
	// Packs, when set, lets a skill name the team's MCP packs (packs.go).
	Packs PackChecker
}

// NewService returns a service using the wall clock.
func NewService(s Store) *Service { return &Service{Store: s, Now: time.Now} }

// CreateInput is the body of POST /v1/agents.
type CreateInput struct {
	Slug        string       `json:"slug"`
	Name        string       `json:"name"`
	Tagline     string       `json:"tagline"`
	Personality *Personality `json:"personality"`
	Skills      []Skill      `json:"skills"`
	Model       *Model       `json:"model"`
	Status      string       `json:"status"`
	// A2A makes the agent an external A2A agent (remote.go): its card
	// gives its skills, its name and tagline unless given.
	A2A *RemoteInput `json:"a2a"`
}

// UpdateInput is the body of PATCH /v1/agents/{slug}: present fields replace.
type UpdateInput struct {
	Name        *string      `json:"name"`
	Tagline     *string      `json:"tagline"`
	Personality *Personality `json:"personality"`
	Skills      *[]Skill     `json:"skills"`
	Model       *Model       `json:"model"`
	// Version, when given, makes the update conditional on it (optimistic
	// concurrency for read-modify-write clients).
	Version *int `json:"version"`
}

var (
	slugRE  = regexp.MustCompile(`^[a-z][a-z0-9-]{1,38}[a-z0-9]$`)
	skillRE = regexp.MustCompile(`^[a-z][a-z0-9-]{0,62}[a-z0-9]$`)
)

// Limits on agent fields.
const (
	MaxSkills      = 25
	MaxListItems   = 50
	MaxItemLength  = 100
	MaxDescription = 2000
)

// Reserved slugs are literal paths under /v1/agents/ that would shadow
// an agent of that name.
var Reserved = map[string]bool{"recommend": true, "experts": true}

// ValidSlug reports whether s is a well-formed slug.
func ValidSlug(s string) bool { return slugRE.MatchString(s) }

// Create validates and stores a new agent. Returns EINVALID, ECONFLICT.
func (s *Service) Create(ctx context.Context, teamID string, in CreateInput) (Agent, error) {
	if !ValidSlug(in.Slug) {
		return Agent{}, apperr.Invalid("slug", "slug must be 3-40 characters of a-z, 0-9 and '-', starting with a letter")
	}
	if Reserved[in.Slug] {
		return Agent{}, apperr.Invalid("slug", "%q is reserved by the API (/v1/agents/%s)", in.Slug, in.Slug)
	}
	if in.Status == "" {
		in.Status = StatusActive
	}
	if in.Status != StatusActive && in.Status != StatusPaused {
		return Agent{}, apperr.Invalid("status", "status must be active or paused at creation")
	}
	if in.Personality == nil {
		in.Personality = &Personality{Formality: 0.5, Humor: 0.3, TechnicalDepth: 0.5}
	}
	now := s.Now().UTC()
	a := Agent{
		TeamID: teamID, Slug: in.Slug, Name: strings.TrimSpace(in.Name), Tagline: strings.TrimSpace(in.Tagline),
		Personality: *in.Personality, Status: in.Status, Skills: in.Skills, Model: in.Model,
		Version: 1, CreatedAt: now, UpdatedAt: now,
	}
	if a.Skills == nil {
		a.Skills = []Skill{}
	}
	written := ""
	if in.A2A != nil {
		var err error
		if written, err = s.remote(ctx, teamID, in, &a); err != nil {
			return Agent{}, err
		}
	}
	normalize(&a)
	err := s.checkWith(ctx, a, nil, nil)
	if err == nil {
		err = s.Store.CreateAgent(ctx, a)
	}
	if err != nil {
		if written != "" {
			// The agent is not stored: its credential goes too.
			dctx, cancel := answerby.Detached(ctx, 5*time.Second)
			_ = s.Secrets.DeleteSecret(dctx, written)
			cancel()
		}
		return Agent{}, err
	}
	s.written(ctx, a, 0)
	return a, nil
}

// written tells Vectors and the bus of a stored agent; see Service.Vectors
// and Service.Bus.
func (s *Service) written(ctx context.Context, a Agent, previous int) {
	change := "updated"
	if previous == 0 {
		change = "created"
	}
	s.changed(ctx, a, change)
	if s.Vectors == nil {
		return
	}
	if err := s.Vectors.AgentWritten(ctx, a, previous); err != nil {
		slog.WarnContext(ctx, "skill vectors not stored with the agent; the gate computes them when it next indexes the team",
			"team_id", a.TeamID, "agent", a.Slug, "version", a.Version, "error", err)
	}
}

// changed publishes AgentsChanged for a; see Service.Bus.
func (s *Service) changed(ctx context.Context, a Agent, change string) {
	if s.Bus == nil {
		return
	}
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	ev := ChangedEvent{TeamID: a.TeamID, Agent: a.Slug, Version: a.Version, Change: change, At: now().UTC()}
	if err := s.Bus.Publish(ctx, ChangedDetailType, ev); err != nil {
		slog.WarnContext(ctx, "AgentsChanged not published: the team's classifier is fitted at its next change",
			"team_id", a.TeamID, "agent", a.Slug, "version", a.Version, "error", err)
	}
}

// Get returns one agent with IsDefault set. Returns ENOTFOUND.
func (s *Service) Get(ctx context.Context, teamID, slug string) (Agent, error) {
	if !ValidSlug(slug) {
		return Agent{}, apperr.NotFound("agent", slug)
	}
	a, err := s.Store.GetAgent(ctx, teamID, slug)
	return s.markDefault(ctx, teamID, a, err)
}

// markDefault sets IsDefault on a freshly read agent (passing err through).
func (s *Service) markDefault(ctx context.Context, teamID string, a Agent, err error) (Agent, error) {
	if err != nil {
		return Agent{}, err
	}
	def, err := s.Store.DefaultAgent(ctx, teamID)
	if err != nil {
		return Agent{}, err
	}
	a.IsDefault = def == a.Slug
	normalize(&a)
	return a, nil
}

// List returns a page of the team's agents, each skill's examples given as
// their count (the agent's own read shows them). Returns EINVALID.
func (s *Service) List(ctx context.Context, teamID string, f Filter, p paging.Page) ([]Agent, string, error) {
	if f.Status != "" && f.Status != StatusActive && f.Status != StatusPaused && f.Status != StatusArchived {
		return nil, "", apperr.Invalid("status", "status must be active, paused or archived")
	}
	p, err := p.Normalize()
	if err != nil {
		return nil, "", err
	}
	list, next, err := s.Store.ListAgents(ctx, teamID, f, p)
	if err != nil {
		return nil, "", err
	}
	def, err := s.Store.DefaultAgent(ctx, teamID)
	if err != nil {
		return nil, "", err
	}
	for i := range list {
		list[i].IsDefault = list[i].Slug == def
		normalize(&list[i])
		list[i] = WithoutExamples(list[i])
	}
	return list, next, nil
}

// Update applies a partial update. Returns EINVALID, ENOTFOUND, ECONFLICT.
func (s *Service) Update(ctx context.Context, teamID, slug string, in UpdateInput) (Agent, error) {
	a, err := s.Get(ctx, teamID, slug)
	if err != nil {
		return Agent{}, err
	}
	if in.Version != nil && *in.Version != a.Version {
		return Agent{}, apperr.New(apperr.ECONFLICT, "agent was changed since version %d", *in.Version).
			WithDetail("current_version", a.Version)
	}
	before, _ := json.Marshal(a)
	if in.Name != nil {
		a.Name = strings.TrimSpace(*in.Name)
	}
	if in.Tagline != nil {
		a.Tagline = strings.TrimSpace(*in.Tagline)
	}
	if in.Personality != nil {
		a.Personality = *in.Personality
	}
	if a.Remote != nil && (in.Skills != nil || in.Model != nil) {
		return Agent{}, apperr.Invalid("skills", "an A2A agent's skills and model are its card's: they cannot be changed")
	}
	named := a.Packs()
	if in.Skills != nil {
		a.Skills = *in.Skills
		if a.Skills == nil {
			a.Skills = []Skill{}
		}
	}
	previous := a.Model
	if in.Model != nil {
		a.Model = in.Model
	}
	normalize(&a)
	if err := s.checkWith(ctx, a, previous, named); err != nil {
		return Agent{}, err
	}
	if after, _ := json.Marshal(a); bytes.Equal(before, after) {
		// Nothing changes: no write, no new version (a client that
		// PATCHes what it read must not look like a concurrent editor).
		return a, nil
	}
	a.Version++
	a.UpdatedAt = s.Now().UTC()
	if err := s.Store.UpdateAgent(ctx, a); err != nil {
		return Agent{}, err
	}
	s.written(ctx, a, a.Version-1)
	return a, nil
}

// SetStatus pauses, activates or archives an agent. Returns EINVALID,
// ENOTFOUND, ECONFLICT (the default agent must stay active).
func (s *Service) SetStatus(ctx context.Context, teamID, slug, status string) (Agent, error) {
	switch status {
	case StatusActive, StatusPaused, StatusArchived:
	default:
		return Agent{}, apperr.Invalid("status", "unknown status %q", status)
	}
	if !ValidSlug(slug) {
		return Agent{}, apperr.NotFound("agent", slug)
	}
	a, err := s.Store.SetStatus(ctx, teamID, slug, status, s.Now().UTC())
	if err == nil {
		a.TeamID = teamID
		s.changed(ctx, a, "status")
	}
	if err == nil && status != StatusActive {
		// The store refused to move the default away from active, so an
		// agent that left it is not the default: no need to read the team.
		normalize(&a)
		return a, nil
	}
	return s.markDefault(ctx, teamID, a, err)
}

// SetDefault makes slug the team's default agent. Returns EINVALID,
// ENOTFOUND, ECONFLICT (agent not active).
func (s *Service) SetDefault(ctx context.Context, teamID, slug string) (Agent, error) {
	if slug == "" {
		return Agent{}, apperr.Invalid("slug", "slug is required")
	}
	if !ValidSlug(slug) {
		return Agent{}, apperr.NotFound("agent", slug)
	}
	if err := s.Store.SetDefault(ctx, teamID, slug); err != nil {
		return Agent{}, err
	}
	a, err := s.Store.GetAgent(ctx, teamID, slug)
	if err != nil {
		return Agent{}, err
	}
	a.IsDefault = true // it just became the default
	normalize(&a)
	return a, nil
}

func validate(a Agent) error {
	if a.Name == "" {
		return apperr.Invalid("name", "name is required")
	}
	if utf8.RuneCountInString(a.Name) > 80 {
		return apperr.Invalid("name", "name must be at most 80 characters")
	}
	if utf8.RuneCountInString(a.Tagline) > 200 {
		return apperr.Invalid("tagline", "tagline must be at most 200 characters")
	}
	p := a.Personality
	for field, v := range map[string]float64{"formality": p.Formality, "humor": p.Humor, "technical_depth": p.TechnicalDepth} {
		if v < 0 || v > 1 {
			return apperr.Invalid("personality."+field, "personality.%s must be between 0 and 1", field)
		}
	}
	if utf8.RuneCountInString(p.Description) > MaxDescription {
		return apperr.Invalid("personality.description", "personality.description must be at most %d characters", MaxDescription)
	}
	if len(a.Skills) > MaxSkills {
		return apperr.Invalid("skills", "at most %d skills", MaxSkills)
	}
	seen := map[string]bool{}
	prompts, examples := 0, 0
	for i, sk := range a.Skills {
		if err := validateSkill(sk, i, seen, &prompts); err != nil {
			return err
		}
		if err := validateExamples(sk, i, &examples); err != nil {
			return err
		}
	}
	if m := a.Model; m != nil {
		switch m.Provider {
		case "", "local", "bedrock", "openai":
		case ProviderA2A:
			if a.Remote == nil {
				return apperr.Invalid("model.provider", "provider a2a is given by the a2a object (card_url, credential)")
			}
		default:
			return apperr.Invalid("model.provider", "provider must be local, bedrock or openai")
		}
		if utf8.RuneCountInString(m.ID) > 200 {
			return apperr.Invalid("model.id", "model id must be at most 200 characters")
		}
		if m.Script != "" && !ValidScript(m.Script) {
			return apperr.Invalid("model.script", "script must be one of fail, timeout, refuse, tools:N, tokens:N, delegate:<slug>, delegate2:<slug>,<slug>, delegate-fail:<slug>, delegate-async:<slug>, report:<slug>, report-async:<slug>, consult:<slug>, spend:N, handoff:<slug>, message:<slug>, collab:<slug>,<slug>, recall, omit:<sections>, omit-once:<sections>, approve-after:N, never-approve, reject, violate:N, overspend")
		}
	}
	return nil
}

// validateSkill checks skill i of an agent; seen holds the names of the
// skills before it and prompts the length of their system prompts.
func validateSkill(sk Skill, i int, seen map[string]bool, prompts *int) error {
	f := func(name string) string { return "skills[" + itoa(i) + "]." + name }
	if !skillRE.MatchString(sk.Name) {
		return apperr.Invalid(f("name"), "skill name must be kebab-case (a-z, 0-9, '-'), 2-64 characters")
	}
	if seen[sk.Name] {
		return apperr.Invalid(f("name"), "duplicate skill %q", sk.Name)
	}
	seen[sk.Name] = true
	if strings.TrimSpace(sk.Description) == "" {
		return apperr.Invalid(f("description"), "skill description is required")
	}
	if utf8.RuneCountInString(sk.Description) > MaxDescription {
		return apperr.Invalid(f("description"), "skill description must be at most %d characters", MaxDescription)
	}
	if sk.Priority < 0 || sk.Priority > 100 {
		return apperr.Invalid(f("priority"), "priority must be between 0 and 100")
	}
	for name, list := range map[string][]string{"domains": sk.Domains, "actions": sk.Actions, "keywords": sk.Keywords, "tools": sk.Tools, "editor_types": sk.EditorTypes} {
		if len(list) > MaxListItems {
			return apperr.Invalid(f(name), "at most %d items", MaxListItems)
		}
		for _, item := range list {
			if strings.TrimSpace(item) == "" || utf8.RuneCountInString(item) > MaxItemLength {
				return apperr.Invalid(f(name), "items must be 1-%d characters", MaxItemLength)
			}
		}
	}
	for _, tool := range sk.Tools {
		if !catalog.Known(tool) {
			// A tool nobody implements would be offered to no model
			// and fail silently: refused where it is declared.
			return apperr.Invalid(f("tools"), "unknown tool %q; tools are %s", tool, strings.Join(catalog.Names(), ", "))
		}
	}
	if sk.RequiresExplicitKeywords && len(sk.Keywords) == 0 {
		return apperr.Invalid(f("keywords"), "requires_explicit_keywords needs at least one keyword")
	}
	if err := validateExecution(sk, f); err != nil {
		return err
	}
	if *prompts += utf8.RuneCountInString(sk.SystemPrompt); *prompts > MaxSystemPrompts {
		// The agent is one item (DynamoDB's 400 KB).
		return apperr.Invalid(f("system_prompt"), "the skills' system prompts together must be at most %d characters", MaxSystemPrompts)
	}
	return nil
}

var scriptRE = regexp.MustCompile(`^(fail|timeout|refuse|tools:[0-9]{1,3}|tokens:[0-9]{1,6}|spend:[0-9]{1,5}|(delegate|delegate-fail|delegate-async|report|report-async|handoff|message|consult):[a-z][a-z0-9-]{1,31}|collab:[a-z][a-z0-9-]{1,31}(,[a-z][a-z0-9-]{1,31}){0,4}|delegate2:[a-z][a-z0-9-]{1,31},[a-z][a-z0-9-]{1,31}|recall|omit(-once)?:[a-z_]{1,40}(,[a-z_]{1,40}){0,9}|approve-after:[0-9]{1,2}|never-approve|reject|violate:[0-9]{1,2}|overspend)$`)

// ValidScript reports whether s is a script the local model understands.
func ValidScript(s string) bool { return scriptRE.MatchString(s) }

func itoa(i int) string {
	const digits = "0123456789"
	if i < 10 {
		return digits[i : i+1]
	}
	return itoa(i/10) + digits[i%10:i%10+1]
}
