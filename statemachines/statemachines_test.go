package statemachines_test

import (
	"encoding/json"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/manifest"
	"github.com/conclave-ai/conclave/statemachines"
)

type state struct {
	Type               string
	Resource           string
	TimeoutSeconds     int
	TimeoutSecondsPath string
	Retry              []struct {
		ErrorEquals []string
		MaxAttempts *int
	}
	Catch []struct{ ErrorEquals []string }
}

type definition struct {
	StartAt        string
	TimeoutSeconds int
	States         map[string]state
}

func TestEveryFileIsInTheManifestAndTheReverse(t *testing.T) {
	var listed []string
	for _, sm := range manifest.StateMachines {
		listed = append(listed, sm.File)
	}
	sort.Strings(listed)
	assert.Equal(t, listed, statemachines.Files())
}

func TestDefinitions(t *testing.T) {
	for _, sm := range manifest.StateMachines {
		t.Run(sm.Name, func(t *testing.T) {
			raw, err := statemachines.Definition(sm.File)
			require.NoError(t, err)
			var def definition
			require.NoError(t, json.Unmarshal([]byte(raw), &def), "valid JSON")
			require.Contains(t, def.States, def.StartAt)
			assert.Positive(t, def.TimeoutSeconds, "the execution has a timeout")

			var subs []string
			for k := range sm.Substitutions {
				subs = append(subs, k)
			}
			sort.Strings(subs)
			assert.Equal(t, subs, statemachines.Placeholders(raw), "placeholders and manifest substitutions agree")

			for name, st := range def.States {
				if st.Type != "Task" {
					continue
				}
				assert.True(t, st.TimeoutSeconds > 0 || st.TimeoutSecondsPath != "", "task %s has a timeout", name)
				retriesAll := false
				for _, r := range st.Retry {
					for _, e := range r.ErrorEquals {
						if e == "States.ALL" && r.MaxAttempts != nil && *r.MaxAttempts == 2 {
							retriesAll = true
						}
					}
				}
				assert.True(t, retriesAll, "task %s retries twice", name)
				// Every failure path ends somewhere visible: a worker's in
				// the dead-letter path, the dead-letter send's own in
				// marking the task failed, the marks' in a Fail state.
				catchesAll := false
				for _, c := range st.Catch {
					catchesAll = catchesAll || c.ErrorEquals[len(c.ErrorEquals)-1] == "States.ALL"
				}
				assert.True(t, catchesAll, "task %s catches States.ALL", name)
			}
		})
	}
}

func TestSubstitute(t *testing.T) {
	got := statemachines.Substitute(`{"a":"${X}","b":"${X}-${Y}"}`, map[string]string{"X": "1", "Y": "2"})
	assert.Equal(t, `{"a":"1","b":"1-2"}`, got)
}

// Actions names, for each placeholder a Task acts on, the actions the
// machine's role needs: nested states included, the task-token pattern
// adding nothing, a placeholder no Task acts on needing nothing.
func TestActions(t *testing.T) {
	def := `{"StartAt":"A","States":{
	  "A":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke","Parameters":{"FunctionName":"${Fn}","Payload.$":"$"},"Next":"M"},
	  "M":{"Type":"Map","ItemProcessor":{"StartAt":"W","States":{
	    "W":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke.waitForTaskToken","Parameters":{"FunctionName":"${Other}"},"End":true}}},"Next":"P"},
	  "P":{"Type":"Task","Resource":"arn:aws:states:::dynamodb:putItem","Parameters":{"TableName":"${Table}","Item":{}},"Next":"D"},
	  "D":{"Type":"Task","Resource":"arn:aws:states:::dynamodb:deleteItem","Parameters":{"TableName":"${Table}","Key":{}},"Next":"S"},
	  "S":{"Type":"Pass","Result":{"queue":"${Unused}"},"End":true}}}`
	got, err := statemachines.Actions(def)
	require.NoError(t, err)
	assert.Equal(t, map[string][]string{
		"Fn":    {"lambda:InvokeFunction"},
		"Other": {"lambda:InvokeFunction"},
		"Table": {"dynamodb:DeleteItem", "dynamodb:PutItem"},
	}, got)

	// An integration whose actions are not known is refused, not
	// granted by guess.
	_, err = statemachines.Actions(`{"States":{"X":{"Type":"Task","Resource":"arn:aws:states:::states:startExecution.sync:2","Parameters":{"StateMachineArn":"${M}"}}}}`)
	assert.ErrorContains(t, err, "startExecution.sync")
}
