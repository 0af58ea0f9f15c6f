package main

// -fit: search the Calibration on the tuning sets (multiple, irrelevance)
// and print it with its held-out figures. The routing signals are computed
// once per entry (each skill's lexical match as index.go computes it, each
// skill's and the question's unit vectors), so each candidate calibration
// costs a few arithmetic operations per agent; the chosen one is then run
// through routing.Rank itself (the tables, and a check that the two agree).
//
// -proto names structural prototypes (only here, for the proposal):
// lex=bm25|covbm25 (lexical formula), cos=desc|namedesc|max (what the
// semantic cosine is against), extra=semlead|cosmax (a third feature of
// the confidence), single=zero (lead 0 in a single-agent team, as the
// Calibration's doc says; Rank gives it the whole skill match today).

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/conclave-ai/conclave/localstack/bench/benchembed"
	"github.com/conclave-ai/conclave/shared/routing"
)

// variant is a prototype's choice of features.
type variant struct {
	lex, cos, extra string
	singleZero      bool
	// aug: add to irrelevance (tuning) each of its questions asked of the
	// functions of a multiple entry, so that "no function fits" is not
	// always a one-agent team. oracle: fit on the held-out sets instead
	// (a diagnostic bound, never a calibration).
	aug, oracle bool
}

func parseVariant(s string) (variant, error) {
	v := variant{lex: "lex", cos: "full"}
	if s == "" {
		return v, nil
	}
	for kv := range strings.SplitSeq(s, ",") {
		k, val, _ := strings.Cut(strings.TrimSpace(kv), "=")
		switch k {
		case "lex":
			v.lex = val
		case "cos":
			v.cos = val
		case "extra":
			v.extra = val
		case "single":
			v.singleZero = val == "zero"
		case "aug":
			v.aug = val == "1"
		case "oracle":
			v.oracle = val == "1"
		default:
			return v, fmt.Errorf("-proto: unknown %q", k)
		}
	}
	return v, nil
}

func (v variant) base() bool { return v == variant{lex: "lex", cos: "full"} }

// Cosine kinds computed per agent.
const (
	cosFull     = iota // the skill text the index embeds
	cosDesc            // the function's description (no Inputs)
	cosName            // the skill's name as words
	cosNameDesc        // name + description
	nCos
)

// result is one entry's outcome under a calibration.
type result struct {
	s, lead, extra float64 // the best agent's skill match, lead (thousandths) and the extra feature
	rank           int     // the gold agent's rank (0: none)
	right          bool    // ranked first is the gold agent
	lexOnly        bool
}

