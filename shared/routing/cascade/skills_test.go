package cascade_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/routing/cascade"
)

// The plan names the skill that chose each selected agent: its best
// match when the gate selected it, none when continuity kept the current
// agent or the selection fell back.
func TestThePlanNamesTheChosenSkill(t *testing.T) {
	with := func(s routing.ExpertScore, skills ...string) routing.ExpertScore {
		s.MatchingSkills = skills
		return s
	}
	route := func(scores []routing.ExpertScore, current string) cascade.Plan {
		t.Helper()
		r := &cascade.Router{Gate: &gate{scores: scores}, Flags: cascade.Flags{Collaboration: true, ExpertGate: true, Ensemble: true}}
		req := request("Can you review this function for bugs?")
		req.CurrentAgent = current
		p, err := r.Route(context.Background(), req)
		require.NoError(t, err)
		return p
	}
	p := route([]routing.ExpertScore{with(sc("luke", 0.9), "code-review", "debugging"), with(sc("dana", 0.3), "data-analysis")}, "")
	assert.Equal(t, map[string]string{"luke": "code-review"}, p.Skills, "the selected agent's best match")

	p = route([]routing.ExpertScore{with(sc("dana", 0.7), "data-analysis"), with(sc("luke", 0.65), "code-review")}, "luke")
	require.Equal(t, routing.ReasonCurrent, p.Decision().Reason)
	assert.Empty(t, p.Skills, "continuity chose it")

	p = route([]routing.ExpertScore{with(sc("luke", 0.1), "code-review")}, "")
	require.True(t, p.Decision().Fallback)
	assert.Empty(t, p.Skills, "a fallback")
}
