package consultations

import (
	"context"
	"sort"
)

// PairMetrics is what one requester → specialist pair's consultations
// came to.
type PairMetrics struct {
	RequestingAgent string `json:"requesting_agent"`
	ConsultedAgent  string `json:"consulted_agent"`
	Count           int    `json:"count"`
	// ByOutcome counts the pair's consultations by how they stand or
	// ended: successful (rated 4-5), unsuccessful (rated 1-3), answered
	// (completed or in progress, not rated), human_resolved, abandoned
	// (closed after IdleLimit without an outcome), open (pending or
	// escalated and not resolved), and one entry per loop type that
	// escalated one (loop:<type>). Every consultation is in exactly one
	// of successful, unsuccessful, answered, human_resolved, abandoned,
	// open; the loop:<type> entries count escalations on top.
	ByOutcome map[string]int `json:"by_outcome"`
	// SuccessRate is successful / rated; 0 when none is rated.
	SuccessRate float64 `json:"success_rate"`
	// ByReason counts the pair's consultations by consultation_reason
	// (the specialist's best-matching skill).
	ByReason map[string]int `json:"by_reason"`
	// SuccessRateByReason is, per consultation_reason with at least one
	// rated consultation, successful / rated (the seed's "success rate by
	// consultation type"); a reason with none rated is absent, not 0.
	SuccessRateByReason map[string]float64 `json:"success_rate_by_reason"`

	AvgExchanges float64 `json:"avg_exchanges"`
	// LoopRate is escalated by a loop / count.
	LoopRate          float64 `json:"loop_rate"`
	TokensUsed        int     `json:"tokens_used"`
	CostUSD           float64 `json:"cost_usd"`
	AvgResponseMS     float64 `json:"avg_response_ms"`
	AvgRating         float64 `json:"avg_rating"`
	exchanges, rated  int
	responses, rating int
	responseMS        int64
	// reasonRated and reasonOK count rated and successful ones by reason.
	reasonRated, reasonOK map[string]int
}

// Metrics is GET /v1/consultations/metrics: per pair, and the total the
// pairs add up to.
type Metrics struct {
	Total int           `json:"total"`
	Pairs []PairMetrics `json:"pairs"`
}

// Metrics aggregates the team's consultations: the newest historyLimit
// of them (older ones are not counted; Total says how many were).
func (s *Service) Metrics(ctx context.Context, teamID string) (Metrics, error) {
	list, err := s.history(ctx, teamID)
	if err != nil {
		return Metrics{}, err
	}
	return Aggregate(list), nil
}

// Aggregate computes the metrics of list.
func Aggregate(list []Consultation) Metrics {
	by := map[[2]string]*PairMetrics{}
	for _, c := range list {
		k := [2]string{c.RequestingAgent, c.ConsultedAgent}
		p := by[k]
		if p == nil {
			p = &PairMetrics{RequestingAgent: k[0], ConsultedAgent: k[1], ByOutcome: map[string]int{}, ByReason: map[string]int{},
				SuccessRateByReason: map[string]float64{}, reasonRated: map[string]int{}, reasonOK: map[string]int{}}
			by[k] = p
		}
		p.Count++
		reason := c.Reason()
		p.ByReason[reason]++
		p.exchanges += len(c.Exchanges)
		p.TokensUsed += c.TokensUsed
		p.CostUSD += c.CostUSD
		for _, e := range c.Exchanges {
			p.responses++
			p.responseMS += e.ResponseMS
		}
		switch {
		case c.Outcome != nil && c.Outcome.Rating >= 4:
			p.ByOutcome["successful"]++
		case c.Outcome != nil:
			p.ByOutcome["unsuccessful"]++
		case c.ResolvedBy == "human" && c.Status == Completed:
			p.ByOutcome["human_resolved"]++
		case c.ClosedReason == ClosedIdle:
			p.ByOutcome["abandoned"]++
		case c.Status == InProgress || c.Status == Completed:
			p.ByOutcome["answered"]++
		default:
			p.ByOutcome["open"]++
		}
		if c.Outcome != nil {
			p.rated++
			p.rating += c.Outcome.Rating
			p.reasonRated[reason]++
			if c.Outcome.Rating >= 4 {
				p.reasonOK[reason]++
			}
		}
		if c.Loop != nil {
			p.ByOutcome["loop:"+c.Loop.Type]++
		}
	}
	m := Metrics{Total: len(list), Pairs: []PairMetrics{}}
	for _, p := range by {
		p.AvgExchanges = round(float64(p.exchanges) / float64(p.Count))
		loops := 0
		for k, n := range p.ByOutcome {
			// No outcome is "loop:" alone (every loop has a type), so `>= 5`
			// counts the same: a mutation testing survivor that changes nothing.
			if len(k) > 5 && k[:5] == "loop:" && k != "loop:"+EscalSpecialistError {
				loops += n
			}
		}
		p.LoopRate = round(float64(loops) / float64(p.Count))
		if p.rated > 0 {
			p.SuccessRate = round(float64(p.ByOutcome["successful"]) / float64(p.rated))
			p.AvgRating = round(float64(p.rating) / float64(p.rated))
		}
		for r, n := range p.reasonRated {
			p.SuccessRateByReason[r] = round(float64(p.reasonOK[r]) / float64(n))
		}
		if p.responses > 0 {
			p.AvgResponseMS = round(float64(p.responseMS) / float64(p.responses))
		}
		p.CostUSD = float64(int64(p.CostUSD*1e6+0.5)) / 1e6
		m.Pairs = append(m.Pairs, *p)
	}
	sort.Slice(m.Pairs, func(i, j int) bool {
		if m.Pairs[i].Count != m.Pairs[j].Count {
			return m.Pairs[i].Count > m.Pairs[j].Count // counts differ: `>=` alike (harmless survivor)
		}
		// Pairs are unique: `<=` sorts alike (a harmless survivor).
		return m.Pairs[i].RequestingAgent+"/"+m.Pairs[i].ConsultedAgent < m.Pairs[j].RequestingAgent+"/"+m.Pairs[j].ConsultedAgent
	})
	return m
}