// runFit loads the benchmark, fits the calibration and prints the report.
//
// Kept whole: a benchmark's script (load, fit, evaluate, print) read top to
// bottom.
func runFit(ctx context.Context, w io.Writer, data string, model routing.Embedder, label string, proto string, realCheck bool) error {
	v, err := parseVariant(proto)
	if err != nil {
		return err
	}
	start := time.Now()
	var feats, augmented []entryFeat
	teamsBySet := make([][]team, len(sets))
	var m *benchembed.Memo
	if model != nil {
		m = benchembed.New(model)
	}
	for si, s := range sets {
		teams, err := loadSet(data, s)
		if err != nil {
			return err
		}
		teamsBySet[si] = teams
		fs, err := features(ctx, si, teams, m, v)
		if err != nil {
			return err
		}
		feats = append(feats, fs...)
	}
	if v.aug {
		irr, mult := teamsBySet[1], teamsBySet[0]
		var cross []team
		for i, t := range irr {
			o := mult[(i*7)%len(mult)]
			cross = append(cross, team{ID: t.ID + "x" + o.ID, Query: t.Query, Agents: o.Agents, Functions: o.Functions})
		}
		fs, err := features(ctx, 1, cross, m, v)
		if err != nil {
			return err
		}
		augmented = fs
	}
	prep := time.Since(start)
	fmt.Fprintf(w, "fit (embedder %s, proto %q): %d entries prepared in %.1f s\n", label, proto, len(feats), prep.Seconds())

	tuning := slices.DeleteFunc(slices.Clone(feats), func(f entryFeat) bool { return sets[f.set].heldOut != v.oracle })
	if v.oracle {
		maxFalse = 0.05
	}
	tuning = append(tuning, augmented...)
	t0 := time.Now()
	var best fitted
	if model == nil {
		best = fitDecision(tuning, routing.Calibration{}, v, false)
	} else {
		best = searchCal(tuning, v)
	}
	fmt.Fprintf(w, "search: %.1f s\n", time.Since(t0).Seconds())
	c := best.cal
	fmt.Fprintf(w, "best: %s\n  -cal %s", calLiteral(c), calFlag(c))
	if v.extra != "" {
		fmt.Fprintf(w, "  extra weight %g (%s)", best.extraW, v.extra)
	}
	fmt.Fprintf(w, "\n  tuning: multiple top1 %.1f%%, irrelevance declined %.1f%% at multiple false-declined %.1f%% (0.6 on the fitted logistic = P(routed agent right) on the tuning mix)\n",
		100*best.top1, 100*best.decl, 100*best.falseDecl)
	reliability(w, tuning, c, v, best.extraW)

	// The figures of every set by the fit's own evaluation.
	var all []setMetrics
	for si, s := range sets {
		var outs []outcome
		for i := range feats {
			if feats[i].set != si {
				continue
			}
			r := evalEntry(&feats[i], c, v)
			outs = append(outs, outcome{team: &teamsBySet[si][0], best: "x", confidence: confOf(r, c, v, best.extraW), rank: r.rank})
		}
		all = append(all, measure(s, outs))
	}
	fmt.Fprintln(w, "figures by the fit's evaluation:")
	printTables(w, all)

	if realCheck && v.extra == "" && !v.singleZero && (v.lex == "lex") && v.cos == "full" {
		// The same calibration through routing.Rank.
		applyCal(c, model != nil)
		t1 := time.Now()
		var real []setMetrics
		mism := 0
		k := 0
		for si, s := range sets {
			outs, err := routeSet(ctx, teamsBySet[si], model)
			if err != nil {
				return err
			}
			for _, o := range outs {
				r := evalEntry(&feats[k], c, v)
				if (o.rank == 1) != (r.rank == 1) || o.declined(routing.DefaultThreshold) != (confOf(r, c, v, 0) < routing.DefaultThreshold) {
					mism++
				}
				k++
			}
			real = append(real, measure(s, outs))
		}
		fmt.Fprintf(w, "routing.Rank with it (%.1f s; %d entries where it and the fit's evaluation differ):\n", time.Since(t1).Seconds(), mism)
		printTables(w, real)
	}
	fmt.Fprintf(w, "total %.1f s\n", time.Since(start).Seconds())
	return nil
}

// evalEntry ranks an entry's agents under c as Rank does: skill match in
// thousandths, ties by slug then input order.
func evalEntry(f *entryFeat, c routing.Calibration, v variant) result {
	n := len(f.lex)
	var r result
	if n == 0 {
		return r
	}
	r.lexOnly = !f.hasVec && f.semRun
	top1, top2, leader := 0, 0, -1
	first := -1
	var sk [64]int
	skills := sk[:0]
	for a := range n {
		var s float64
		if f.hasVec {
			cos := cosOf(f, a, v)
			sem := 0.0
			if c.Ceil > c.Floor {
				sem = clamp01((cos - c.Floor) / (c.Ceil - c.Floor))
			}
			s = clamp01((1-c.Semantic)*f.lex[a] + c.Semantic*sem)
		} else {
			s = clamp01(f.lex[a])
		}
		m := 0
		if s > 0 {
			m = milli(s)
		}
		skills = append(skills, m)
		if m > top1 {
			top1, top2, leader = m, top1, a
		} else if m > top2 {
			top2 = m
		}
		if first < 0 || m > skills[first] || m == skills[first] && f.slugRank[a] < f.slugRank[first] {
			first = a
		}
	}
	r.s = float64(skills[first]) / 1000
	if first == leader && skills[first] == top1 && !(v.singleZero && n == 1) {
		r.lead = float64(top1-top2) / 1000
	}
	r.right = first == f.gold
	if f.gold >= 0 {
		g := skills[f.gold]
		r.rank = 1
		for a, m := range skills {
			if m > g || m == g && f.slugRank[a] < f.slugRank[f.gold] {
				r.rank++
			}
		}
	}
	switch v.extra {
	case "semlead": // the best cosine's margin over the runner-up's
		c1, c2 := -1.0, -1.0
		for a := range n {
			x := cosOf(f, a, v)
			if x > c1 {
				c1, c2 = x, c1
			} else if x > c2 {
				c2 = x
			}
		}
		if n > 1 {
			r.extra = c1 - c2
		}
	case "cosmax": // the first agent's best sub-text cosine
		if f.hasVec {
			r.extra = max(f.cos[cosFull][first], f.cos[cosDesc][first], f.cos[cosName][first], f.cos[cosNameDesc][first])
		}
	}
	return r
}

