package settings_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/settings"
)

// lookup is os.LookupEnv over env.
func lookup(env map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	}
}

// Every kind of variable, required and optional: set well, absent,
// malformed. The error names the variable and says what was wrong.
func TestLoadChecksEveryKind(t *testing.T) {
	cases := []struct {
		name string
		vars []string
		env  map[string]string
		want settings.Config
		err  string // "" or the whole error
	}{
		// text, required
		{"text set", []string{settings.EnvTable}, map[string]string{settings.EnvTable: "tbl"}, settings.Config{TableName: "tbl"}, ""},
		{"text missing", []string{settings.EnvTable}, nil, settings.Config{}, "TABLE_NAME: required, not set"},
		{"text empty is missing", []string{settings.EnvTable}, map[string]string{settings.EnvTable: "  "}, settings.Config{}, "TABLE_NAME: required, not set"},
		// text, optional
		{"optional text absent", []string{settings.EnvSynthesis}, nil, settings.Config{}, ""},
		// count, optional with default 0
		{"count set", []string{settings.EnvTeamRateLimit}, map[string]string{settings.EnvTeamRateLimit: "20"}, settings.Config{TeamRateLimit: 20}, ""},
		{"count absent takes the default", []string{settings.EnvTeamRateLimit}, nil, settings.Config{TeamRateLimit: 0}, ""},
		{"count not a number", []string{settings.EnvTeamRateLimit}, map[string]string{settings.EnvTeamRateLimit: "abc"}, settings.Config{}, `TEAM_RATE_LIMIT: not a number: "abc"`},
		{"count negative", []string{settings.EnvTeamRateLimit}, map[string]string{settings.EnvTeamRateLimit: "-5"}, settings.Config{}, "TEAM_RATE_LIMIT: negative: -5"},
		{"count with a fraction", []string{settings.EnvTeamRateLimit}, map[string]string{settings.EnvTeamRateLimit: "2.5"}, settings.Config{}, `TEAM_RATE_LIMIT: not a number: "2.5"`},
		// a person's rate: its own field, 0 (a fifth of the team's) when absent
		{"user rate set", []string{settings.EnvTeamRateLimit, settings.EnvUserRateLimit},
			map[string]string{settings.EnvTeamRateLimit: "20", settings.EnvUserRateLimit: "7"}, settings.Config{TeamRateLimit: 20, UserRateLimit: 7}, ""},
		{"user rate absent takes the default", []string{settings.EnvUserRateLimit}, nil, settings.Config{UserRateLimit: 0}, ""},
		{"user rate negative", []string{settings.EnvUserRateLimit}, map[string]string{settings.EnvUserRateLimit: "-1"}, settings.Config{}, "USER_RATE_LIMIT: negative: -1"},
		// choice, required
		{"choice set", []string{settings.EnvModelProvider}, map[string]string{settings.EnvModelProvider: "bedrock"}, settings.Config{ModelProvider: "bedrock"}, ""},
		{"choice missing", []string{settings.EnvModelProvider}, nil, settings.Config{}, "MODEL_PROVIDER: required, not set"},
		{"choice unknown", []string{settings.EnvModelProvider}, map[string]string{settings.EnvModelProvider: "bedrok"}, settings.Config{},
			`MODEL_PROVIDER: "bedrok" is not one of local, bedrock, openai`},
		// choice, optional with a default
		{"optional choice absent takes the default", []string{settings.EnvEmbedder}, nil, settings.Config{Embedder: settings.EmbedderWordLlama}, ""},
		{"optional choice set", []string{settings.EnvEmbedder}, map[string]string{settings.EnvEmbedder: "titan"}, settings.Config{Embedder: settings.EmbedderTitan}, ""},
		{"optional choice unknown", []string{settings.EnvEmbedder}, map[string]string{settings.EnvEmbedder: "glove"}, settings.Config{},
			`ROUTING_EMBEDDER: "glove" is not one of wordllama, titan, none`},
		// pairs, required
		{"pairs set", []string{settings.EnvStateMachines}, map[string]string{settings.EnvStateMachines: "a=arn:1,b=arn:2"},
			settings.Config{StateMachines: map[string]string{"a": "arn:1", "b": "arn:2"}}, ""},
		{"pairs missing", []string{settings.EnvQueues}, nil, settings.Config{}, "QUEUE_URLS: required, not set"},
		{"pairs without =", []string{settings.EnvQueues}, map[string]string{settings.EnvQueues: "a=http://q,b"}, settings.Config{}, `QUEUE_URLS: "b" is not name=value`},
		{"pairs with an empty value", []string{settings.EnvFunctions}, map[string]string{settings.EnvFunctions: "expert-gate="}, settings.Config{},
			`FUNCTION_NAMES: "expert-gate=": empty name or value`},
		{"pairs with a name twice", []string{settings.EnvFunctions}, map[string]string{settings.EnvFunctions: "a=1,a=2"}, settings.Config{}, `FUNCTION_NAMES: "a" given twice`},
		// pairs, optional
		{"optional pairs absent", []string{settings.EnvModelTiers}, nil, settings.Config{Tiers: map[string]string{}}, ""},
		// list, optional
		{"list set", []string{settings.EnvExtraModels}, map[string]string{settings.EnvExtraModels: "amazon.nova-pro-v1:0, amazon.nova-lite-v1:0"},
			settings.Config{ExtraModels: []string{"amazon.nova-pro-v1:0", "amazon.nova-lite-v1:0"}}, ""},
		{"list absent", []string{settings.EnvExtraModels}, nil, settings.Config{}, ""},
		{"list with an empty item", []string{settings.EnvExtraModels}, map[string]string{settings.EnvExtraModels: "a,,b"}, settings.Config{},
			`EXTRA_MODELS: "a,,b" has an empty item`},
		{"list with an item twice", []string{settings.EnvExtraModels}, map[string]string{settings.EnvExtraModels: "a,b,a"}, settings.Config{},
			`EXTRA_MODELS: "a" given twice`},
		// flags (bools), required
		{"flags set", []string{settings.EnvFlags}, map[string]string{settings.EnvFlags: "collaboration=true,ensemble=false"},
			settings.Config{Flags: settings.Flags{Collaboration: true}}, ""},
		{"flags missing", []string{settings.EnvFlags}, nil, settings.Config{}, "FEATURE_FLAGS: required, not set"},
		{"flag not a bool", []string{settings.EnvFlags}, map[string]string{settings.EnvFlags: "collaboration=yes"}, settings.Config{},
			`FEATURE_FLAGS: flag collaboration="yes": want true or false`},
		{"flag unknown", []string{settings.EnvFlags}, map[string]string{settings.EnvFlags: "colaboration=true"}, settings.Config{},
			`FEATURE_FLAGS: unknown flag "colaboration" (want collaboration, expert_gate, ensemble, task_delegation, sessions, router_model)`},
		// URL, optional
		{"url set", []string{settings.EnvOpenAIBaseURL}, map[string]string{settings.EnvOpenAIBaseURL: "https://llm.example/v1"},
			settings.Config{OpenAIBaseURL: "https://llm.example/v1"}, ""},
		{"url absent", []string{settings.EnvOpenAIBaseURL}, nil, settings.Config{}, ""},
		{"stream url, its trailing slash dropped", []string{settings.EnvStreamURL}, map[string]string{settings.EnvStreamURL: "https://x.execute-api.eu-west-1.amazonaws.com/dev/"},
			settings.Config{StreamURL: "https://x.execute-api.eu-west-1.amazonaws.com/dev"}, ""},
		{"url malformed", []string{settings.EnvOpenAIBaseURL}, map[string]string{settings.EnvOpenAIBaseURL: "llm.example/v1"}, settings.Config{},
			`OPENAI_BASE_URL: not an http(s) URL: "llm.example/v1"`},
		// across variables
		{"openai needs its endpoint", []string{settings.EnvModelProvider, settings.EnvOpenAIBaseURL}, map[string]string{settings.EnvModelProvider: "openai"},
			settings.Config{}, "OPENAI_BASE_URL: required when MODEL_PROVIDER=openai"},
		// a declaration naming no variable of the contract
		{"unknown variable", []string{"TABEL_NAME"}, nil, settings.Config{}, "TABEL_NAME: not a variable of the contract (settings.Vars)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := settings.Load(c.vars, lookup(c.env))
			if c.err != "" {
				require.EqualError(t, err, c.err)
				ve := settings.VarErrors(err)
				require.Len(t, ve, 1)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
		})
	}
}

