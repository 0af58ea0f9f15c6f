package stack_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/infra/stack"
	"github.com/conclave-ai/conclave/shared/platform/manifest"
	"github.com/conclave-ai/conclave/shared/platform/settings"
)

// Models named in these tests besides the default tiers'.
const (
	novaLite = "amazon.nova-lite-v1:0"
	novaPro  = "amazon.nova-pro-v1:0"
	haiku35  = "anthropic.claude-3-5-haiku-20241022-v1:0"
	sonnet35 = "anthropic.claude-3-5-sonnet-20240620-v1:0"
	novaMini = "amazon.nova-micro-v1:0"
)

// Without a stage key in the context a stage deploys as configured: dev
// every flag on, staging every flag but ensemble, prod none; the routing
// defaults as the tiers, the synthesis model tier_1's, no extra model.
func TestStagesKeepTheirDefaultsWhenTheContextSaysNothing(t *testing.T) {
	for stage, flags := range map[string]string{
		"dev":     "collaboration=true,ensemble=true,expert_gate=true,router_model=true,sessions=true,task_delegation=true",
		"staging": "collaboration=true,ensemble=false,expert_gate=true,router_model=true,sessions=true,task_delegation=true",
		"prod":    "collaboration=false,ensemble=false,expert_gate=false,router_model=false,sessions=false,task_delegation=false",
	} {
		cfg, err := configFrom(t, map[string]any{"env": stage}, "")
		require.NoError(t, err)
		assert.Equal(t, flags, cfg.Flags.String(), stage)
		assert.Equal(t, map[string]string{"tier_0": novaMini, "tier_1": haiku35, "tier_2": sonnet35}, cfg.TierModels(), stage)
		assert.Equal(t, haiku35, cfg.SynthesisModel, stage)
		assert.Empty(t, cfg.ExtraModels, stage)
		assert.Equal(t, []string{novaMini, haiku35, sonnet35}, cfg.Models(), stage)
		for _, id := range cfg.Models() {
			assert.NoError(t, stack.CheckModelID("models", id))
		}
	}
}

// Each stage key overrides what it names and nothing else: -c gives
// strings, cdk.json booleans, numbers and lists.
func TestTheContextSetsAStagesFlagsModelsAndLimits(t *testing.T) {
	// GIVEN prod, with a flag on, two tiers moved and two extra models
	cfg, err := configFrom(t, map[string]any{
		"env": "prod", "flags.collaboration": "true", "flags.expert_gate": true,
		"models.tier_1": novaLite, "models.tier_2": " " + novaPro + " ", "models.extra": sonnet35 + ", anthropic.claude-3-haiku-20240307-v1:0",
		"embedder": "none", "teamRatePerSecond": "0", "apiRatePerSecond": 800, "apiBurst": "1600",
	}, "")
	require.NoError(t, err)
	// THEN the flags named are on, the others as prod has them
	assert.Equal(t, "collaboration=true,ensemble=false,expert_gate=true,router_model=false,sessions=false,task_delegation=false", cfg.Flags.String())
	// AND the tiers named moved, the synthesis model with tier_1
	assert.Equal(t, map[string]string{"tier_0": novaMini, "tier_1": novaLite, "tier_2": novaPro}, cfg.TierModels())
	assert.Equal(t, novaLite, cfg.SynthesisModel)
	assert.Equal(t, []string{sonnet35, "anthropic.claude-3-haiku-20240307-v1:0"}, cfg.ExtraModels)
	// AND the grants name exactly the tiers', the synthesis and the extra models
	assert.Equal(t, []string{novaMini, novaLite, novaPro, sonnet35, "anthropic.claude-3-haiku-20240307-v1:0"}, cfg.Models())
	// AND the embedder and the limits are the deploy's
	assert.Equal(t, settings.EmbedderNone, cfg.Embedder)
	assert.Equal(t, 0, cfg.TeamRatePerSecond)
	assert.Equal(t, 800, cfg.APIRatePerSecond)
	assert.Equal(t, 1600, cfg.APIBurst)
	// AND what was not named is prod's
	assert.Equal(t, 365, cfg.LogRetentionDays)
	assert.Equal(t, "bedrock", cfg.ModelProvider)

	// A synthesis model named is kept whatever tier_1 is; the flags come
	// as cdk.json booleans too; a list from cdk.json.
	cfg, err = configFrom(t, map[string]any{"env": "staging", "models.tier_1": novaLite, "models.synthesis": sonnet35,
		"flags.ensemble": true, "flags.sessions": false, "models.extra": []any{novaPro}}, "")
	require.NoError(t, err)
	assert.Equal(t, sonnet35, cfg.SynthesisModel)
	assert.Equal(t, "collaboration=true,ensemble=true,expert_gate=true,router_model=true,sessions=false,task_delegation=true", cfg.Flags.String())
	assert.Equal(t, []string{novaPro}, cfg.ExtraModels)
}