// confOf is the first agent's confidence, rounded as Rank rounds it.
func confOf(r result, c routing.Calibration, v variant, extraW float64) float64 {
	if r.s <= 0 {
		return 0
	}
	if r.lexOnly {
		c = routing.LexicalCalibration
	}
	return math.Round(1000/(1+math.Exp(-(c.Bias+c.Match*r.s+c.Lead*r.lead+extraW*r.extra)))) / 1000
}

// fitted is a calibration and its tuning figures.
type fitted struct {
	cal             routing.Calibration
	extraW          float64
	top1, mrr       float64
	decl, falseDecl float64
}

var maxFalse = 0.03

var logit06 = math.Log(0.6 / 0.4)

// searchCal: top-1 on multiple first (Floor, Ceil, Semantic on a grid),
// then the decline objective, then MRR.
func searchCal(tuning []entryFeat, v variant) fitted {
	type cand struct {
		c         routing.Calibration
		top1, mrr float64
		decl      float64
	}
	var cands []cand
	bestTop := 0.0
	rs := make([]result, len(tuning))
	for fl := 0; fl <= 60; fl += 5 {
		for ce := fl + 5; ce <= 100; ce += 5 {
			for se := 0; se <= 100; se += 5 {
				c := routing.Calibration{Floor: float64(fl) / 100, Ceil: float64(ce) / 100, Semantic: float64(se) / 100}
				top, rr, nm := 0, 0.0, 0
				for i := range tuning {
					rs[i] = evalEntry(&tuning[i], c, v)
					if sets[tuning[i].set].answerable {
						nm++
						if rs[i].rank == 1 {
							top++
						}
						rr += 1 / float64(max(1, rs[i].rank))
					}
				}
				t1 := float64(top) / float64(nm)
				if t1 < bestTop-1e-9 {
					continue
				}
				bestTop = max(bestTop, t1)
				cands = append(cands, cand{c: c, top1: t1, mrr: rr / float64(nm)})
			}
		}
	}
	cands = slices.DeleteFunc(cands, func(x cand) bool { return x.top1 < bestTop-1e-9 })
	for i := range cands {
		for j := range tuning {
			rs[j] = evalEntry(&tuning[j], cands[i].c, v)
		}
		cands[i].decl, _, _, _ = bestDirection(tuning, rs, false)
	}
	sort.SliceStable(cands, func(i, j int) bool {
		if cands[i].decl != cands[j].decl {
			return cands[i].decl > cands[j].decl
		}
		return cands[i].mrr > cands[j].mrr
	})
	// The best few get the full decision fit (with the extra feature).
	var best fitted
	for i := range min(len(cands), 10) {
		f := fitDecision(tuning, cands[i].c, v, true)
		f.mrr = cands[i].mrr
		if i == 0 || f.decl > best.decl+1e-9 {
			best = f
		}
	}
	return best
}