// Every variable that is wrong is reported, each on its own; the
// variables a function does not declare are not read at all.
func TestLoadReportsEveryWrongVariableAndReadsOnlyTheDeclared(t *testing.T) {
	env := map[string]string{settings.EnvTeamRateLimit: "abc", settings.EnvBus: "bus", settings.EnvStage: "dev"}
	_, err := settings.Load([]string{settings.EnvTable, settings.EnvTeamRateLimit, settings.EnvBus}, lookup(env))
	ve := settings.VarErrors(err)
	require.Len(t, ve, 2)
	assert.Equal(t, settings.EnvTable, ve[0].Name)
	assert.Equal(t, settings.EnvTeamRateLimit, ve[1].Name)
	assert.EqualError(t, ve[1].Err, `not a number: "abc"`)

	c, err := settings.Load([]string{settings.EnvBus}, lookup(env))
	require.NoError(t, err)
	assert.Equal(t, settings.Config{BusName: "bus"}, c, "STAGE is set but not declared: not read")
}

// A secret's value never reaches an error (or the log line made of it).
func TestLoadNeverEchoesASecret(t *testing.T) {
	for name, v := range settings.Vars {
		if !v.Secret {
			continue
		}
		assert.Equal(t, settings.KindText, v.Kind, "%s: only text cannot be malformed; a secret of another kind needs a test that its error hides it", name)
	}
}

// The catalog is consistent: a required variable has no default, every
// default parses as its variable's kind, every choice variable has
// choices, and every variable fills a Config field.
func TestVarsAreConsistent(t *testing.T) {
	for name, v := range settings.Vars {
		assert.Equal(t, name, v.Name)
		assert.NotEmpty(t, v.Doc, name)
		if v.Required {
			assert.Empty(t, v.Default, "%s: a required variable has no default", name)
		}
		assert.Equal(t, v.Kind == settings.KindChoice, len(v.Choices) > 0, name)
		_, err := settings.Load([]string{name}, lookup(nil))
		if v.Required {
			assert.ErrorContains(t, err, "required", name)
		} else {
			assert.NoError(t, err, "%s: its default %q must parse", name, v.Default)
		}
		sample := map[settings.Kind]string{settings.KindText: "x", settings.KindPairs: "a=b", settings.KindFlags: "collaboration=true",
			settings.KindCount: "1", settings.KindURL: "http://x", settings.KindList: "a"}[v.Kind]
		if v.Kind == settings.KindChoice {
			sample = v.Choices[0]
		}
		c, err := settings.Load([]string{name}, lookup(map[string]string{name: sample}))
		assert.NoError(t, err, name)
		assert.NotEqual(t, settings.Config{}, c, "%s fills a field of Config", name)
	}
}