// A stage key that cannot be what the deploy meant stops the synth, naming
// the key: an unknown flag would leave the flag meant off, a malformed
// model id would be granted and offered and fail every reply.
func TestTheContextRefusesAStageKeyItCannotMean(t *testing.T) {
	for _, c := range []struct {
		context map[string]any
		want    string
	}{
		{map[string]any{"flags.ensembel": "true"}, `-c flags.ensembel: unknown flag "ensembel" (flags are collaboration, expert_gate`},
		{map[string]any{"flags.ensemble": "yes"}, "-c flags.ensemble must be true or false"},
		{map[string]any{"flags": "ensemble=true"}, "-c flags: name each one"},
		{map[string]any{"models": map[string]any{"tier_1": novaLite}}, "-c models: name each one"},
		{map[string]any{"models.tier_3": novaLite}, "-c models.tier_3: unknown model key (want models.tier_0, models.tier_1, models.tier_2, models.extra, models.synthesis)"},
		{map[string]any{"models.tier_1": "claude 3.5 haiku"}, `-c models.tier_1: "claude 3.5 haiku" is not a Bedrock model id`},
		{map[string]any{"models.tier_1": "Anthropic.Claude"}, "is not a Bedrock model id"},
		{map[string]any{"models.tier_1": "arn:aws:bedrock:us-east-1::foundation-model/amazon.nova-lite-v1:0"}, "is not a Bedrock model id"},
		{map[string]any{"models.tier_0": "nova-micro"}, "is not a Bedrock model id"},
		{map[string]any{"models.tier_2": 3}, "-c models.tier_2 must be a Bedrock model id"},
		{map[string]any{"models.tier_2": "us.anthropic.claude-3-5-sonnet-20240620-v1:0"},
			"is a cross-region inference profile; name its foundation model (anthropic.claude-3-5-sonnet-20240620-v1:0)"},
		{map[string]any{"models.extra": novaPro + ",amazon nova"}, `-c models.extra: "amazon nova" is not a Bedrock model id`},
		{map[string]any{"models.extra": novaPro + "," + novaPro}, `-c models.extra: "amazon.nova-pro-v1:0" given twice`},
		{map[string]any{"models.extra": []any{novaPro, 7}}, "-c models.extra: 7 is not a model id"},
		{map[string]any{"models.synthesis": "haiku"}, "-c models.synthesis"},
		{map[string]any{"embedder": "glove"}, "-c embedder must be one of wordllama, titan, none"},
		{map[string]any{"teamRatePerSecond": "-1"}, "-c teamRatePerSecond must be a whole number from 0"},
		{map[string]any{"userRatePerSecond": "-1"}, "-c userRatePerSecond must be a whole number from 0"},
		{map[string]any{"userRatePerSecond": 2.5}, "-c userRatePerSecond must be a whole number"},
		{map[string]any{"apiRatePerSecond": "0"}, "-c apiRatePerSecond must be a whole number from 1"},
		{map[string]any{"apiBurst": "lots"}, "-c apiBurst must be a whole number"},
		{map[string]any{"apiBurst": 2.5}, "-c apiBurst must be a whole number"},
	} {
		_, err := configFrom(t, c.context, "")
		assert.ErrorContains(t, err, c.want, "%v", c.context)
	}
	// Every wrong key is reported, not only the first.
	_, err := configFrom(t, map[string]any{"flags.typo": "true", "models.tier_1": "bad id"}, "")
	assert.ErrorContains(t, err, "flags.typo")
	assert.ErrorContains(t, err, "models.tier_1")
}

