package cascade

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/routing"
)

// Analytics read the routing decision log.
const (
	// MaxQuery bounds the query of SelectedFor: as long as a chat message.
	MaxQuery = 8000
	// AnalyticsWindow is the default look-back of the analytics.
	AnalyticsWindow = 30 * 24 * time.Hour
	// MaxAnalyzed bounds how many recent decisions one analytics call reads.
	MaxAnalyzed = 2000
	// DefaultSimilarity: decisions whose query is at least this similar
	// (cosine over content words) count as "queries like" the given one.
	DefaultSimilarity = 0.5
)

// AgentSelection is how often an agent was selected for similar queries.
type AgentSelection struct {
	Agent         string  `json:"agent"`
	Selected      int     `json:"selected"`
	Share         float64 `json:"share"`
	AvgConfidence float64 `json:"avg_confidence"`
}

// SelectionReport answers "which agents are selected most often for
// queries like this one".
type SelectionReport struct {
	Query            string           `json:"query"`
	MinSimilarity    float64          `json:"min_similarity"`
	Since            time.Time        `json:"since"`
	DecisionsScanned int              `json:"decisions_scanned"`
	MatchedDecisions int              `json:"matched_decisions"`
	Agents           []AgentSelection `json:"agents"`
}

// SelectedFor counts the agents selected for logged queries similar to
// query. Returns EINVALID.
func (s *Service) SelectedFor(ctx context.Context, teamID, query string, minSim float64, since time.Time) (SelectionReport, error) {
	query = strings.TrimSpace(query)
	if query == "" || len(query) > MaxQuery {
		return SelectionReport{}, apperr.Invalid("query", "query must be 1 to %d characters", MaxQuery)
	}
	if minSim <= 0 {
		minSim = DefaultSimilarity
	}
	if minSim > 1 {
		return SelectionReport{}, apperr.Invalid("min_similarity", "min_similarity must be from 0 to 1")
	}
	if since.IsZero() {
		since = s.Now.UTC().Add(-AnalyticsWindow)
	}
	list, err := s.Store.RecentDecisions(ctx, teamID, since, MaxAnalyzed)
	if err != nil {
		return SelectionReport{}, err
	}
	rep := SelectionReport{Query: query, MinSimilarity: minSim, Since: since, DecisionsScanned: len(list), Agents: []AgentSelection{}}
	qv := routing.TermVector(query)
	type acc struct {
		n    int
		conf float64
	}
	counts := map[string]*acc{}
	total := 0
	for _, d := range list {
		if routing.Cosine(qv, routing.TermVector(d.Query)) < minSim {
			continue
		}
		rep.MatchedDecisions++
		for _, a := range d.SelectedAgents {
			c := counts[a]
			if c == nil {
				c = &acc{}
				counts[a] = c
			}
			c.n++
			c.conf += d.Confidence
			total++
		}
	}
	for a, c := range counts {
		rep.Agents = append(rep.Agents, AgentSelection{Agent: a, Selected: c.n, Share: round3(float64(c.n) / float64(total)), AvgConfidence: round3(c.conf / float64(c.n))})
	}
	sort.Slice(rep.Agents, func(i, j int) bool {
		if rep.Agents[i].Selected != rep.Agents[j].Selected {
			return rep.Agents[i].Selected > rep.Agents[j].Selected
		}
		return rep.Agents[i].Agent < rep.Agents[j].Agent
	})
	return rep, nil
}

// StrategyStats is the average confidence of one strategy.
type StrategyStats struct {
	Strategy      string  `json:"strategy"`
	Decisions     int     `json:"decisions"`
	AvgConfidence float64 `json:"avg_confidence"`
	FallbackRate  float64 `json:"fallback_rate"`
	AvgCostUSD    float64 `json:"avg_cost_usd"`
}

// StrategyReport answers "what is the average confidence per strategy".
type StrategyReport struct {
	Since            time.Time       `json:"since"`
	DecisionsScanned int             `json:"decisions_scanned"`
	Strategies       []StrategyStats `json:"strategies"`
}

// ConfidenceByStrategy averages confidence, fallback rate and cost per
// strategy over the decisions since.
func (s *Service) ConfidenceByStrategy(ctx context.Context, teamID string, since time.Time) (StrategyReport, error) {
	if since.IsZero() {
		since = s.Now.UTC().Add(-AnalyticsWindow)
	}
	list, err := s.Store.RecentDecisions(ctx, teamID, since, MaxAnalyzed)
	if err != nil {
		return StrategyReport{}, err
	}
	by := map[string]*StrategyStats{}
	for _, d := range list {
		st := by[string(d.Strategy)]
		if st == nil {
			st = &StrategyStats{Strategy: string(d.Strategy)}
			by[string(d.Strategy)] = st
		}
		st.Decisions++
		st.AvgConfidence += d.Confidence
		st.AvgCostUSD += d.ActualCost
		if d.Fallback {
			st.FallbackRate++
		}
	}
	rep := StrategyReport{Since: since, DecisionsScanned: len(list), Strategies: []StrategyStats{}}
	for _, st := range by {
		n := float64(st.Decisions)
		st.AvgConfidence, st.FallbackRate, st.AvgCostUSD = round3(st.AvgConfidence/n), round3(st.FallbackRate/n), st.AvgCostUSD/n
		rep.Strategies = append(rep.Strategies, *st)
	}
	// One entry per strategy (the map's keys), so `<` and `<=` sort alike: a
	// mutation testing survivor that changes nothing.
	sort.Slice(rep.Strategies, func(i, j int) bool { return rep.Strategies[i].Strategy < rep.Strategies[j].Strategy })
	return rep, nil
}

func round3(x float64) float64 { return float64(int64(x*1000+0.5)) / 1000 }
