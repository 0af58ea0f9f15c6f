package main

import (
	"context"
	"math"
	"sort"
	"strings"

	"github.com/conclave-ai/conclave/localstack/bench/benchembed"
	"github.com/conclave-ai/conclave/shared/platform/words"
	"github.com/conclave-ai/conclave/shared/routing"
)

// entryFeat is one entry's signals, independent of the calibration.
type entryFeat struct {
	set      int // index in sets
	gold     int // the gold agent (input order), -1: none
	slugRank []int
	lex      []float64 // per agent, by the variant's lexical formula
	cos      [nCos][]float64
	hasVec   bool
	semRun   bool // the run has an embedder (an entry without a vector reads LexicalCalibration)
}

// features computes every entry's calibration-free signals.
func features(ctx context.Context, si int, teams []team, m *benchembed.Memo, v variant) ([]entryFeat, error) {
	var qvecs [][]float64
	if m != nil {
		qs := make([]string, len(teams))
		for i, t := range teams {
			qs[i] = t.Query
		}
		var err error
		if qvecs, err = m.Embed(ctx, qs); err != nil {
			return nil, err
		}
	}
	out := make([]entryFeat, 0, len(teams))
	for i := range teams {
		t := &teams[i]
		f := entryFeat{set: si, gold: -1, semRun: m != nil}
		n := len(t.Agents)
		if n == 0 {
			out = append(out, f)
			continue
		}
		ix := routing.BuildIndex(t.Agents)
		texts := ix.SkillTexts()
		for a, ag := range t.Agents {
			if ag.Slug == t.Gold {
				f.gold = a
			}
		}
		order := make([]int, n)
		for a := range order {
			order[a] = a
		}
		sort.SliceStable(order, func(x, y int) bool { return t.Agents[order[x]].Slug < t.Agents[order[y]].Slug })
		f.slugRank = make([]int, n)
		for r, a := range order {
			f.slugRank[a] = r
		}
		f.lex = lexical(t.Query, texts, v.lex)
		if m != nil {
			q := unit32(qvecs[i])
			if q != nil {
				f.hasVec = true
				subs := [nCos][]string{texts}
				for k := 1; k < nCos; k++ {
					subs[k] = make([]string, n)
				}
				for a, ag := range t.Agents {
					sk := ag.Skills[0]
					name := strings.ReplaceAll(sk.Name, "-", " ")
					desc, _, _ := strings.Cut(sk.Description, " Inputs: ")
					subs[cosDesc][a], subs[cosName][a], subs[cosNameDesc][a] = desc, name, name+" "+desc
				}
				for k := range nCos {
					if k != cosFull && v.cos == "full" && v.extra != "cosmax" {
						continue
					}
					vs, err := m.Embed(ctx, subs[k])
					if err != nil {
						return nil, err
					}
					f.cos[k] = make([]float64, n)
					for a, sv := range vs {
						if u := unit32(sv); u != nil {
							f.cos[k][a] = dot32(q, u)
						}
					}
				}
			}
		}
		out = append(out, f)
	}
	return out, nil
}

// lexical is each skill's lexical match for query, as index.go computes
// it (the same sums in the same order), or a prototype formula.
//
// Kept whole: it mirrors index.go's sums in the same order, so the two can be
// read side by side.
func lexical(query string, texts []string, kind string) []float64 {
	n := len(texts)
	type doc struct {
		tf   map[string]float64
		ord  []string
		norm float64
		dl   float64
	}
	docs := make([]doc, n)
	df := map[string]float64{}
	avgdl := 0.0
	for d, tx := range texts {
		dc := doc{tf: map[string]float64{}}
		for _, t := range words.Tokens(tx) {
			if _, ok := dc.tf[t]; !ok {
				dc.ord = append(dc.ord, t)
				df[t]++
			}
			dc.tf[t]++
			dc.dl++
		}
		avgdl += dc.dl
		docs[d] = dc
	}
	avgdl /= float64(max(1, n))
	nf := float64(n)
	idf := func(t string) float64 { return math.Log(1 + nf/df[t]) }
	for d := range docs {
		sum := 0.0
		for _, t := range docs[d].ord {
			w := docs[d].tf[t] * idf(t)
			sum += w * w
		}
		docs[d].norm = math.Sqrt(sum)
	}
	// The query's distinct known terms, their weights, known and all.
	var qterms []string
	qw := map[string]float64{}
	unknown := map[string]bool{}
	known := 0.0
	for _, t := range words.Tokens(query) {
		if df[t] == 0 {
			unknown[t] = true
			continue
		}
		if _, ok := qw[t]; ok {
			qw[t] += idf(t)
			continue
		}
		known += idf(t)
		qterms = append(qterms, t)
		qw[t] = idf(t)
	}
	sum := 0.0
	for _, t := range qterms {
		sum += qw[t] * qw[t]
	}
	qnorm := math.Sqrt(sum)
	rare := math.Log(1 + float64(max(1, n)))
	all := known + float64(len(unknown))*rare
	const k1, b = 1.2, 0.75
	out := make([]float64, n)
	for d := range docs {
		dc := &docs[d]
		dotp, covered, bm := 0.0, 0.0, 0.0
		for _, t := range qterms {
			tf, ok := dc.tf[t]
			if !ok {
				continue
			}
			dotp += qw[t] * (tf * idf(t))
			covered += idf(t)
			bm += idf(t) * tf * (k1 + 1) / (tf + k1*(1-b+b*dc.dl/avgdl))
		}
		if covered == 0 {
			continue
		}
		cos := 0.0
		if qnorm != 0 && dc.norm != 0 {
			cos = clamp01(dotp / (qnorm * dc.norm))
		}
		bmn := bm / ((k1 + 1) * all)
		switch kind {
		case "bm25":
			out[d] = bmn
		case "covbm25":
			out[d] = 0.6*covered/all + 0.4*clamp01(bmn*(k1+1)/2)
		default:
			out[d] = 0.6*covered/all + 0.4*cos
		}
	}
	return out
}

func clamp01(x float64) float64 {
	if x < 0 || math.IsNaN(x) {
		return 0
	}
	return min(x, 1)
}

// unit32 and dot32 are routing's unitVector and dot.
func unit32(v []float64) []float32 {
	sum := 0.0
	for _, x := range v {
		sum += x * x
	}
	if len(v) == 0 || sum == 0 || math.IsNaN(sum) || math.IsInf(sum, 0) {
		return nil
	}
	n := 1 / math.Sqrt(sum)
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x * n)
	}
	return out
}

func dot32(a, b []float32) float64 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return float64((s0 + s1) + (s2 + s3))
}

func milli(x float64) int { return int(math.Round(x * 1000)) }

// cosOf is agent a's semantic cosine by the variant.
func cosOf(f *entryFeat, a int, v variant) float64 {
	switch v.cos {
	case "desc":
		return f.cos[cosDesc][a]
	case "namedesc":
		return f.cos[cosNameDesc][a]
	case "max":
		return max(f.cos[cosFull][a], f.cos[cosDesc][a], f.cos[cosName][a], f.cos[cosNameDesc][a])
	}
	return f.cos[cosFull][a]
}
