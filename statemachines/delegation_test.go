package statemachines_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/statemachines"
)

// The delegation machine waits for every child of a fan-out at once: a
// Map over the worker's waiting.child_task_ids with one task-token wait
// per child, bounded by what is left of the parent's deadline, caught as
// the worker's own failures are, and the worker resumed with every outcome.
func TestDelegationAwaitsEveryChildOfAFanOut(t *testing.T) {
	raw, err := statemachines.Definition("delegation.asl.json")
	require.NoError(t, err)
	type catch struct {
		ErrorEquals []string
		Next        string
	}
	type taskState struct {
		Type               string
		Resource           string
		TimeoutSecondsPath string
		Parameters         struct{ Payload map[string]string }
		Retry              []struct {
			ErrorEquals []string
			MaxAttempts int
		}
		End bool
	}
	var def struct {
		States struct {
			WaitingForChild struct{ Choices []struct{ Next string } }
			AwaitChildren   struct {
				Type           string
				ItemsPath      string
				MaxConcurrency *int
				ItemSelector   map[string]string
				ItemProcessor  struct {
					StartAt string
					States  map[string]taskState
				}
				ResultPath string
				Catch      []catch
				Next       string
			}
			ResumeTask struct {
				Parameters map[string]string
				ResultPath string
				Next       string
			}
		}
	}
	require.NoError(t, json.Unmarshal([]byte(raw), &def))
	s := def.States
	require.Len(t, s.WaitingForChild.Choices, 1)
	assert.Equal(t, "AwaitChildren", s.WaitingForChild.Choices[0].Next)

	m := s.AwaitChildren
	assert.Equal(t, "Map", m.Type)
	assert.Equal(t, "$.outcome.result.waiting.child_task_ids", m.ItemsPath)
	require.NotNil(t, m.MaxConcurrency)
	assert.Zero(t, *m.MaxConcurrency, "every child is waited for at once")
	assert.Equal(t, "$$.Map.Item.Value", m.ItemSelector["child_task_id.$"])
	assert.Equal(t, "$.outcome.result.waiting.timeout_seconds", m.ItemSelector["timeout_seconds.$"])
	assert.Equal(t, []catch{{[]string{"TaskNotRunnable"}, "Superseded"}, {[]string{"States.ALL"}, "DeadLetter"}}, m.Catch)
	assert.Equal(t, "$.children", m.ResultPath)
	assert.Equal(t, "ResumeTask", m.Next)

	require.Len(t, m.ItemProcessor.States, 1)
	w := m.ItemProcessor.States[m.ItemProcessor.StartAt]
	assert.Equal(t, "arn:aws:states:::lambda:invoke.waitForTaskToken", w.Resource)
	assert.Equal(t, "$.timeout_seconds", w.TimeoutSecondsPath, "no child is waited for past the parent's deadline")
	assert.Equal(t, "await", w.Parameters.Payload["action"])
	assert.Equal(t, "$.child_task_id", w.Parameters.Payload["child_task_id.$"])
	assert.Equal(t, "$$.Task.Token", w.Parameters.Payload["task_token.$"])
	assert.Equal(t, "$$.Execution.Id", w.Parameters.Payload["execution_arn.$"], "the parent's execution, which Await checks")
	assert.True(t, w.End)
	require.Len(t, w.Retry, 2)
	assert.ElementsMatch(t, []string{"TaskNotRunnable", "InvalidTask", "States.Timeout"}, w.Retry[0].ErrorEquals)
	assert.Zero(t, w.Retry[0].MaxAttempts, "the deadline passing is final")
	assert.Equal(t, []string{"States.ALL"}, w.Retry[1].ErrorEquals)
	assert.Equal(t, 2, w.Retry[1].MaxAttempts)

	assert.Equal(t, map[string]string{"state.$": "$.outcome.result.waiting.state", "children.$": "$.children"}, s.ResumeTask.Parameters)
	assert.Equal(t, "$.resume", s.ResumeTask.ResultPath)
	assert.Equal(t, "RunTask", s.ResumeTask.Next)
}
