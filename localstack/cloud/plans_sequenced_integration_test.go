//go:build integration

package cloud_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/localstack/cloud"
	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/platform/manifest"
	"github.com/conclave-ai/conclave/shared/platform/settings"
	"github.com/conclave-ai/conclave/shared/routing/cascade"
	"github.com/conclave-ai/conclave/shared/wire/conversationsfn"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// stateMachineARNs are the local cloud's state machines by manifest name
// (STATE_MACHINE_ARNS), read from Step Functions.
func stateMachineARNs(t *testing.T, e env) map[string]string {
	t.Helper()
	out, err := sfn.NewFromConfig(e.cfg).ListStateMachines(context.Background(), &sfn.ListStateMachinesInput{})
	require.NoError(t, err)
	arns := map[string]string{}
	for _, sm := range manifest.StateMachines {
		for _, got := range out.StateMachines {
			if aws.ToString(got.Name) == e.names.StateMachine(sm.Name) {
				arns[sm.Name] = aws.ToString(got.StateMachineArn)
			}
		}
	}
	require.Contains(t, arns, workflow.PlanMachine, "the plan machine is provisioned")
	return arns
}

// A message whose clauses follow one another plans without a marker: the
// conversations function's own wiring (the local cloud's flags, the local
// model as the tier-0 planner) asks the planner, which gives each clause
// the demo team's skill sharing the most words with it. The plan starts
// with a code review, then the writing that depends on it, and runs to
// the end on the plan machine.
func TestASequencedMessagePlansWithoutAMarker(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	ctx := context.Background()
	vars := map[string]string{settings.EnvStage: e.names.Stage, settings.EnvTable: e.names.Table(), settings.EnvBus: e.names.Bus(),
		settings.EnvFlags: cloud.LocalFlags, settings.EnvFunctions: "expert-gate=" + e.names.Function("expert-gate"),
		settings.EnvStateMachines: settings.EncodePairs(stateMachineARNs(t, e)), settings.EnvModelProvider: "local"}
	deps := lambdafn.Deps{Config: settings.FromLookup(func(k string) string { return vars[k] }), AWS: e.cfg, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	cfg, err := conversationsfn.Config(deps, e.db.core)
	require.NoError(t, err)
	require.NotNil(t, cfg.Planner, "the local cloud's flags wire the compound planner")
	chat := conversations.MustNew(cfg)

	conv := d.conversation("kyra")
	res, err := chat.Post(ctx, d.id, conv, conversations.PostInput{Content: "Review this handler for bugs, then write release notes for the fix"})
	require.NoError(t, err)
	planner := res.Routing.Planner
	require.NotNil(t, planner, "sequencing words ask the planner")
	require.Equal(t, cascade.PlannerPlanned, planner.Outcome, "%+v", planner)
	assert.Equal(t, 2, planner.Steps)
	require.NotEmpty(t, res.Replies)
	reply := res.Replies[len(res.Replies)-1]
	assert.Equal(t, "kyra", reply.Agent, "the lead's note")
	require.Len(t, reply.Pending, 1)
	assert.Equal(t, conversations.WorkRef{Type: "plan", ID: planner.PlanID, Status: "running", Agent: "kyra"}, reply.Pending[0])

	st, p := d.call("GET", "/v1/plans/"+planner.PlanID, nil)
	require.Equal(t, 200, st, p)
	steps := p["steps"].([]any)
	require.Len(t, steps, 2, "one step per clause")
	first, second := steps[0].(map[string]any), steps[1].(map[string]any)
	assert.Equal(t, "luke/code-review", first["target"])
	assert.Equal(t, "Review this handler for bugs", first["sub_query"])
	assert.Empty(t, first["depends_on"])
	assert.Equal(t, "wren/writing", second["target"])
	assert.Equal(t, "write release notes for the fix", second["sub_query"])
	assert.Equal(t, []any{float64(1)}, second["depends_on"], "the writing comes after the review")

	p = d.waitPlan(planner.PlanID, 120*time.Second)
	assert.Equal(t, "completed", p["status"], p)
}

// The same message through the local API, as `make run` serves it: the
// conversations function on the local cloud, its model the Bedrock
// adapter answered by the edge's local model.
func TestASequencedMessagePlansThroughTheAPI(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	turn := d.post(d.conversation("kyra"), map[string]any{"content": "Review this handler for bugs, then write release notes for the fix"})
	id := pendingPlan(t, turn)
	st, p := d.call("GET", "/v1/plans/"+id, nil)
	require.Equal(t, 200, st, p)
	steps := p["steps"].([]any)
	require.Len(t, steps, 2, "one step per clause")
	assert.Equal(t, "luke/code-review", steps[0].(map[string]any)["target"])
	assert.Equal(t, "wren/writing", steps[1].(map[string]any)["target"])
}
