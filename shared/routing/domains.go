package routing

import (
	"slices"
	"strings"
)

// Two-stage selection (seed 003, phase 9): in a team of many skills, the
// semantic signal scores the domains first (the centroid of their skills'
// vectors) and then only the skills of the nearest domains (scoreSemantic);
// every other skill counts on its words alone. A skill's domain is the
// first of its declared domains; skills that declare none form one group
// that is always a candidate (a team that declares no domains is scored
// in one stage, whatever its size).
const (
	// TwoStageSkills: an index with more skills than this (and with
	// declared domains) selects in two stages. Below it, every skill's
	// cosine costs at most about 20 µs.
	TwoStageSkills = 128
	// The skills of the MinDomainsProbed nearest domains are scored, and
	// of up to DomainsProbed when a domain's centroid is within
	// DomainMargin of the nearest's similarity (a question between two
	// subjects). On 1,000 agents in 25 domains, two domains agreed with
	// full scoring on every query of the test, at two thirds of four
	// domains' time.
	MinDomainsProbed = 2
	DomainsProbed    = 4
	DomainMargin     = 0.05
	// ExampleSkillsProbed: of the candidates of the nearest domains, the
	// skills with examples compared example by example (nearestExamples:
	// a cosine per example) are the ExampleSkillsProbed whose examples'
	// centroid is nearest the message; the others count on their words,
	// as the skills of the domains not probed do. At 1,000 agents with 20
	// examples a skill, two domains' 160 skills were 3,200 cosines a
	// message; 160 centroids and 8 skills' examples are 320 (the best
	// match agreed on 115 of 116 queries at 8 and 16, 116 at 24).
	ExampleSkillsProbed = 8
)

// buildDomains groups the skills by domain and computes each domain's
// centroid (after SetEmbeddings).
func (ix *Index) buildDomains() {
	ix.domainNames, ix.docDomain, ix.domainDocs, ix.domainStart, ix.centroids, ix.undomained = nil, nil, nil, nil, nil, -1
	ix.exCentroids = nil
	if len(ix.docs) <= TwoStageSkills || ix.vecs == nil {
		return
	}
	ids := map[string]int32{}
	ix.docDomain = make([]int32, len(ix.docs))
	var count []int32
	for d, doc := range ix.docs {
		g, ok := ids[doc.domain]
		if !ok {
			g = int32(len(ix.domainNames))
			ids[doc.domain] = g
			ix.domainNames = append(ix.domainNames, doc.domain)
			count = append(count, 0)
			if doc.domain == "" {
				ix.undomained = g
			}
		}
		ix.docDomain[d] = g
		count[g]++
	}
	if len(ix.domainNames) < 2 {
		ix.domainNames, ix.docDomain, ix.undomained = nil, nil, -1 // nothing to choose between
		return
	}
	ix.domainStart = make([]int32, len(count)+1)
	for g, c := range count {
		ix.domainStart[g+1] = ix.domainStart[g] + c
	}
	next := slices.Clone(ix.domainStart[:len(count)])
	ix.domainDocs = make([]int32, len(ix.docs))
	sums := make([]float64, len(count)*ix.dim)
	for d := range ix.docs {
		g := ix.docDomain[d]
		ix.domainDocs[next[g]] = int32(d)
		next[g]++
		v := ix.vec(int32(d))
		for i, x := range v {
			sums[int(g)*ix.dim+i] += float64(x)
		}
	}
	ix.centroids = make([]float32, 0, len(sums))
	for g := range count {
		u := unitVector(sums[g*ix.dim:(g+1)*ix.dim], ix.dim)
		if u == nil {
			u = make([]float32, ix.dim)
		}
		ix.centroids = append(ix.centroids, u...)
	}
	ix.buildExampleCentroids()
}

// buildExampleCentroids computes each skill's examples' unit centroid
// (none when no skill has examples).
func (ix *Index) buildExampleCentroids() {
	ix.exCentroids = nil
	if ix.exStart == nil || ix.exStart[len(ix.docs)] == 0 {
		return
	}
	base := int32(len(ix.docs))
	ix.exCentroids = make([]float32, len(ix.docs)*ix.dim)
	sum := make([]float64, ix.dim)
	for d := range int32(len(ix.docs)) {
		lo, hi := ix.exStart[d], ix.exStart[d+1]
		if lo == hi {
			continue
		}
		clear(sum)
		for j := lo; j < hi; j++ {
			for i, x := range ix.vec(base + j) {
				sum[i] += float64(x)
			}
		}
		if u := unitVector(sum, ix.dim); u != nil {
			copy(ix.exCentroids[int(d)*ix.dim:], u)
		}
	}
}

