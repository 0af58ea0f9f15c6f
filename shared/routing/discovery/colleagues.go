package discovery

import (
	"context"
	"math"
	"strings"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/routing/expertgate"
	"github.com/conclave-ai/conclave/shared/team/agents"
)

// MaxColleagues bounds what FindColleagues answers.
const MaxColleagues = 5

// Colleague is an agent that fits a need, as an agent reads it (the
// find_colleagues tool).
type Colleague struct {
	Slug           string   `json:"slug"`
	Name           string   `json:"name"`
	MatchingSkills []string `json:"matching_skills"`
	// Confidence is the gate's calibrated match confidence in [0, 1].
	Confidence float64 `json:"confidence"`
	// Availability is the agent's status: active (it can take work) or
	// paused (it cannot until a human activates it).
	Availability string `json:"availability"`
	// ActiveTasks is its load: the tasks it runs or has queued (at most
	// tasks.MaxActivePerAgent).
	ActiveTasks int `json:"active_tasks"`
}

// FindColleagues asks the ExpertGate which of the team's agents, other
// than the asking agent, fit need: at most max (1 to MaxColleagues), best
// first. Paused agents are scored with the active ones (their skills may
// be what fits) and answered as paused, so the asker knows why it cannot
// delegate to them. Returns EINVALID.
func (s *Service) FindColleagues(ctx context.Context, teamID, asker, need string, limit int) ([]Colleague, error) {
	need = strings.TrimSpace(need)
	if need == "" || len(need) > expertgate.MaxQuery {
		return nil, apperr.Invalid("need", "need must be 1 to %d characters", expertgate.MaxQuery)
	}
	if limit < 1 || limit > MaxColleagues {
		return nil, apperr.Invalid("max", "max must be 1 to %d", MaxColleagues)
	}
	list, err := s.Dir.TeamAgents(ctx, teamID)
	if err != nil {
		return nil, err
	}
	status := map[string]string{}
	var candidates []agents.Agent
	for _, a := range list {
		if a.Slug == asker || (a.Status != agents.StatusActive && a.Status != agents.StatusPaused) {
			continue
		}
		status[a.Slug] = a.Status
		// The gate scores the agents a message can be routed to; here
		// the question is who fits, so a paused agent is scored as if
		// active and answered with its real status.
		a.Status = agents.StatusActive
		candidates = append(candidates, a)
	}
	out := []Colleague{}
	if len(candidates) == 0 {
		return out, nil
	}
	resp, err := s.Gate.Score(ctx, expertgate.Request{TeamID: teamID, Query: need, Agents: candidates, Exclude: []string{asker}})
	if err != nil {
		return nil, err
	}
	for _, sc := range resp.Scores {
		if len(out) == limit {
			break
		}
		st, ok := status[sc.AgentSlug]
		if !ok {
			continue
		}
		skills := sc.MatchingSkills
		if skills == nil {
			skills = []string{}
		}
		out = append(out, Colleague{Slug: sc.AgentSlug, Name: sc.AgentName, MatchingSkills: skills,
			Confidence: math.Round(sc.Confidence*1000) / 1000, Availability: st, ActiveTasks: resp.Loads.Of(sc.AgentSlug).ActiveTasks})
	}
	return out, nil
}