// A person's rate comes from the context as the team's does (a string
// from -c, a number from cdk.json), up to the team's rate and no further:
// a person cannot be allowed more than their team. It needs a team's
// limit, within which alone the authorizer counts a person's requests.
func TestTheContextSetsAPersonsRateWithinTheTeams(t *testing.T) {
	for _, stage := range []string{"dev", "staging", "prod", "localstack"} {
		cfg, err := configFrom(t, map[string]any{"env": stage}, "")
		require.NoError(t, err)
		assert.Zero(t, cfg.UserRatePerSecond, "%s: a fifth of the team's", stage)
	}
	for _, c := range []struct {
		context map[string]any
		want    int
		err     string
	}{
		{map[string]any{"env": "prod", "userRatePerSecond": "10"}, 10, ""},
		{map[string]any{"env": "prod", "userRatePerSecond": 7.0}, 7, ""},
		{map[string]any{"env": "prod", "userRatePerSecond": "0"}, 0, ""},
		// prod's team rate is 50: equal is accepted, one above refused
		{map[string]any{"env": "prod", "userRatePerSecond": "50"}, 50, ""},
		{map[string]any{"env": "prod", "userRatePerSecond": "51"}, 0,
			"-c userRatePerSecond=51 is above the team's teamRatePerSecond=50: a person cannot be allowed more than their team"},
		// the team's rate set by the same deploy
		{map[string]any{"env": "dev", "teamRatePerSecond": "30", "userRatePerSecond": "30"}, 30, ""},
		{map[string]any{"env": "dev", "teamRatePerSecond": "30", "userRatePerSecond": "31"}, 0, "-c userRatePerSecond=31 is above the team's teamRatePerSecond=30"},
		// no team limit: a person's rate would count nothing
		{map[string]any{"env": "dev", "teamRatePerSecond": "0", "userRatePerSecond": "5"}, 0,
			"-c userRatePerSecond=5 needs -c teamRatePerSecond above 0"},
		{map[string]any{"env": "dev", "teamRatePerSecond": "0", "userRatePerSecond": "0"}, 0, ""},
	} {
		cfg, err := configFrom(t, c.context, "")
		if c.err != "" {
			assert.ErrorContains(t, err, c.err, "%v", c.context)
			continue
		}
		require.NoError(t, err, "%v", c.context)
		assert.Equal(t, c.want, cfg.UserRatePerSecond, "%v", c.context)
	}
}

