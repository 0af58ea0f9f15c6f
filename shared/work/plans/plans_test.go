package plans_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/work/plans"
)

var known = plans.Known{
	Skills:   map[string]bool{"luke/code_review": true, "wren/writing": true, "sage/security": true, "kyra/general": true, "dana/summaries": true},
	Reports:  []string{"research_summary"},
	Patterns: []string{"brainstorm"},
	Packs:    []string{"bridging", "memory"},
	Writers:  map[string]string{"research_summary": "dana"},
	Kinds:    map[string]string{"dana/summaries": "report:research_summary"},
}

func step(id int, target string, deps ...int) plans.Step {
	return plans.Step{StepID: id, Target: target, SubQuery: "do part", DependsOn: deps}
}

// The plan of the example: review, then release notes and a
// security check of their wording, the last two after the review.
func TestAValidPlanRunsInLayers(t *testing.T) {
	p := plans.ExecutionPlan{IsCompound: true, Steps: []plans.Step{
		step(1, "luke/code_review"), step(2, "wren/writing", 1), step(3, "sage/security", 1, 2),
	}}
	require.NoError(t, p.Validate(known))
	layers, err := plans.Layers(p.Steps)
	require.NoError(t, err)
	assert.Equal(t, [][]int{{1}, {2}, {3}}, layers)

	parallel := []plans.Step{step(1, "luke/code_review"), step(2, "sage/security"), step(3, "wren/writing", 1, 2)}
	layers, err = plans.Layers(parallel)
	require.NoError(t, err)
	assert.Equal(t, [][]int{{1, 2}, {3}}, layers, "independent steps share a layer")
}

// Every rule a plan must keep, at its boundary: MaxSteps steps pass and
// one more falls back; each refusal says why (the decision log's reason).
func TestInvalidPlansFallBackWithAReason(t *testing.T) {
	four := []plans.Step{step(1, "luke/code_review"), step(2, "wren/writing"), step(3, "sage/security"), step(4, "kyra/general", 1)}
	require.NoError(t, plans.ExecutionPlan{IsCompound: true, Steps: four}.Validate(known), "exactly the cap")
	for name, tc := range map[string]struct {
		plan plans.ExecutionPlan
		why  string
	}{
		"single intent": {plans.ExecutionPlan{IsCompound: false, Steps: four}, "single intent"},
		"one step":      {plans.ExecutionPlan{IsCompound: true, Steps: four[:1]}, "no plan"},
		"five steps":    {plans.ExecutionPlan{IsCompound: true, Steps: append(append([]plans.Step{}, four...), step(5, "luke/code_review"))}, "over the cap of 4"},
		"a cycle":       {plans.ExecutionPlan{IsCompound: true, Steps: []plans.Step{step(1, "luke/code_review", 2), step(2, "wren/writing", 1)}}, "cycle"},
		"self":          {plans.ExecutionPlan{IsCompound: true, Steps: []plans.Step{step(1, "luke/code_review", 1), step(2, "wren/writing")}}, "depends on itself"},
		"missing dep":   {plans.ExecutionPlan{IsCompound: true, Steps: []plans.Step{step(1, "luke/code_review", 9), step(2, "wren/writing")}}, "does not have"},
		"duplicate id":  {plans.ExecutionPlan{IsCompound: true, Steps: []plans.Step{step(1, "luke/code_review"), step(1, "wren/writing")}}, "twice"},
		"unknown skill": {plans.ExecutionPlan{IsCompound: true, Steps: []plans.Step{step(1, "luke/poetry"), step(2, "wren/writing")}}, "has no skill"},
		"other agent's skill": {plans.ExecutionPlan{IsCompound: true, Steps: []plans.Step{step(1, "wren/code_review"), step(2, "wren/writing")}},
			"has no skill"},
		"inside a skill": {plans.ExecutionPlan{IsCompound: true, Steps: []plans.Step{step(1, "luke/code_review/lint"), step(2, "wren/writing")}}, "inside a skill"},
		"bad target":     {plans.ExecutionPlan{IsCompound: true, Steps: []plans.Step{step(1, "luke"), step(2, "wren/writing")}}, "is not agent/skill"},
		"unknown report": {plans.ExecutionPlan{IsCompound: true, Steps: []plans.Step{step(1, "report:poem"), step(2, "wren/writing")}}, "report type"},
		"a session": {plans.ExecutionPlan{IsCompound: true, Steps: []plans.Step{step(1, "session:brainstorm"), step(2, "wren/writing")}},
			"not a plan step"},
		"a report nobody writes": {plans.ExecutionPlan{IsCompound: true, Steps: []plans.Step{step(1, "report:code_review"), step(2, "wren/writing")}},
			"has no writer"},
		"unknown pack": {plans.ExecutionPlan{IsCompound: true, Steps: []plans.Step{{StepID: 1, Target: "luke/code_review", SubQuery: "x", ToolPacks: []string{"email"}},
			step(2, "wren/writing")}}, "tool pack"},
		"empty sub_query": {plans.ExecutionPlan{IsCompound: true, Steps: []plans.Step{{StepID: 1, Target: "luke/code_review"}, step(2, "wren/writing")}},
			"no sub_query"},
	} {
		t.Run(name, func(t *testing.T) {
			err := tc.plan.Validate(known)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.why)
		})
	}
	ok := plans.ExecutionPlan{IsCompound: true, Steps: []plans.Step{step(1, "report:research_summary"), step(2, "wren/writing", 1)}}
	assert.NoError(t, ok.Validate(known), "a report some skill writes is a step target")
}

