// Package suggestions is routing that learns from use, with a person in the
// loop (issue 42, item 6). A correction is a user's next message that
// @mentions another agent ("@luke, you take this"), or the user's handoff
// request, right after the router chose an agent for their message: the
// message the router sent elsewhere becomes a suggested example of the
// agent the user chose, under that agent's best skill for it as the team's
// fitted model ranks it. A suggestion is never added by itself: a key
// holder lists them (GET /v1/agents/{slug}/example-suggestions), accepts
// one (the example is added to the skill, the agent's version moves, and
// the team's classifier is fitted again from AgentsChanged) or dismisses
// it. At most MaxPerAgent are kept per agent (a new one pushes the oldest
// out) and each for Retention.
//
// The chat turn only announces the correction (RoutingCorrected, after its
// commit: a turn never waits on it); the routing-evaluator function, which
// already scores messages with the gate, checks it against the decision
// log and stores the suggestion (Suggest).
package suggestions

import (
	"context"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/routing/cascade"
	"github.com/conclave-ai/conclave/shared/routing/expertgate"
	"github.com/conclave-ai/conclave/shared/team/agents"
)

// The limits (the issue's): at most MaxPerAgent suggestions kept per
// agent, each for Retention.
const (
	MaxPerAgent = 100
	Retention   = 30 * 24 * time.Hour
	// LowRating is the highest rating that counts as low: a reply rated
	// so and then corrected is flagged (RatedLow) on the one suggestion.
	LowRating = 2
)

// DetailType is the event a correction is announced with.
const DetailType = "RoutingCorrected"

// Kinds of correction.
const (
	KindMention = "mention"
	KindHandoff = "handoff"
)

// Correction is the RoutingCorrected detail: a user sent their message
// (MessageID, Content) to the router, AnsweredBy answered it under
// DecisionID, and the user's next act chose ChosenAgent instead.
type Correction struct {
	TeamID         string    `json:"team_id"`
	ConversationID string    `json:"conversation_id"`
	MessageID      string    `json:"message_id"`
	Content        string    `json:"content"`
	DecisionID     string    `json:"decision_id"`
	AnsweredBy     string    `json:"answered_by"`
	ChosenAgent    string    `json:"chosen_agent"`
	Kind           string    `json:"kind"`
	Rating         int       `json:"rating,omitempty"`
	CorrectedAt    time.Time `json:"corrected_at"`
}

// Suggestion is a suggested example: Content for Agent's Skill. Its id is
// the corrected message's, so a message suggests itself once per agent
// (a low rating and the correction after it count once).
type Suggestion struct {
	ID             string    `json:"id"`
	TeamID         string    `json:"-"`
	Agent          string    `json:"agent"`
	Skill          string    `json:"skill"`
	Content        string    `json:"content"`
	ConversationID string    `json:"conversation_id"`
	DecisionID     string    `json:"decision_id"`
	RoutedTo       string    `json:"routed_to"`
	Kind           string    `json:"kind"`
	RatedLow       bool      `json:"rated_low"`
	CreatedAt      time.Time `json:"created_at"`
	ExpiresAt      time.Time `json:"expires_at"`
}

// Store keeps suggestions (shared/store/suggestionstore).
type Store interface {
	// AddSuggestion stores s unless the agent already has one with its
	// id (false, nil). When the agent has max live suggestions, the
	// oldest is removed in the same write, so at most max are kept
	// whatever runs at once.
	AddSuggestion(ctx context.Context, s Suggestion, max int) (bool, error)
	// GetSuggestion returns one live suggestion (ENOTFOUND for an
	// unknown, expired or another team's).
	GetSuggestion(ctx context.Context, teamID, agent, id string) (Suggestion, error)
	// ListSuggestions returns an agent's live suggestions, newest first.
	ListSuggestions(ctx context.Context, teamID, agent string, p paging.Page) ([]Suggestion, string, error)
	// DeleteSuggestion removes one (ENOTFOUND when it is not there).
	DeleteSuggestion(ctx context.Context, teamID, agent, id string) error
	// DismissSuggestion hides a live one for good (ENOTFOUND when there
	// is none): it keeps its place until it expires or is pushed out, so
	// the same correction delivered again suggests nothing.
	DismissSuggestion(ctx context.Context, teamID, agent, id string) error
}

// Decisions reads the decision log.
type Decisions interface {
	GetDecision(ctx context.Context, teamID, id string) (cascade.Decision, error)
}

// Agents reads an agent and changes its skills (agents.Service: the
// update validates the examples and announces AgentsChanged).
type Agents interface {
	Get(ctx context.Context, teamID, slug string) (agents.Agent, error)
	Update(ctx context.Context, teamID, slug string, in agents.UpdateInput) (agents.Agent, error)
}

// Service stores, lists, accepts and dismisses suggestions.
type Service struct {
	Store     Store
	Decisions Decisions
	Agents    Agents
	// Gate ranks the chosen agent's skills for the message (the team's
	// fitted model when it has one, example similarity otherwise).
	Gate expertgate.Gate
	Now  func() time.Time
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC()
	}
	return time.Now().UTC()
}

