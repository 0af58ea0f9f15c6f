package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"

	"github.com/conclave-ai/conclave/localstack/bench/benchembed"
	"github.com/conclave-ai/conclave/shared/routing"
)

// runFit chooses the example side of the embedder's calibration: the
// team with 25 examples per skill, ranked on `val` (in scope) and
// `oos_val` (out of scope). For each scale of the example similarity
// (ExFloor, ExCeil) the messages are ranked once, and the confidence's
// weights (ExBias, ExMatch, ExLead), which do not change the ranking, are
// searched on what the ranking gave: among the calibrations that decline
// at most 5% of the in-scope messages at the default threshold, the one
// that routes the most of them right plus declines the most out-of-scope
// ones wins. The description's side (fitted on BFCL) is left as it is.
func runFit(ctx context.Context, w io.Writer, ds *dataset, em *benchembed.Memo, seed uint64) error {
	team := ds.team(25, seed)
	ix := routing.BuildIndex(team)
	vecs, err := em.Embed(ctx, ix.SkillTexts())
	if err != nil {
		return err
	}
	in, err := queries(ctx, em, ds.Val)
	if err != nil {
		return err
	}
	out, err := queries(ctx, em, ds.OOSVal)
	if err != nil {
		return err
	}
	var best *fitResult
	for _, lo := range []float64{0.1, 0.2, 0.3} {
		for _, hi := range []float64{1.0, 1.1, 1.2} {
			cal := routing.CalibrationFor(em.ID())
			cal.ExFloor, cal.ExCeil = lo, hi
			if err := ix.SetEmbeddings(vecs, cal); err != nil {
				return err
			}
			inTop, outTop := ranked(ix, ds.Val, in), ranked(ix, ds.OOSVal, out)
			for _, bias := range steps(-30, -2, 0.5) {
				for _, match := range steps(4, 48, 2) {
					for _, lead := range steps(0, 16, 1) {
						cal.ExBias, cal.ExMatch, cal.ExLead = bias, match, lead
						r := fitResult{cal: cal}
						for i, t := range inTop {
							switch {
							case t.declined(cal):
								r.falseDeclined++
							case t.agent == ds.Val[i].agent:
								r.right++
							}
						}
						for _, t := range outTop {
							if t.declined(cal) {
								r.declined++
							}
						}
						r.right /= float64(len(inTop))
						r.falseDeclined /= float64(len(inTop))
						r.declined /= float64(len(outTop))
						if r.falseDeclined <= 0.05 && (best == nil || r.right+r.declined > best.right+best.declined) {
							best = &r
						}
					}
				}
			}
		}
	}
	if best == nil {
		return fmt.Errorf("no calibration declines at most 5%% of val at %.2f", routing.DefaultThreshold)
	}
	c := best.cal
	fmt.Fprintf(w, "agreement of the team's examples: %.3f\n", ix.ExampleAgreement())
	fmt.Fprintf(w, "fitted on val (%d) and oos_val (%d), 25 examples per skill: ExFloor: %g, ExCeil: %g, ExBias: %g, ExMatch: %g, ExLead: %g: right agent %.1f%%, falsely declined %.1f%%, out of scope declined %.1f%%\n",
		len(ds.Val), len(ds.OOSVal), c.ExFloor, c.ExCeil, c.ExBias, c.ExMatch, c.ExLead, 100*best.right, 100*best.falseDeclined, 100*best.declined)
	return nil
}

// fitResult is one calibration's figures on val and oos_val.
type fitResult struct {
	cal                            routing.Calibration
	right, falseDeclined, declined float64
}

// topOf is what the ranking gave a message: the agent ranked first, its
// skill match, and its lead over the runner-up when it has the best skill
// match (0 otherwise).
type topOf struct {
	agent       string
	skill, lead float64
}

// declined: the first agent's confidence under cal is below the default
// threshold, or it is the generalist.
func (t topOf) declined(cal routing.Calibration) bool {
	if t.agent == generalist {
		return true
	}
	return 1/(1+math.Exp(-(cal.ExBias+cal.ExMatch*t.skill+cal.ExLead*t.lead))) < routing.DefaultThreshold
}

func ranked(ix *routing.Index, msgs []labelled, vecs [][]float64) []topOf {
	out := make([]topOf, len(msgs))
	for i, m := range msgs {
		scores := ix.Rank(m.Text, routing.Signals{QueryEmbedding: vecs[i]}).Best(len(ix.Agents()), 0)
		first, second := 0.0, 0.0
		for _, s := range scores {
			if s.SkillMatch > first {
				first, second = s.SkillMatch, first
			} else if s.SkillMatch > second {
				second = s.SkillMatch
			}
		}
		t := topOf{agent: scores[0].AgentSlug, skill: scores[0].SkillMatch}
		if t.skill == first {
			t.lead = first - second
		}
		out[i] = t
	}
	return out
}

func steps(from, to, step float64) []float64 {
	var out []float64
	for x := from; x <= to+1e-9; x += step {
		out = append(out, round3(x))
	}
	return out
}

func queries(ctx context.Context, em *benchembed.Memo, msgs []labelled) ([][]float64, error) {
	texts := make([]string, len(msgs))
	for i, m := range msgs {
		texts[i] = m.Text
	}
	return em.Embed(ctx, texts)
}

// top is the best-ranked agent for a message and its confidence.
func top(ix *routing.Index, text string, vec []float64) (string, float64) {
	s := ix.Rank(text, routing.Signals{QueryEmbedding: vec}).Best(1, 0)
	return s[0].AgentSlug, s[0].Confidence
}

func round3(x float64) float64 { return float64(int64(x*1000+0.5)) / 1000 }

