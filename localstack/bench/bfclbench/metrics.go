package main

import "github.com/conclave-ai/conclave/shared/routing"

// outcome is how the gate ranked one entry's agents.
type outcome struct {
	team *team
	// best is the best-ranked agent's slug and Confidence ("" and 0 for
	// an entry without functions: nothing to route to, always declined).
	best       string
	confidence float64
	// rank is the gold agent's place, 1 = best (0: no gold).
	rank int
}

// rankTeam ranks every agent of t for its query (queryVec is the query's
// embedding, nil without an embedder) and records the outcome.
func rankTeam(t *team, ix *routing.Index, queryVec []float64) outcome {
	o := outcome{team: t}
	if len(t.Agents) == 0 {
		return o
	}
	scores := ix.Rank(t.Query, routing.Signals{QueryEmbedding: queryVec}).Best(len(t.Agents), 0)
	o.best, o.confidence = scores[0].AgentSlug, scores[0].Confidence
	for i, s := range scores {
		if s.AgentSlug == t.Gold {
			o.rank = i + 1
			break
		}
	}
	return o
}

// declined is the decline rule the issue fixes: the best agent's
// calibrated confidence is below the threshold.
func (o outcome) declined(threshold float64) bool { return o.confidence < threshold }

// sweepPoint is a set's figures at one threshold.
type sweepPoint struct {
	Threshold float64 `json:"threshold"`
	// Declined: the share of the set's questions declined (on the
	// irrelevance sets, where declining is right).
	Declined *float64 `json:"declined,omitempty"`
	// FalseDeclined and Routed (answerable sets): the share of questions
	// declined although a function fits, and the share routed to the
	// right agent (ranked first and not declined).
	FalseDeclined *float64 `json:"false_declined,omitempty"`
	Routed        *float64 `json:"routed,omitempty"`
}

// setMetrics are one set's figures.
type setMetrics struct {
	Set  string `json:"set"`
	Role string `json:"role"`
	N    int    `json:"n"`
	// Top1 and MRR (answerable sets): the gold agent ranked first, and the
	// mean reciprocal of its rank among all the entry's agents. They do not
	// depend on the threshold.
	Top1 *float64 `json:"top1,omitempty"`
	MRR  *float64 `json:"mrr,omitempty"`
	// At is the figures at the default threshold, Sweep at each of
	// thresholds().
	At    sweepPoint   `json:"at_default_threshold"`
	Sweep []sweepPoint `json:"sweep"`
}

// thresholds is the sweep: 0.30 to 0.80 in steps of 0.05 (k/100, so the
// values are the nearest doubles to the decimals, as the seed port's).
func thresholds() []float64 {
	var out []float64
	for k := 30; k <= 80; k += 5 {
		out = append(out, float64(k)/100)
	}
	return out
}

func measure(s benchSet, outs []outcome) setMetrics {
	m := setMetrics{Set: s.name, Role: s.role(), N: len(outs)}
	if s.answerable && len(outs) > 0 {
		top1, rr := 0, 0.0
		for _, o := range outs {
			if o.rank == 1 {
				top1++
			}
			if o.rank > 0 {
				rr += 1 / float64(o.rank)
			}
		}
		m.Top1, m.MRR = share(top1, len(outs)), ratio(rr, len(outs))
	}
	m.At = point(s, outs, routing.DefaultThreshold)
	for _, th := range thresholds() {
		m.Sweep = append(m.Sweep, point(s, outs, th))
	}
	return m
}

func point(s benchSet, outs []outcome, threshold float64) sweepPoint {
	p := sweepPoint{Threshold: threshold}
	declined, routed := 0, 0
	for _, o := range outs {
		if o.declined(threshold) {
			declined++
		} else if o.rank == 1 {
			routed++
		}
	}
	if s.answerable {
		p.FalseDeclined, p.Routed = share(declined, len(outs)), share(routed, len(outs))
	} else {
		p.Declined = share(declined, len(outs))
	}
	return p
}

func share(k, n int) *float64 { return ratio(float64(k), n) }

// ratio is x/n, or nil (no figure) for an empty set.
func ratio(x float64, n int) *float64 {
	if n == 0 {
		return nil
	}
	v := x / float64(n)
	return &v
}
