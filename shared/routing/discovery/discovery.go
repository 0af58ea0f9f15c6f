// Package discovery helps users and agents find the right agent:
// recommendations for a query (through the ExpertGate), experts by required
// skills, and whether an agent can take work now.
package discovery

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/clip"
	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/routing/expertgate"
	"github.com/conclave-ai/conclave/shared/team/agents"
)

// Directory is what discovery reads.
type Directory interface {
	GetAgent(ctx context.Context, teamID, slug string) (agents.Agent, error)
	// TeamAgents returns the agents that are not archived.
	TeamAgents(ctx context.Context, teamID string) ([]agents.Agent, error)
	// DefaultAgent is the team's default agent ("" when none is set).
	DefaultAgent(ctx context.Context, teamID string) (string, error)
	AgentLoads(ctx context.Context, teamID string) (routing.Loads, error)
}

// Service implements discovery.
type Service struct {
	Dir  Directory
	Gate expertgate.Gate
}

// Limits.
const (
	Recommendations = 3
	PreviewLength   = 100
	MaxSkills       = 20
	// AvgTaskSeconds estimates the wait for a slot at full capacity.
	AvgTaskSeconds = 30
)

// Recommendation is one suggested agent for a query: its overall score
// (skill match, past performance, style fit, load: the order), its
// calibrated confidence (what the threshold reads: the estimated
// probability that it is the right agent, docs/routing.md) and the skill
// that matched best.
type Recommendation struct {
	Slug               string   `json:"slug"`
	Name               string   `json:"name"`
	Overall            float64  `json:"overall"`
	Confidence         float64  `json:"confidence"`
	Skill              string   `json:"skill,omitempty"`
	MatchingSkills     []string `json:"matching_skills"`
	Tagline            string   `json:"tagline"`
	PersonalityPreview string   `json:"personality_preview"`
	Explanation        string   `json:"explanation"`
}

// Recommended is Recommend's answer: the top 3, and the decision a new
// conversation's first message would get from the gate (TOP_1 at the
// threshold): RoutedTo is the agent that would answer, Declined that no
// agent was confident enough, so the team's default agent would.
type Recommended struct {
	Items     []Recommendation `json:"items"`
	RoutedTo  string           `json:"routed_to"`
	Declined  bool             `json:"declined"`
	Threshold float64          `json:"confidence_threshold"`
}

// Recommend returns the top 3 agents for query by the gate's score, and
// whom a new conversation would be routed to at threshold (a confidence
// from 0 to 1). Returns EINVALID.
func (s *Service) Recommend(ctx context.Context, teamID, query string, threshold float64) (Recommended, error) {
	query = strings.TrimSpace(query)
	if query == "" || len(query) > expertgate.MaxQuery {
		return Recommended{}, apperr.Invalid("query", "query must be 1 to %d characters", expertgate.MaxQuery)
	}
	if threshold < 0 || threshold > 1 || math.IsNaN(threshold) {
		return Recommended{}, apperr.Invalid("confidence_threshold", "confidence_threshold must be from 0 to 1")
	}
	list, err := s.Dir.TeamAgents(ctx, teamID)
	if err != nil {
		return Recommended{}, err
	}
	by := map[string]agents.Agent{}
	active := []agents.Agent{}
	for _, a := range list {
		by[a.Slug] = a
		if a.Status == agents.StatusActive {
			active = append(active, a)
		}
	}
	// The agents just read go with the request: the gate reads only the
	// counters and ratings.
	resp, err := s.Gate.Score(ctx, expertgate.Request{TeamID: teamID, Query: query, Agents: active})
	if err != nil {
		return Recommended{}, err
	}
	out := Recommended{Items: []Recommendation{}, Threshold: threshold}
	for _, sc := range resp.Scores {
		if len(out.Items) == Recommendations {
			break
		}
		a := by[sc.AgentSlug]
		r := Recommendation{Slug: sc.AgentSlug, Name: sc.AgentName, Overall: sc.Overall, Confidence: sc.Confidence, MatchingSkills: sc.MatchingSkills,
			Tagline: a.Tagline, PersonalityPreview: preview(a.Personality.Description), Explanation: sc.Explanation}
		if len(sc.MatchingSkills) > 0 {
			r.Skill = sc.MatchingSkills[0]
		}
		out.Items = append(out.Items, r)
	}
	// The gate's TOP_1 decision, as a chat turn's selector makes it; the
	// default agent is read only when no agent is confident.
	confident, _ := routing.Confident(resp.Scores, threshold)
	if len(confident) > 0 {
		out.RoutedTo = confident[0].AgentSlug
		return out, nil
	}
	out.Declined = true
	if out.RoutedTo, err = s.Dir.DefaultAgent(ctx, teamID); err != nil {
		return Recommended{}, err
	}
	return out, nil
}

func preview(s string) string { return clip.Clip(s, PreviewLength) }