// bestDirection finds the accept rule s + λ·lead (+ μ·extra) ≥ t that
// declines the most of irrelevance with at most maxFalse of multiple
// declined: the share declined, λ, μ and t.
func bestDirection(tuning []entryFeat, rs []result, withExtra bool) (float64, float64, float64, float64) {
	var mult, irr []int
	for i := range tuning {
		if sets[tuning[i].set].answerable {
			mult = append(mult, i)
		} else {
			irr = append(irr, i)
		}
	}
	allow := int(math.Floor(maxFalse * float64(len(mult))))
	bestD, bestL, bestM, bestT := -1.0, 0.0, 0.0, 0.0
	zm := make([]float64, len(mult))
	mus := []float64{0}
	if withExtra {
		mus = nil
		for k := -10; k <= 40; k++ {
			mus = append(mus, float64(k)/10)
		}
	}
	for _, mu := range mus {
		for k := 0; k <= 40; k++ {
			lam := float64(k) / 10
			z := func(r result) float64 {
				if r.s <= 0 {
					return math.Inf(-1)
				}
				return r.s + lam*r.lead + mu*r.extra
			}
			for j, i := range mult {
				zm[j] = z(rs[i])
			}
			slices.Sort(zm)
			lim := zm[allow] // accept z ≥ lim: at most allow declined
			// Put t in the middle of the gap below lim.
			below := math.Inf(-1)
			for _, x := range zm[:allow] {
				below = max(below, x)
			}
			d := 0
			for _, i := range irr {
				x := z(rs[i])
				if x < lim {
					d++
					below = max(below, x)
				}
			}
			t := lim
			if !math.IsInf(below, -1) {
				t = (below + lim) / 2
			}
			decl := float64(d) / float64(len(irr))
			if decl > bestD+1e-9 {
				bestD, bestL, bestM, bestT = decl, lam, mu, t
			}
		}
	}
	return bestD, bestL, bestM, bestT
}

// fitDecision fixes Bias, Match and Lead for the ranking c gives: the
// direction by bestDirection, the scale by maximum likelihood of "the
// agent ranked first is right" with the 0.6 contour held on the rule.
func fitDecision(tuning []entryFeat, c routing.Calibration, v variant, semantic bool) fitted {
	rs := make([]result, len(tuning))
	for i := range tuning {
		rs[i] = evalEntry(&tuning[i], c, v)
	}
	_, lam, mu, t := bestDirection(tuning, rs, v.extra != "")
	nll := func(k float64) float64 {
		s := 0.0
		for _, r := range rs {
			if r.s <= 0 {
				continue
			}
			p := 1 / (1 + math.Exp(-(logit06 + k*(r.s+lam*r.lead+mu*r.extra-t))))
			p = min(max(p, 1e-9), 1-1e-9)
			if r.right {
				s -= math.Log(p)
			} else {
				s -= math.Log(1 - p)
			}
		}
		return s
	}
	lo, hi := 0.5, 200.0 // golden section on k
	for range 100 {
		m1, m2 := lo+(hi-lo)*0.382, lo+(hi-lo)*0.618
		if nll(m1) < nll(m2) {
			hi = m2
		} else {
			lo = m1
		}
	}
	k := (lo + hi) / 2
	r3 := func(x float64) float64 { return math.Round(x*1000) / 1000 }
	c.Bias, c.Match, c.Lead = r3(logit06-k*t), r3(k), r3(k*lam)
	f := fitted{cal: c, extraW: r3(k * mu)}
	var nm, top, fd, ni, d int
	for i, r := range rs {
		declined := confOf(r, c, v, f.extraW) < routing.DefaultThreshold
		if sets[tuning[i].set].answerable {
			nm++
			if r.rank == 1 {
				top++
			}
			if declined {
				fd++
			}
		} else {
			ni++
			if declined {
				d++
			}
		}
	}
	f.top1, f.falseDecl, f.decl = float64(top)/float64(nm), float64(fd)/float64(nm), float64(d)/float64(ni)
	return f
}

// reliability prints, on the tuning sets, the share of entries whose first
// agent is right by band of confidence: what a threshold means.
func reliability(w io.Writer, tuning []entryFeat, c routing.Calibration, v variant, extraW float64) {
	bands := []float64{0, 0.2, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.01}
	n := make([]int, len(bands)-1)
	right := make([]int, len(bands)-1)
	for i := range tuning {
		r := evalEntry(&tuning[i], c, v)
		p := confOf(r, c, v, extraW)
		for b := range n {
			if p >= bands[b] && p < bands[b+1] {
				n[b]++
				if r.right {
					right[b]++
				}
			}
		}
	}
	fmt.Fprint(w, "  tuning, share right by confidence band:")
	for b := range n {
		if n[b] > 0 {
			fmt.Fprintf(w, " [%.1f,%.1f) %d/%d", bands[b], min(1, bands[b+1]), right[b], n[b])
		}
	}
	fmt.Fprintln(w)
}
