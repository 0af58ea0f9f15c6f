package routing

import (
	"context"
	"slices"
)

// ClassifierQuality is how a team's classifier routes the team's own
// examples when each is held out of the fit (k-fold cross-validation over
// the examples; the skill texts stay in every fold): what the calibration
// endpoint shows a team.
type ClassifierQuality struct {
	Folds int `json:"folds"`
	// Examples is how many examples were routed held out.
	Examples int `json:"examples"`
	// AgentTop1 and SkillTop1: the share whose agent (skill) ranked first.
	AgentTop1 float64 `json:"agent_top1"`
	SkillTop1 float64 `json:"skill_top1"`
	// Curve: at each threshold, the share of the examples the best agent
	// would take (confidence at or above it) and the share it would take
	// rightly.
	Curve []CurvePoint `json:"curve"`
}

// CurvePoint is one threshold of ClassifierQuality.Curve.
type CurvePoint struct {
	Threshold float64 `json:"threshold"`
	Routed    float64 `json:"routed"`
	Right     float64 `json:"right"`
}

// CurveThresholds are the thresholds of ClassifierQuality.Curve.
var CurveThresholds = []float64{0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9}

// crossValidate fits opt.Folds classifiers, each without one fold of the
// examples (example i is in fold i mod Folds: every skill's examples are
// spread over the folds), and routes the held-out fold with it.
func (c *Classifier) crossValidate(ctx context.Context, ix *Index, all []sample, opt FitOptions) (*ClassifierQuality, error) {
	nd := len(ix.docs)
	held := all[nd : nd+len(ix.examples)]                                  // the examples
	always := append(slices.Clone(all[:nd]), all[nd+len(ix.examples):]...) // skill texts, background
	q := &ClassifierQuality{Folds: opt.Folds, Examples: len(held)}
	if len(held) < opt.Folds {
		return q, nil
	}
	routed := make([]int, len(CurveThresholds))
	right := make([]int, len(CurveThresholds))
	agentRight, skillRight := 0, 0
	p := make([]float32, c.classes())
	agentP := make([]float64, len(ix.agents))
	for fold := range opt.Folds {
		train := slices.Clone(always)
		for i, s := range held {
			if i%opt.Folds != fold {
				train = append(train, s)
			}
		}
		f := &Classifier{Skills: c.Skills, Background: c.Background, Dim: c.Dim, Terms: c.Terms, Grams: c.Grams, terms: c.terms}
		if err := f.fit(ctx, train, opt); err != nil {
			return nil, err
		}
		for i := fold; i < len(held); i += opt.Folds {
			s := held[i]
			f.logits(s.f, p)
			softmax(p, nil)
			clear(agentP)
			bestSkill := 0
			for d, pd := range p[:nd] {
				agentP[ix.docHot[d].agent] += float64(pd)
				if pd > p[bestSkill] {
					bestSkill = d
				}
			}
			bestAgent := 0
			for a, pa := range agentP {
				if pa > agentP[bestAgent] {
					bestAgent = a
				}
			}
			ok := int32(bestAgent) == ix.docHot[s.class].agent
			if ok {
				agentRight++
			}
			if int32(bestSkill) == s.class {
				skillRight++
			}
			conf := ix.cal.classified(agentP[bestAgent])
			for k, t := range CurveThresholds {
				if conf >= t {
					routed[k]++
					if ok {
						right[k]++
					}
				}
			}
		}
	}
	n := float64(len(held))
	q.AgentTop1, q.SkillTop1 = round3(float64(agentRight)/n), round3(float64(skillRight)/n)
	for k, t := range CurveThresholds {
		q.Curve = append(q.Curve, CurvePoint{Threshold: t, Routed: round3(float64(routed[k]) / n), Right: round3(float64(right[k]) / n)})
	}
	return q, nil
}

// Stale says whether c was fitted with other features than a fit makes
// now (one stored before the 4-grams has Grams 0): it still scores, but
// the calibration was fitted for today's, so the fitter fits it again even
// when the team's agents read the same.
func (c *Classifier) Stale() bool { return c.Grams != classifierGrams }