func TestTheBridgeHandsOnPredecessorsResults(t *testing.T) {
	results := map[int]plans.Result{
		1: {Response: "three bugs found", Data: map[string]string{"findings": "nil deref; race; leak"}},
		2: {Response: "x"},
	}
	s := plans.Step{StepID: 3, DependsOn: []int{1}, ContextKeys: []string{"findings", "absent"}}
	assert.Equal(t, map[string]string{"prior_step_1_response": "three bugs found", "step_1_findings": "nil deref; race; leak"},
		plans.Bridge(s, results, 100), "only its own dependencies, and only keys they have")
	clipped := plans.Bridge(s, results, 5)
	assert.Equal(t, "thre…", clipped["prior_step_1_response"], "clipped to fit the step's budget, the marker included (shared/platform/clip)")
}

func TestAFailedStepTakesItsDependantsWithIt(t *testing.T) {
	steps := []plans.Step{step(1, "a/b"), step(2, "a/b", 1), step(3, "a/b", 2), step(4, "a/b")}
	assert.Equal(t, []int{2, 3}, plans.Dependants(steps, 1))
	assert.Empty(t, plans.Dependants(steps, 4))
}

// Single intents skip the planner; sequencing words or confident skills
// of two agents ask it.
func TestTheTrigger(t *testing.T) {
	for msg, want := range map[string]bool{
		"Can you review this Go function for bugs?":                          false,
		"If the build fails then tell me why":                                false,
		"Review this handler for bugs, then write release notes for the fix": true,
		"Review the handler and then check it for security issues":           true,
		"First summarize the incident, then draft the customer email":        true,
		"Draft the migration plan; after that estimate the cost":             true,
		"Analyze the churn numbers, followed by a one-page summary":          true,
		"Fix the race once that's done ping the team":                        true,
	} {
		got, why := plans.Trigger(msg, nil, 0.6)
		assert.Equal(t, want, got, msg)
		assert.Equal(t, want, why != "", msg)
	}
	scores := []plans.Confident{{"luke", 0.7}, {"luke", 0.65}, {"sage", 0.59}}
	got, _ := plans.Trigger("review this for bugs and security", scores, 0.6)
	assert.False(t, got, "one agent above the threshold (sage at 0.59 is under it)")
	scores[2].Score = 0.6
	got, why := plans.Trigger("review this for bugs and security", scores, 0.6)
	assert.True(t, got, "two agents at or above the threshold")
	assert.Contains(t, why, "luke, sage")
}

// A report step is resolved to its writer: report:<type> to the agent of
// the team's skill of that kind, and a skill of kind report:<type> to
// its own agent, as a report; a chat skill stays a chat step.
func TestReportStepsAreResolvedToTheirWriter(t *testing.T) {
	p := plans.ExecutionPlan{IsCompound: true, Steps: []plans.Step{step(1, "report:research_summary"), step(2, "dana/summaries"), step(3, "wren/writing", 1, 2)}}
	require.NoError(t, p.Validate(known))
	known.Resolve(&p)
	got := plans.Resolved(p)
	assert.Equal(t, [][2]string{{"dana", "research_summary"}, {"dana", "research_summary"}, {"wren", ""}}, got)
}
