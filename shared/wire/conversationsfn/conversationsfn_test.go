package conversationsfn_test

import (
	"io"
	"log/slog"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/platform/settings"
	"github.com/conclave-ai/conclave/shared/routing/chooser"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/wire/conversationsfn"
	"github.com/conclave-ai/conclave/shared/work/plans"
)

// service builds the function's chat service from an environment whose
// FEATURE_FLAGS is flags, as its cold start does (nothing is called).
func service(t *testing.T, flags string) (settings.Config, func(agents.Agent) []string) {
	t.Helper()
	env := map[string]string{settings.EnvStage: "test", settings.EnvTable: "t", settings.EnvBus: "b", settings.EnvFlags: flags,
		settings.EnvStateMachines: "delegation=arn:aws:states:us-east-1:1:stateMachine:d", settings.EnvFunctions: "expert-gate=conclave-test-expert-gate",
		settings.EnvModelProvider: "local"}
	cfg := settings.FromLookup(func(k string) string { return env[k] })
	d := lambdafn.Deps{Config: cfg, AWS: aws.Config{Region: "us-east-1"}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	chat, err := conversationsfn.Config(d, dynamo.FromConfig(d.AWS, cfg.TableName))
	require.NoError(t, err)
	require.NotNil(t, chat.Tools, "the chat's agents have tools")
	return cfg, func(a agents.Agent) []string {
		var out []string
		for _, s := range chat.Tools.Specs(a) {
			out = append(out, s.Name)
		}
		return out
	}
}

// The flags reach the chat's tools the way a deployed function reads
// them: FEATURE_FLAGS → settings → the function's wiring → the tools an
// agent answering in a chat is offered.
func TestTheFeatureFlagsDecideTheChatTools(t *testing.T) {
	kyra := agents.Agent{Slug: "kyra"}
	luke := agents.Agent{Slug: "luke", Skills: []agents.Skill{{Name: "code-review", Tools: []string{"search_memories"}}}}
	collaboration := []string{"send_agent_message", "get_agent_inbox", "handoff_to", "consult_specialist", "consultation_follow_up", "close_consultation", "read_consultation", "find_colleagues", "request_tool_pack"}
	delegation := []string{"delegate_task", "check_task_status", "next_task", "request_report", "get_report"}
	for _, c := range []struct {
		name, flags string
		kyra        []string
	}{
		{"every flag on", "collaboration=true,expert_gate=true,ensemble=true,task_delegation=true,sessions=true",
			append([]string{"delegate_task", "check_task_status", "next_task", "request_report", "get_report", "start_collaboration"}, collaboration...)},
		{"sessions off", "collaboration=true,expert_gate=true,ensemble=true,task_delegation=true,sessions=false",
			append(append([]string{}, delegation...), collaboration...)},
		{"task_delegation off (sessions need it)", "collaboration=true,expert_gate=true,ensemble=true,task_delegation=false,sessions=true", collaboration},
		{"collaboration off", "collaboration=false,expert_gate=true,ensemble=true,task_delegation=true,sessions=true", nil},
		{"no flags", "", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, offered := service(t, c.flags)
			assert.Equal(t, c.kyra, offered(kyra))
			if cfg.Flags.On(settings.FlagCollaboration) {
				assert.Contains(t, offered(luke), "search_memories", "a declared tool, behind its flag")
				assert.NotContains(t, offered(kyra), "search_memories", "only for agents that declare it")
			} else {
				assert.Empty(t, offered(luke), "collaboration off: no tool at all, declared ones included")
			}
		})
	}
}

// router_model reaches the chat's router as the other routing flags do,
// with the tier-0 model of MODEL_TIERS; it needs the gate.
func TestTheRouterModelFlagReachesTheRouter(t *testing.T) {
	for _, c := range []struct {
		name, flags string
		on          bool
	}{
		{"on", "collaboration=true,expert_gate=true,router_model=true", true},
		{"gate off", "collaboration=true,expert_gate=false,router_model=true", false},
		{"off", "collaboration=true,expert_gate=true,router_model=false", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := map[string]string{settings.EnvStage: "test", settings.EnvTable: "t", settings.EnvBus: "b", settings.EnvFlags: c.flags,
				settings.EnvModelTiers: "tier_0=tiny-0,tier_1=mid,tier_2=big", settings.EnvFunctions: "expert-gate=conclave-test-expert-gate",
				settings.EnvModelProvider: "local"}
			cfg := settings.FromLookup(func(k string) string { return env[k] })
			d := lambdafn.Deps{Config: cfg, AWS: aws.Config{Region: "us-east-1"}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
			chat, err := conversationsfn.Config(d, dynamo.FromConfig(d.AWS, cfg.TableName))
			require.NoError(t, err)
			r := chat.Router
			require.NotNil(t, r)
			assert.Equal(t, c.on, r.Flags.RouterModel)
			if !c.on {
				assert.Nil(t, r.Chooser)
				return
			}
			ch, ok := r.Chooser.(*chooser.Chooser)
			require.True(t, ok, "%T", r.Chooser)
			assert.Equal(t, "tiny-0", ch.ModelID)
		})
	}
}

// The planner is part of collaboration (seed 000: collaboration off is
// direct dispatch) and its steps are executed tasks (task_delegation):
// the function's own wiring builds none without both flags, so no message
// is sent to the tier-0 planner or fanned out into a plan.
func TestThePlannerNeedsCollaboration(t *testing.T) {
	for _, c := range []struct {
		flags string
		on    bool
	}{
		{"collaboration=true,expert_gate=true,task_delegation=true", true},
		{"collaboration=false,expert_gate=true,task_delegation=true", false},
		{"collaboration=true,expert_gate=true,task_delegation=false", false},
		{"", false},
	} {
		env := map[string]string{settings.EnvStage: "test", settings.EnvTable: "t", settings.EnvBus: "b", settings.EnvFlags: c.flags,
			settings.EnvStateMachines: "plan=arn:aws:states:us-east-1:1:stateMachine:p", settings.EnvFunctions: "expert-gate=conclave-test-expert-gate",
			settings.EnvModelProvider: "local"}
		cfg := settings.FromLookup(func(k string) string { return env[k] })
		d := lambdafn.Deps{Config: cfg, AWS: aws.Config{Region: "us-east-1"}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
		chat, err := conversationsfn.Config(d, dynamo.FromConfig(d.AWS, cfg.TableName))
		require.NoError(t, err)
		if c.on {
			assert.IsType(t, &plans.Planner{}, chat.Planner, c.flags)
		} else {
			assert.Nil(t, chat.Planner, "%q: no planner at all (a nil interface, not a nil *Planner)", c.flags)
		}
	}
}