// mergeDomains appends to out the skills of the domains gs, sorted: each
// domain's are (buildDomains adds them in skill order) and no skill is in
// two, so a merge of the few lists gives what sorting them together would,
// in a fifth of the time at 1,000 agents (two domains' 200 skills).
func (ix *Index) mergeDomains(gs []int32, out []int32) []int32 {
	var heads, ends [DomainsProbed + 1]int32 // the nearest domains, and the skills without one
	runs := heads[:0]
	for _, g := range gs {
		if ix.domainStart[g] < ix.domainStart[g+1] && len(runs) < len(heads) {
			ends[len(runs)] = ix.domainStart[g+1]
			runs = append(runs, ix.domainStart[g])
		} else if len(runs) == len(heads) { // more lists than a query probes: sort them
			return ix.sortDomains(gs, out)
		}
	}
	for len(runs) > 0 {
		k := 0
		for i := 1; i < len(runs); i++ {
			if ix.domainDocs[runs[i]] < ix.domainDocs[runs[k]] {
				k = i
			}
		}
		out = append(out, ix.domainDocs[runs[k]])
		if runs[k]++; runs[k] == ends[k] {
			last := len(runs) - 1
			runs[k], ends[k] = runs[last], ends[last]
			runs = runs[:last]
		}
	}
	return out
}

// sortDomains is mergeDomains by a sort.
func (ix *Index) sortDomains(gs []int32, out []int32) []int32 {
	start := len(out)
	for _, g := range gs {
		out = append(out, ix.domainDocs[ix.domainStart[g]:ix.domainStart[g+1]]...)
	}
	slices.Sort(out[start:])
	return out
}

// preselectExamples keeps, of the candidates cands (sorted), every skill
// without examples and the ExampleSkillsProbed with examples whose
// centroid is nearest v (through its tokens when qs is not nil); cands
// stays sorted.
func (ix *Index) preselectExamples(v []float32, qs *querySims, cands []int32) []int32 {
	if ix.exCentroids == nil {
		return cands
	}
	type near struct {
		d   int32
		sim float64
	}
	var best [ExampleSkillsProbed]near
	var sims []float64
	if qs != nil {
		sims = qs.sums(cands, len(ix.domainNames))
	}
	n, out := 0, cands[:0]
	for i, d := range cands {
		if ix.exStart[d] == ix.exStart[d+1] {
			out = append(out, d)
			continue
		}
		var s float64
		if sims != nil {
			s = sims[i]
		} else {
			s = dot(v, ix.exCentroids[int(d)*ix.dim:int(d+1)*ix.dim])
		}
		if n < len(best) {
			best[n] = near{d, s}
			n++
		} else if s > best[n-1].sim {
			best[n-1] = near{d, s}
		} else {
			continue
		}
		for i := n - 1; i > 0 && best[i].sim > best[i-1].sim; i-- {
			best[i], best[i-1] = best[i-1], best[i]
		}
	}
	for _, b := range best[:n] {
		out = append(out, b.d)
	}
	slices.Sort(out)
	return out
}

// twoStage reports whether the index selects in two stages.
func (ix *Index) twoStage() bool { return ix.domainNames != nil }

// nearestDomains appends to out the domains whose centroids are nearest v
// (through its tokens when qs is not nil; MinDomainsProbed, and up to DomainsProbed within DomainMargin of the
// nearest), and the group of skills without a domain.
func (ix *Index) nearestDomains(v []float32, qs *querySims, out []int32) []int32 {
	type near struct {
		g   int32
		sim float64
	}
	var best [DomainsProbed]near
	n := 0
	for g := range int32(len(ix.domainNames)) {
		if g == ix.undomained {
			continue
		}
		var s float64
		if qs != nil {
			s = qs.at(int(g))
		} else {
			s = dot(v, ix.centroids[int(g)*ix.dim:int(g+1)*ix.dim])
		}
		if n < DomainsProbed {
			best[n] = near{g, s}
			n++
		} else if s > best[n-1].sim { // a tie (>=) swaps two domains as near: harmless
			best[n-1] = near{g, s}
		} else {
			continue
		}
		// Equally near domains in either order (>=) are kept alike.
		for i := n - 1; i > 0 && best[i].sim > best[i-1].sim; i-- {
			best[i], best[i-1] = best[i-1], best[i]
		}
	}
	for i, b := range best[:n] {
		// < or <= DomainMargin: an epsilon of a float32 cosine apart.
		if i >= MinDomainsProbed && b.sim < best[0].sim-DomainMargin {
			break
		}
		out = append(out, b.g)
	}
	if ix.undomained >= 0 {
		out = append(out, ix.undomained)
	}
	return out
}

// domainOf is the domain a skill is grouped by: its first declared
// domain, lower-cased.
func domainOf(domains []string) string {
	if len(domains) == 0 {
		return ""
	}
	return strings.ToLower(strings.TrimSpace(domains[0]))
}