// automatic are the decisions a correction corrects: the router chose
// (the gate, the tier-0 router model or the baseline AgentRouter). A
// mention, a handoff, continuity or a greeting was not a routing choice.
var automatic = []string{cascade.DecidedByGate, cascade.DecidedByRouterModel, cascade.DecidedByAgentRouter}

// Suggest turns a correction into a suggestion, when it is one: the
// decision it names routed its message automatically and was answered by
// another agent than the one chosen now, and the chosen agent is active
// with a skill a user may reach. It returns the suggestion and whether
// it was stored now (false: not a correction, or suggested before).
// Errors are the store's and the gate's (a redelivery tries again).
func (s *Service) Suggest(ctx context.Context, c Correction) (Suggestion, bool, error) {
	if c.TeamID == "" || c.MessageID == "" || c.DecisionID == "" || c.ChosenAgent == "" || c.ChosenAgent == c.AnsweredBy {
		return Suggestion{}, false, nil
	}
	content := strings.TrimSpace(c.Content)
	if n := utf8.RuneCountInString(content); n == 0 || n > agents.MaxExampleLength {
		// Not something a skill can take as an example.
		return Suggestion{}, false, nil
	}
	d, err := s.Decisions.GetDecision(ctx, c.TeamID, c.DecisionID)
	if apperr.Is(err, apperr.ENOTFOUND) {
		return Suggestion{}, false, nil
	}
	if err != nil {
		return Suggestion{}, false, err
	}
	if d.MessageID != c.MessageID || d.ConversationID != c.ConversationID || !slices.Contains(automatic, d.DecidedBy) || d.Reason == routing.ReasonCurrent {
		// Not the message's decision, not the router's choice, or the
		// router kept the conversation's agent (continuity: a user who
		// then asks another agent asks for a second voice, not a
		// different route).
		return Suggestion{}, false, nil
	}
	a, err := s.Agents.Get(ctx, c.TeamID, c.ChosenAgent)
	if apperr.Is(err, apperr.ENOTFOUND) {
		return Suggestion{}, false, nil
	}
	if err != nil {
		return Suggestion{}, false, err
	}
	if a.Status != agents.StatusActive || a.Remote != nil {
		// A remote agent's skills are its card's: no example can be
		// added to them.
		return Suggestion{}, false, nil
	}
	skill, err := s.bestSkill(ctx, c.TeamID, a, content)
	if err != nil || skill == "" {
		return Suggestion{}, false, err
	}
	if hasExample(a, skill, content) {
		// Accepted before (a correction delivered again), or written by
		// the team: nothing to suggest.
		return Suggestion{}, false, nil
	}
	now := s.now()
	sg := Suggestion{ID: c.MessageID, TeamID: c.TeamID, Agent: a.Slug, Skill: skill, Content: content,
		ConversationID: c.ConversationID, DecisionID: c.DecisionID, RoutedTo: c.AnsweredBy, Kind: c.Kind,
		RatedLow: c.Rating > 0 && c.Rating <= LowRating, CreatedAt: now, ExpiresAt: now.Add(Retention)}
	added, err := s.Store.AddSuggestion(ctx, sg, MaxPerAgent)
	return sg, added, err
}

// bestSkill is the agent's skill the gate ranks best for content; with no
// score for it (the gate leaves out an agent it cannot consider), its
// first skill a user may reach. "" when it has none.
func (s *Service) bestSkill(ctx context.Context, teamID string, a agents.Agent, content string) (string, error) {
	reachable := map[string]bool{}
	first := ""
	for _, sk := range a.Skills {
		if !sk.InternalOnly {
			reachable[sk.Name] = true
			if first == "" {
				first = sk.Name
			}
		}
	}
	if first == "" {
		return "", nil
	}
	resp, err := s.Gate.Score(ctx, expertgate.Request{TeamID: teamID, Query: clipQuery(content), Include: []string{a.Slug}})
	if err != nil {
		return "", err
	}
	for _, sc := range resp.Scores {
		if sc.AgentSlug != a.Slug {
			continue
		}
		// Matching skills come best first.
		for _, name := range sc.MatchingSkills {
			if reachable[name] {
				return name, nil
			}
		}
	}
	return first, nil
}

func clipQuery(s string) string {
	if len(s) <= expertgate.MaxQuery {
		return s
	}
	return s[:expertgate.MaxQuery]
}

// List returns an agent's suggestions, newest first (ENOTFOUND for an
// agent the team does not have).
func (s *Service) List(ctx context.Context, teamID, agent string, p paging.Page) ([]Suggestion, string, error) {
	if _, err := s.Agents.Get(ctx, teamID, agent); err != nil {
		return nil, "", err
	}
	return s.Store.ListSuggestions(ctx, teamID, agent, p)
}

// Get returns one suggestion (ENOTFOUND for an unknown id, an agent the
// team does not have, or another team's).
func (s *Service) Get(ctx context.Context, teamID, agent, id string) (Suggestion, error) {
	if !ids.Valid("msg", id) || !agents.ValidSlug(agent) {
		return Suggestion{}, apperr.NotFound("example suggestion", id)
	}
	return s.Store.GetSuggestion(ctx, teamID, agent, id)
}