// Availability says whether an agent can take new work now.
type Availability struct {
	Agent                string `json:"agent"`
	Available            bool   `json:"available"`
	Status               string `json:"status"`
	ActiveTasks          int    `json:"active_tasks"`
	ActiveConversations  int    `json:"active_conversations"`
	EstimatedWaitSeconds int    `json:"estimated_wait_seconds"`
	Reason               string `json:"reason,omitempty"`
}

func availability(a agents.Agent, l routing.Load) Availability {
	av := Availability{Agent: a.Slug, Status: a.Status, ActiveTasks: l.ActiveTasks, ActiveConversations: l.ActiveConversations, Available: true}
	switch {
	case a.Status != agents.StatusActive:
		av.Available, av.Reason = false, "agent is "+a.Status
	case l.ActiveTasks >= routing.TaskCapacity:
		av.Available = false
		av.Reason = fmt.Sprintf("at its limit of %d concurrent tasks", routing.TaskCapacity)
		// A slot frees when one of the running tasks ends; with more queued
		// beyond the limit the wait grows by one task each.
		av.EstimatedWaitSeconds = (l.ActiveTasks - routing.TaskCapacity + 1) * AvgTaskSeconds
	}
	return av
}

// Availability checks one agent. Returns ENOTFOUND.
func (s *Service) Availability(ctx context.Context, teamID, slug string) (Availability, error) {
	if !agents.ValidSlug(slug) {
		return Availability{}, apperr.NotFound("agent", slug)
	}
	a, err := s.Dir.GetAgent(ctx, teamID, slug)
	if err != nil {
		return Availability{}, err
	}
	loads, err := s.Dir.AgentLoads(ctx, teamID)
	if err != nil {
		return Availability{}, err
	}
	return availability(a, loads.Of(slug)), nil
}

// Expert is an agent found by required skills.
type Expert struct {
	Slug            string       `json:"slug"`
	Name            string       `json:"name"`
	Tagline         string       `json:"tagline"`
	EffectiveSkills []string     `json:"effective_skills"`
	MatchedSkills   []string     `json:"matched_skills"`
	SkillCoverage   float64      `json:"skill_coverage"`
	Availability    Availability `json:"availability"`
}

// FindExperts returns the agents having at least one of the required
// skills, sorted by skill coverage, then availability, then load (lowest
// first). A required skill matches a skill's name, or one of its domains,
// keywords or actions. Returns EINVALID.
func (s *Service) FindExperts(ctx context.Context, teamID string, required, exclude []string) ([]Expert, error) {
	var want []string
	for _, r := range required {
		if r = strings.ToLower(strings.TrimSpace(r)); r != "" {
			want = append(want, r)
		}
	}
	if len(want) == 0 || len(want) > MaxSkills {
		return nil, apperr.Invalid("skills", "give 1 to %d required skills", MaxSkills)
	}
	skip := map[string]bool{}
	for _, e := range exclude {
		skip[strings.TrimSpace(e)] = true
	}
	list, err := s.Dir.TeamAgents(ctx, teamID)
	if err != nil {
		return nil, err
	}
	loads, err := s.Dir.AgentLoads(ctx, teamID)
	if err != nil {
		return nil, err
	}
	out := []Expert{}
	for _, a := range list {
		if skip[a.Slug] {
			continue
		}
		e := Expert{Slug: a.Slug, Name: a.Name, Tagline: a.Tagline, EffectiveSkills: []string{}, MatchedSkills: []string{}}
		for _, sk := range a.Skills {
			e.EffectiveSkills = append(e.EffectiveSkills, sk.Name)
		}
		for _, w := range want {
			if hasSkill(a, w) {
				e.MatchedSkills = append(e.MatchedSkills, w)
			}
		}
		if len(e.MatchedSkills) == 0 {
			continue
		}
		e.SkillCoverage = float64(int(float64(len(e.MatchedSkills))/float64(len(want))*1000+0.5)) / 1000
		e.Availability = availability(a, loads.Of(a.Slug))
		out = append(out, e)
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.SkillCoverage != b.SkillCoverage {
			return a.SkillCoverage > b.SkillCoverage
		}
		if a.Availability.Available != b.Availability.Available {
			return a.Availability.Available
		}
		la, lb := routing.LoadBalance(loads.Of(a.Slug)), routing.LoadBalance(loads.Of(b.Slug))
		if la != lb {
			return la > lb
		}
		return a.Slug < b.Slug
	})
	return out, nil
}

func hasSkill(a agents.Agent, want string) bool {
	for _, s := range a.Skills {
		if strings.EqualFold(s.Name, want) {
			return true
		}
		for _, list := range [][]string{s.Domains, s.Keywords, s.Actions} {
			for _, v := range list {
				if strings.EqualFold(v, want) {
					return true
				}
			}
		}
	}
	return false
}
