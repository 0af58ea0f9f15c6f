package localmodel_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/models/localmodel"
	"github.com/conclave-ai/conclave/shared/testkit/demo"
	"github.com/conclave-ai/conclave/shared/work/plans"
)

// demoSkills are the demo team's skills as the planner's prompt lists
// them, and what a plan of them may name.
func demoSkills() ([]plans.Skill, plans.Known) {
	var skills []plans.Skill
	known := plans.Known{Skills: map[string]bool{}}
	for _, a := range demo.Agents {
		for _, s := range a.Skills {
			skills = append(skills, plans.Skill{Target: a.Slug + "/" + s.Name, Description: s.Description})
			known.Skills[a.Slug+"/"+s.Name] = true
		}
	}
	return skills, known
}

// planFor is the local model's answer to the planner's request for
// message, as shared/work/plans reads it.
func planFor(t *testing.T, message string) (plans.ExecutionPlan, plans.Known) {
	t.Helper()
	skills, known := demoSkills()
	req := plans.PlannerRequest("t", "conv", message, "amazon.nova-micro-v1:0", skills, known)
	resp, err := localmodel.New(nil).Converse(context.Background(), req)
	require.NoError(t, err)
	p, err := plans.ParsePlan(resp)
	require.NoError(t, err, "the answer is always a plan the planner can read")
	return p, known
}

// A message of clauses in sequence plans one step per clause, each the
// skill sharing the most words with it, each after the one before.
func TestTheLocalModelPlansTheClausesOfASequencedMessage(t *testing.T) {
	type step struct {
		target, subQuery string
		dependsOn        []int
	}
	for _, tc := range []struct {
		name, message string
		steps         []step
	}{
		{"X, then Y", "Review this handler for bugs, then write release notes for the fix", []step{
			{"luke/code-review", "Review this handler for bugs", []int{}},
			{"wren/writing", "write release notes for the fix", []int{1}}}},
		{"first X and then Y", "First analyze the churn metrics and then write an email about the trends", []step{
			{"dana/data-analysis", "analyze the churn metrics", []int{}},
			{"wren/writing", "write an email about the trends", []int{1}}}},
		{"three clauses: a chain", "Design the billing API; after that review it for vulnerabilities, and finally draft the blog post", []step{
			{"archie/architecture", "Design the billing API", []int{}},
			{"sage/security-review", "review it for vulnerabilities", []int{1}},
			{"wren/writing", "draft the blog post", []int{2}}}},
		{"a clause sharing no word joins the step before", "Review this handler for bugs, then wait a moment, then write release notes", []step{
			{"luke/code-review", "Review this handler for bugs, then wait a moment", []int{}},
			{"wren/writing", "write release notes", []int{1}}}},
		{"one before every step joins the first", "Wait a moment, then review this handler for bugs; after that write release notes", []step{
			{"luke/code-review", "Wait a moment, then review this handler for bugs", []int{}},
			{"wren/writing", "write release notes", []int{1}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, known := planFor(t, tc.message)
			require.True(t, p.IsCompound, p.Reasoning)
			require.Len(t, p.Steps, len(tc.steps))
			for i, want := range tc.steps {
				got := p.Steps[i]
				assert.Equal(t, i+1, got.StepID)
				assert.Equal(t, want.target, got.Target, "step %d", i+1)
				assert.Equal(t, want.subQuery, got.SubQuery, "step %d", i+1)
				assert.Equal(t, want.dependsOn, got.DependsOn, "step %d", i+1)
			}
			assert.NoError(t, p.Validate(known), "a plan the planner's rules accept")
		})
	}
}

// Without sequencing words, or with fewer than two clauses that find a
// skill, the local model answers a single intent; a marked plan wins over
// the clauses.
func TestTheLocalModelPlansOnlyWhatIsSequenced(t *testing.T) {
	for name, message := range map[string]string{
		"no sequencing word":              "Review this handler for bugs and write release notes for the fix",
		"one clause matching nothing":     "Review this handler for bugs, then go home",
		"no clause matching anything":     "And after that?",
		"sequenced, with one clause only": "Review this handler for bugs; ",
	} {
		p, _ := planFor(t, message)
		assert.False(t, p.IsCompound, name)
		assert.Empty(t, p.Steps, name)
	}

	p, _ := planFor(t, `Review this handler for bugs, then write release notes [[plan]]{"is_compound":true,"reasoning":"marked",
		"steps":[{"step_id":1,"target":"sage/security-review","sub_query":"a","depends_on":[]},{"step_id":2,"target":"luke/code-review","sub_query":"b","depends_on":[]}]}[[/plan]]`)
	assert.Equal(t, "marked", p.Reasoning, "the marker wins")
	require.Len(t, p.Steps, 2)
	assert.Equal(t, "sage/security-review", p.Steps[0].Target)
}
