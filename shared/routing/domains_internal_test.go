package routing

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/team/agents"
)

// domainIndex is an index of n skills, one an agent, the first without a
// domain when undomained is set and the others spread over domains in
// turn; every skill of a domain has the vector of that domain, whose
// similarity to (1, 0) is sims[domain], and a skill without a domain is
// opposite (1, 0).
func domainIndex(t *testing.T, n int, undomained bool, sims map[string]float64) *Index {
	t.Helper()
	var names []string
	for d := range sims {
		names = append(names, d)
	}
	var team []agents.Agent
	var vecs [][]float64
	for i := range n {
		s := agents.Skill{Name: fmt.Sprintf("skill-%d", i), Description: "work"}
		v := []float64{-1, 0}
		if !undomained || i > 0 {
			d := names[i%len(names)]
			s.Domains = []string{d}
			v = []float64{sims[d], math.Sqrt(1 - sims[d]*sims[d])}
		}
		team = append(team, agents.Agent{Slug: fmt.Sprintf("a%d", i), Skills: []agents.Skill{s}})
		vecs = append(vecs, v)
	}
	ix := BuildIndex(team)
	require.NoError(t, ix.SetEmbeddings(vecs, DefaultSemanticCalibration))
	return ix
}

// probed names the domains ix scores for a query of vector (1, 0), in
// order ("" for the skills without a domain).
func probed(ix *Index) []string {
	var out []string
	for _, g := range ix.nearestDomains([]float32{1, 0}, nil, nil) {
		out = append(out, ix.domainNames[g])
	}
	return out
}

// An index selects in two stages from one skill over TwoStageSkills, and
// only with two domains or more to choose between (the skills without a
// domain count as one).
func TestTwoStageStartsAboveTwoStageSkillsWithTwoDomains(t *testing.T) {
	two := map[string]float64{"code": 1, "data": 0}
	assert.False(t, domainIndex(t, TwoStageSkills, false, two).twoStage(), "exactly TwoStageSkills")
	assert.True(t, domainIndex(t, TwoStageSkills+1, false, two).twoStage(), "one more")
	assert.False(t, domainIndex(t, TwoStageSkills+1, false, map[string]float64{"code": 1}).twoStage(), "one domain")
	assert.True(t, domainIndex(t, TwoStageSkills+1, true, map[string]float64{"code": 1}).twoStage(), "one domain and skills without")
}

// The MinDomainsProbed nearest domains are always scored, more up to
// DomainsProbed while within DomainMargin of the nearest, and the skills
// without a domain always, however far.
func TestTheNearestDomainsAndTheSkillsWithoutOneAreScored(t *testing.T) {
	far := domainIndex(t, 2*TwoStageSkills, true, map[string]float64{"a": 1, "b": 0.9, "c": 0.8, "d": 0.7, "e": 0.6})
	require.Equal(t, "", far.domainNames[0], "the first skill has no domain")
	assert.Equal(t, []string{"a", "b", ""}, probed(far), "two, however far the second")

	near := domainIndex(t, 2*TwoStageSkills, true, map[string]float64{"a": 1, "b": 0.99, "c": 0.98, "d": 0.97, "e": 0.96})
	assert.Equal(t, []string{"a", "b", "c", "d", ""}, probed(near), "four at most")

	third := domainIndex(t, 2*TwoStageSkills, false, map[string]float64{"a": 1, "b": 0.99, "c": 0.97, "d": 0.9})
	assert.Equal(t, []string{"a", "b", "c"}, probed(third), "the third within the margin, the fourth not")
}