// AcceptInput is the body of POST …/example-suggestions/{id}/accept: the
// skill to add the example to, when not the suggested one.
type AcceptInput struct {
	Skill *string `json:"skill"`
}

// Accepted is what accepting did: the example added to Skill of the
// agent, now at Version (AgentsChanged fits the classifier again).
type Accepted struct {
	ID      string `json:"id"`
	Agent   string `json:"agent"`
	Skill   string `json:"skill"`
	Content string `json:"content"`
	Version int    `json:"agent_version"`
	// Examples is how many examples the skill has now.
	Examples int `json:"examples"`
}

// Accept adds the suggestion to its skill (or in.Skill) as an example and
// removes it. EINVALID naming skill for a skill the agent does not have;
// ECONFLICT (SkillExamplesFull) when the skill has agents.MaxExamples
// examples or the agent's examples would pass agents.MaxExampleBytes,
// (AgentNotEditable) for a remote agent, or when the agent changed
// meanwhile and it still does on the retry; ENOTFOUND for an unknown
// suggestion. An example the skill already has is not added twice: the
// suggestion is simply removed.
func (s *Service) Accept(ctx context.Context, teamID, agent, id string, in AcceptInput) (Accepted, error) {
	sg, err := s.Get(ctx, teamID, agent, id)
	if err != nil {
		return Accepted{}, err
	}
	skill := sg.Skill
	if in.Skill != nil {
		skill = strings.TrimSpace(*in.Skill)
	}
	for attempt := 0; ; attempt++ {
		a, err := s.Agents.Get(ctx, teamID, agent)
		if err != nil {
			return Accepted{}, err
		}
		if a.Remote != nil {
			return Accepted{}, apperr.New(apperr.ECONFLICT, "an A2A agent's skills are its card's: no example can be added").WithReason("AgentNotEditable")
		}
		i := slices.IndexFunc(a.Skills, func(sk agents.Skill) bool { return sk.Name == skill })
		if i < 0 {
			return Accepted{}, apperr.Invalid("skill", "agent %s has no skill %q", agent, skill)
		}
		if hasExample(a, skill, sg.Content) {
			if err := s.Store.DeleteSuggestion(ctx, teamID, agent, id); err != nil && !apperr.Is(err, apperr.ENOTFOUND) {
				return Accepted{}, err
			}
			return Accepted{ID: id, Agent: agent, Skill: skill, Content: sg.Content, Version: a.Version, Examples: len(a.Skills[i].Examples)}, nil
		}
		if len(a.Skills[i].Examples) >= agents.MaxExamples || examplesBytes(a)+len(sg.Content) > agents.MaxExampleBytes {
			return Accepted{}, apperr.New(apperr.ECONFLICT, "skill %s of %s has no room for another example (at most %d a skill, %d bytes an agent): remove one first",
				skill, agent, agents.MaxExamples, agents.MaxExampleBytes).WithReason("SkillExamplesFull")
		}
		skills := slices.Clone(a.Skills)
		skills[i].Examples = append(slices.Clone(skills[i].Examples), sg.Content)
		version := a.Version
		upd, err := s.Agents.Update(ctx, teamID, agent, agents.UpdateInput{Skills: &skills, Version: &version})
		if apperr.Is(err, apperr.ECONFLICT) && attempt == 0 {
			continue // changed between the read and the write: once more on the new version
		}
		if err != nil {
			return Accepted{}, err
		}
		// The example is in: the suggestion goes. A removal that fails
		// leaves it listed; accepting it again finds the example there.
		if err := s.Store.DeleteSuggestion(ctx, teamID, agent, id); err != nil && !apperr.Is(err, apperr.ENOTFOUND) {
			return Accepted{}, err
		}
		n := 0
		if j := slices.IndexFunc(upd.Skills, func(sk agents.Skill) bool { return sk.Name == skill }); j >= 0 {
			n = len(upd.Skills[j].Examples)
		}
		return Accepted{ID: id, Agent: agent, Skill: skill, Content: sg.Content, Version: upd.Version, Examples: n}, nil
	}
}

// hasExample: the agent's skill has content as an example (compared as
// agents compares them for duplicates: case aside).
func hasExample(a agents.Agent, skill, content string) bool {
	for _, sk := range a.Skills {
		if sk.Name == skill {
			return slices.ContainsFunc(sk.Examples, func(e string) bool { return strings.EqualFold(e, content) })
		}
	}
	return false
}

// examplesBytes is the size of an agent's examples as agents counts it.
func examplesBytes(a agents.Agent) int {
	n := 0
	for _, sk := range a.Skills {
		for _, e := range sk.Examples {
			n += len(e)
		}
	}
	return n
}

// Dismiss hides a suggestion without adding it (ENOTFOUND for an unknown
// or dismissed one).
func (s *Service) Dismiss(ctx context.Context, teamID, agent, id string) error {
	if !ids.Valid("msg", id) || !agents.ValidSlug(agent) {
		return apperr.NotFound("example suggestion", id)
	}
	return s.Store.DismissSuggestion(ctx, teamID, agent, id)
}