// A context change changes the template: the functions' MODEL_TIERS and
// FEATURE_FLAGS, the agents function's EXTRA_MODELS, and the Bedrock
// resources of every role that calls models follow the deploy's choice,
// and every role still allows exactly its grants (checkFunctionRoles).
func TestAContextChangeChangesTheTemplate(t *testing.T) {
	// GIVEN dev deployed with -c flags.ensemble=false -c
	// models.tier_1=amazon.nova-lite-v1:0 -c models.extra=amazon.nova-pro-v1:0
	cfg, err := configFrom(t, map[string]any{"env": "dev", "flags.ensemble": "false",
		"models.tier_1": novaLite, "models.extra": novaPro}, "")
	require.NoError(t, err)
	// WHEN it is synthesized, beside dev as configured
	m := synthJSON(t, cfg)
	_, before := synth(t, "dev")

	// THEN every function that reads the tiers and the flags is told the
	// deploy's, where dev's defaults were
	tiers := "tier_0=" + novaMini + ",tier_1=" + novaLite + ",tier_2=" + sonnet35
	flags := "collaboration=true,ensemble=false,expert_gate=true,router_model=true,sessions=true,task_delegation=true"
	for _, f := range manifest.Functions {
		name := "conclave-dev-" + f.Name
		env, was := functionEnv(t, m, name), functionEnv(t, before, name)
		if slices.Contains(manifest.Env[f.Name], settings.EnvModelTiers) {
			assert.Equal(t, tiers, env[settings.EnvModelTiers], f.Name)
			assert.Equal(t, "tier_0="+novaMini+",tier_1="+haiku35+",tier_2="+sonnet35, was[settings.EnvModelTiers], f.Name)
		} else {
			assert.NotContains(t, env, settings.EnvModelTiers, f.Name)
		}
		if slices.Contains(manifest.Env[f.Name], settings.EnvFlags) {
			assert.Equal(t, flags, env[settings.EnvFlags], f.Name)
			assert.NotEqual(t, was[settings.EnvFlags], env[settings.EnvFlags], f.Name)
		}
		if slices.Contains(manifest.Env[f.Name], settings.EnvSynthesis) {
			assert.Equal(t, novaLite, env[settings.EnvSynthesis], "%s: the synthesis model follows tier_1", f.Name)
		}
		// AND only the agents function, which offers them, learns the extra models
		if f.Name == "agents" {
			assert.Equal(t, novaPro, env[settings.EnvExtraModels])
			assert.NotContains(t, was, settings.EnvExtraModels, "dev offers no extra model")
		} else {
			assert.NotContains(t, env, settings.EnvExtraModels, f.Name)
		}
	}
	// AND the Bedrock grants name exactly the deploy's models: Nova Lite
	// and Pro added, Claude 3.5 Haiku (dev's tier_1) gone
	assert.Equal(t, []string{novaMini, novaLite, sonnet35, novaPro}, cfg.Models())
	for _, name := range []string{"conversations", "task-worker", "session-steps"} {
		policy, was := policyOf(t, m, "conclave-dev-"+name), policyOf(t, before, "conclave-dev-"+name)
		for _, id := range []string{novaLite, novaPro} {
			assert.Contains(t, policy, "foundation-model/"+id, name)
			assert.NotContains(t, was, "foundation-model/"+id, name)
		}
		assert.NotContains(t, policy, "foundation-model/"+haiku35, name)
		assert.Contains(t, was, "foundation-model/"+haiku35, name)
		assert.Equal(t, 2*len(cfg.Models()), strings.Count(policy, "foundation-model/")+strings.Count(policy, "inference-profile/"), name)
	}
	checkFunctionRoles(t, m, cfg)
}

// The embedder comes from the context alone: -c embedder=titan tells the
// embedder's functions ROUTING_EMBEDDER=titan and grants them
// bedrock:InvokeModel on the Titan model's ARN, which dev as configured
// does not; -c embedder=wordllama tells them wordllama and grants no
// model. No other function learns the embedder.
func TestTheContextSetsTheEmbedderAndItsGrant(t *testing.T) {
	titan := titanARN()
	_, dev := synth(t, "dev")
	for _, c := range []struct {
		embedder string
		granted  bool
	}{{settings.EmbedderTitan, true}, {settings.EmbedderWordLlama, false}} {
		// GIVEN dev deployed with -c embedder=<c.embedder>
		cfg, err := configFrom(t, map[string]any{"env": "dev", "embedder": c.embedder}, "")
		require.NoError(t, err)
		// WHEN it is synthesized
		m := synthJSON(t, cfg)
		// THEN the embedder's functions are told it, and no other is
		for _, f := range manifest.Functions {
			env := functionEnv(t, m, "conclave-dev-"+f.Name)
			if _, embeds := manifest.EmbedderGrants[f.Name]; embeds {
				assert.Equal(t, c.embedder, env[settings.EnvEmbedder], "%s with %s", f.Name, c.embedder)
			} else {
				assert.NotContains(t, env, settings.EnvEmbedder, "%s with %s", f.Name, c.embedder)
			}
		}
		// AND their roles may invoke Titan exactly when it is titan
		require.NotEmpty(t, manifest.EmbedderGrants)
		for name := range manifest.EmbedderGrants {
			role := "conclave-dev-" + name
			assert.Equal(t, c.granted, invokesModel(t, m, role, titan), "%s with %s", name, c.embedder)
			assert.False(t, invokesModel(t, dev, role, titan), "%s: dev as configured does not", name)
		}
		checkFunctionRoles(t, m, cfg)
	}
}

// invokesModel reports whether the role of function name may call
// bedrock:InvokeModel on the model ARN arn (template JSON).
func invokesModel(t *testing.T, m map[string]any, name, arn string) bool {
	t.Helper()
	return rolePairs(t, m, roleOf(t, m, name))[grantPair{string(manifest.GrantModels), arn}]
}
