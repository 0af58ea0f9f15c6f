package settings_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/conclave-ai/conclave/shared/platform/settings"
)

func TestPairsRoundTripSorted(t *testing.T) {
	m := map[string]string{"delegation": "arn:aws:states:us-east-1:1:stateMachine:x", "activity": "http://q"}
	s := settings.EncodePairs(m)
	assert.Equal(t, "activity=http://q,delegation=arn:aws:states:us-east-1:1:stateMachine:x", s)
	assert.Equal(t, m, settings.ParsePairs(s))
}

func TestFlagsRoundTripAndMissingMeansOff(t *testing.T) {
	f := settings.Flags{Collaboration: true, Ensemble: true}
	assert.Equal(t, "collaboration=true,ensemble=true,expert_gate=false,router_model=false,sessions=false,task_delegation=false", f.String())
	assert.Equal(t, f, settings.ParseFlags(f.String()))
	assert.Equal(t, settings.Flags{ExpertGate: true}, settings.ParseFlags("expert_gate=true,ensemble=yes"))
	assert.Equal(t, settings.Flags{RouterModel: true}, settings.ParseFlags("router_model=true"))
}

// The phases build on each other: a flag whose earlier phase is off is off.
func TestEffectiveFlagsFollowTheSeedsProgression(t *testing.T) {
	all := settings.Flags{Collaboration: true, ExpertGate: true, Ensemble: true, TaskDelegation: true, Sessions: true, RouterModel: true}
	assert.Equal(t, all, all.Effective())
	for _, name := range settings.FlagNames {
		assert.True(t, all.On(name), name)
	}
	noCollab := all
	noCollab.Collaboration = false
	assert.Equal(t, settings.Flags{}, noCollab.Effective(), "collaboration off turns every later phase off")
	noDelegation := all
	noDelegation.TaskDelegation = false
	e := noDelegation.Effective()
	assert.False(t, e.Sessions, "sessions run their stages as tasks")
	assert.True(t, e.Collaboration && e.ExpertGate && e.Ensemble && e.RouterModel)
	noGate := all
	noGate.ExpertGate = false
	assert.False(t, noGate.On(settings.FlagRouterModel), "the router model decides only when the gate is unsure")
	assert.True(t, noGate.On(settings.FlagEnsemble))
	onlySessions := settings.Flags{Collaboration: true, Sessions: true}
	assert.False(t, onlySessions.On(settings.FlagSessions))
	assert.True(t, onlySessions.On(settings.FlagCollaboration))
	assert.True(t, onlySessions.On(""))
	assert.False(t, all.On("no_such_flag"))
}

func TestFromLookupReadsTheContract(t *testing.T) {
	env := map[string]string{
		settings.EnvTable: "tbl", settings.EnvStateMachines: "delegation=arn:x",
		settings.EnvFlags: "collaboration=true", settings.EnvModelTiers: "tier_0=m0",
		settings.EnvTeamRateLimit: "20", settings.EnvUserRateLimit: "3",
	}
	c := settings.FromLookup(func(k string) string { return env[k] })
	assert.Equal(t, "tbl", c.TableName)
	assert.Equal(t, "arn:x", c.StateMachines["delegation"])
	assert.True(t, c.Flags.Collaboration)
	assert.Equal(t, "m0", c.Tiers["tier_0"])
	assert.Equal(t, 20, c.TeamRateLimit)
	assert.Equal(t, 3, c.UserRateLimit)
}
