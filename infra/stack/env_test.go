package stack_test

import (
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/infra/stack"
	"github.com/conclave-ai/conclave/shared/platform/manifest"
	"github.com/conclave-ai/conclave/shared/platform/settings"
)

// Every stage sets each function's required variables, sets nothing the
// function does not declare (its start would not read it), and what it
// sets literally parses as the function's start parses it.
func TestEveryStageSetsWhatEachFunctionDeclares(t *testing.T) {
	stages := make([]string, 0, len(stack.Environments))
	for name := range stack.Environments {
		stages = append(stages, name)
	}
	sort.Strings(stages)
	for _, stage := range stages {
		t.Run(stage, func(t *testing.T) {
			// GIVEN the stage's template
			_, m := synth(t, stage)
			fns := resources(m, "AWS::Lambda::Function")
			require.Len(t, fns, len(manifest.Functions))
			for _, fn := range fns {
				// WHEN a function's environment is read
				p := props(fn)
				name := strings.TrimPrefix(p["FunctionName"].(string), manifest.Names{Stage: stage}.Prefix()+"-")
				declared, ok := manifest.Env[name]
				require.True(t, ok, "%s declares no environment", name)
				env := p["Environment"].(map[string]any)["Variables"].(map[string]any)
				// THEN it has every required variable and only declared ones
				for _, v := range manifest.EnvVars(name) {
					if v.Required {
						assert.Contains(t, env, v.Name, "%s %s: required by %s, not set", stage, name, name)
					}
				}
				for k := range env {
					assert.True(t, slices.Contains(declared, k), "%s %s: sets %s, which %s does not declare (manifest.Env)", stage, name, k, name)
				}
				// AND no deployed stage lets an MCP pack reach loopback
				// (the local cloud's tests alone set it)
				assert.NotContains(t, env, settings.EnvMCPLoopbackOnly, "%s %s", stage, name)
				// AND the values the template spells out parse (a value
				// CloudFormation resolves at deploy, a Ref or a Join,
				// stands in as a well-formed one of its kind).
				_, err := settings.Load(declared, func(k string) (string, bool) {
					value, ok := env[k]
					if !ok {
						return "", false
					}
					if s, literal := value.(string); literal {
						return s, true
					}
					switch settings.Vars[k].Kind {
					case settings.KindPairs:
						return "resolved=at-deploy", true
					case settings.KindURL:
						return "https://resolved.at-deploy.example", true
					}
					return "resolved-at-deploy", true
				})
				assert.NoError(t, err, "%s %s", stage, name)
			}
		})
	}
}

// docs/operations.md lists each variable and each function's variables
// as the declarations say (settings.Vars, manifest.Env); on a change, the
// failure prints the tables to paste.
func TestTheOperationsDocListsEachFunctionsVariables(t *testing.T) {
	section := docSection(t, "docs/operations.md", "### Configuration per function")
	want := envTables()
	assert.True(t, strings.Contains(section, want),
		"docs/operations.md's \"Configuration per function\" differs from the declarations; its tables are:\n\n%s", want)
}

// envTables renders the variables (settings.Vars) and each function's
// (manifest.Env) as two Markdown tables.
func envTables() string {
	var b strings.Builder
	b.WriteString("| variable | kind | if absent | what for |\n|---|---|---|---|\n")
	names := make([]string, 0, len(settings.Vars))
	for n := range settings.Vars {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		v := settings.Vars[n]
		kind := string(v.Kind)
		if v.Kind == settings.KindChoice {
			kind = strings.Join(v.Choices, " \\| ")
		}
		if v.Secret {
			kind += ", secret"
		}
		b.WriteString("| `" + n + "` | " + kind + " | " + absent(v) + " | " + v.Doc + " |\n")
	}
	b.WriteString("\n| function | required | optional (default) |\n|---|---|---|\n")
	for _, f := range manifest.Functions {
		var req, opt []string
		for _, v := range manifest.EnvVars(f.Name) {
			if v.Required {
				req = append(req, "`"+v.Name+"`")
			} else {
				opt = append(opt, "`"+v.Name+"` ("+absent(v)+")")
			}
		}
		b.WriteString("| `" + f.Name + "` | " + orNone(req) + " | " + orNone(opt) + " |\n")
	}
	return b.String()
}

// absent is what an absent v means: the start fails, or its default.
func absent(v settings.Var) string {
	switch {
	case v.Required:
		return "**start fails**"
	case v.Default != "":
		return "`" + v.Default + "`"
	}
	return "empty"
}

// orNone joins names, or says there are none.
func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