// runFitClassifier fits the Platt scaling of the classifier's
// probabilities (Calibration.ClsScale and ClsBias): the team with 25
// examples per skill and its classifier, the agent each message of `val`
// and `oos_val` gets and its probability. The cut is the highest
// probability below which at most 5% of val would be declined (the
// generalist's answers count as declines too), mapped onto the default
// threshold; the scale is the one under which the confidences best
// predict whether the agent routed to is the right one (log-likelihood,
// out-of-scope messages never right). The default threshold then means:
// on this data, that probability of being right. It first prints the
// frontier a classifier change is judged on: at cuts declining 3, 4 and
// 5% of val, right agent and skill, and the out-of-scope messages
// declined, of oos_val and oos_train (200: one message is half a point,
// not one).
func runFitClassifier(ctx context.Context, w io.Writer, ds *dataset, em *benchembed.Memo, seed uint64) error {
	id := em.ID()
	cal := routing.CalibrationFor(id)
	cal.ClsScale, cal.ClsBias = 0, 0 // the confidence is the probability itself while fitting
	routing.Calibrations[id] = cal
	team := ds.team(25, seed)
	gate, _, err := teamGate(ctx, team, em, true)
	if err != nil {
		return err
	}
	in, err := routeAll(ctx, team, gate, ds.Val, 0)
	if err != nil {
		return err
	}
	out, err := routeAll(ctx, team, gate, ds.OOSVal, 0)
	if err != nil {
		return err
	}
	cut, err := cutAt(in, 0.05)
	if err != nil {
		return err
	}
	var all []obs
	for _, r := range in {
		all = append(all, obs{r.confidence, r.agent == r.msg.agent})
	}
	for _, r := range out {
		all = append(all, obs{r.confidence, false})
	}
	oosTrain, err := routeAll(ctx, team, gate, ds.OOSTrain, 0)
	if err != nil {
		return err
	}
	for _, share := range []float64{0.03, 0.04, 0.05} {
		line, err := cutFigures(in, append(slices.Clone(out), oosTrain...), share)
		if err != nil {
			return err
		}
		fmt.Fprintln(w, line)
	}
	bestA := plattScale(all, cut)
	bestB := logit(routing.DefaultThreshold) - bestA*logit(cut)
	right, falseDeclined, declined := 0, 0, 0
	for _, r := range in {
		switch {
		case r.agent == generalist || r.confidence < cut:
			falseDeclined++
		case r.agent == r.msg.agent:
			right++
		}
	}
	for _, r := range out {
		if r.agent == generalist || r.confidence < cut {
			declined++
		}
	}
	n := float64(len(in))
	fmt.Fprintf(w, "classifier calibration fitted on val (%d) and oos_val (%d), 25 examples per skill: ClsScale: %.3f, ClsBias: %.3f (probability %.3f at the default threshold %.2f): right agent %.1f%%, falsely declined %.1f%%, out of scope declined %.1f%%\n",
		len(in), len(out), round3(bestA), round3(bestB), cut, routing.DefaultThreshold, 100*float64(right)/n, 100*float64(falseDeclined)/n, 100*float64(declined)/float64(len(out)))
	return nil
}

// obs is one message's probability under the classifier and whether the
// agent it was routed to is the right one.
type obs struct {
	p     float64
	right bool
}

func logit(p float64) float64 { p = min(max(p, 1e-6), 1-1e-6); return math.Log(p / (1 - p)) }

// plattScale is the scale under which σ(a × logit(p) + b), b putting cut
// at the default threshold, best predicts whether each observation's
// agent is right (log-likelihood).
func plattScale(all []obs, cut float64) float64 {
	bestA, bestLL := 0.0, math.Inf(-1)
	for a := 0.2; a <= 4+1e-9; a += 0.05 {
		b := logit(routing.DefaultThreshold) - a*logit(cut)
		ll := 0.0
		for _, o := range all {
			c := 1 / (1 + math.Exp(-(a*logit(o.p) + b)))
			c = min(max(c, 1e-9), 1-1e-9)
			if o.right {
				ll += math.Log(c)
			} else {
				ll += math.Log(1 - c)
			}
		}
		if ll > bestLL {
			bestA, bestLL = a, ll
		}
	}
	return bestA
}

// cutAt is the highest probability below which at most share of the
// in-scope messages in would be declined, the generalist's answers
// included.
func cutAt(in []routed, share float64) (float64, error) {
	var ps []float64 // the in-scope probabilities of specialists' answers
	generalists := 0
	for _, r := range in {
		if r.agent == generalist {
			generalists++
			continue
		}
		ps = append(ps, r.confidence)
	}
	sort.Float64s(ps)
	allowed := int(share*float64(len(in))) - generalists
	if allowed < 0 {
		return 0, fmt.Errorf("the generalist alone takes %d of %d val messages", generalists, len(in))
	}
	return ps[allowed], nil // declining below it declines `allowed` of them
}

// cutFigures are the figures of in (val) and out (out of scope) at the
// cut that declines share of in (cutAt): right agent, right skill, out
// of scope declined.
func cutFigures(in, out []routed, share float64) (string, error) {
	cut, err := cutAt(in, share)
	if err != nil {
		return "", err
	}
	agent, skill, declined := 0, 0, 0
	for _, r := range in {
		if r.agent != generalist && r.confidence >= cut && r.agent == r.msg.agent {
			agent++
			if r.skill == r.msg.skill {
				skill++
			}
		}
	}
	for _, r := range out {
		if r.agent == generalist || r.confidence < cut {
			declined++
		}
	}
	n := float64(len(in))
	return fmt.Sprintf("val declined %.0f%%: right agent %.1f%%, right skill %.1f%%, out of scope declined (oos_val and oos_train) %.1f%%",
		100*share, 100*float64(agent)/n, 100*float64(skill)/n, 100*float64(declined)/float64(len(out))), nil
}
