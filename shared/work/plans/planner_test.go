package plans_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/testkit/memstore"
	"github.com/conclave-ai/conclave/shared/wire/localmodelwiring"
	"github.com/conclave-ai/conclave/shared/work/plans"
)

func ask(t *testing.T, message string) (models.Request, models.Response) {
	t.Helper()
	req := plans.PlannerRequest("team_x", "conv_x", message, "amazon.nova-micro-v1:0",
		[]plans.Skill{{Target: "luke/code_review", Description: "find bugs"}, {Target: "wren/writing", Description: "release notes"}}, known)
	resp, err := localmodelwiring.New(memstore.New()).Converse(context.Background(), req)
	require.NoError(t, err)
	return req, resp
}

// The planner's request offers one tool whose schema caps the steps, and
// names every target; the local model's plan is the marked JSON.
func TestThePlannerRoundTrip(t *testing.T) {
	req, resp := ask(t, `Review the handler, then write release notes [[plan]]{"is_compound":true,"reasoning":"two skills",
		"steps":[{"step_id":1,"target":"luke/code_review","sub_query":"Review the handler","depends_on":[]},
		{"step_id":2,"target":"wren/writing","sub_query":"Write release notes","depends_on":[1],"context_keys":["summary"]}]}[[/plan]]`)
	require.Len(t, req.Tools, 1)
	assert.Equal(t, plans.ToolName, req.Tools[0].Name)
	assert.Contains(t, req.System, "luke/code_review: find bugs")
	assert.Contains(t, req.System, "report:<type>")
	assert.Empty(t, req.Metadata[models.MetadataAgent], "the planner's call is the system's")
	p, err := plans.ParsePlan(resp)
	require.NoError(t, err)
	require.NoError(t, p.Validate(known))
	assert.Equal(t, []int{1}, p.Steps[1].DependsOn)

	_, single := ask(t, "Review the handler for bugs")
	p, err = plans.ParsePlan(single)
	require.NoError(t, err)
	assert.False(t, p.IsCompound)

	_, garbage := ask(t, "x [[plan]]{not json[[/plan]]")
	_, err = plans.ParsePlan(garbage)
	assert.ErrorIs(t, err, plans.ErrInvalidPlan)
	_, unknown := ask(t, `x [[plan]]{"is_compound":true,"steps":[],"reasoning":"r","extra":1}[[/plan]]`)
	_, err = plans.ParsePlan(unknown)
	assert.ErrorIs(t, err, plans.ErrInvalidPlan, "unknown fields are refused")
	_, err = plans.ParsePlan(models.Response{Text: "no tool"})
	assert.ErrorIs(t, err, plans.ErrInvalidPlan)
}
