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
		Catch   []catch
		Choices []struct {
			Variable           string
			NumericGreaterThan *float64
			Next               string
		}
		Default string
		Error   string
		Next    string
		End     bool
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
			ResumeAfterChildren struct {
				Parameters struct{ Payload map[string]string }
				Retry      []struct {
					ErrorEquals []string
					MaxAttempts int
				}
				Next string
			}
			ResumeTask struct {
				Parameters map[string]string
				ResultPath string
				Next       string
			}
			DropSavedOutcome struct {
				Result     map[string]any
				ResultPath string
				Next       string
			}
		}
	}
	require.NoError(t, json.Unmarshal([]byte(raw), &def))
	s := def.States
	require.Len(t, s.WaitingForChild.Choices, 3)
	assert.Equal(t, "WaitForRemote", s.WaitingForChild.Choices[0].Next, "a remote agent's task is told apart first (it has no children)")
	assert.Equal(t, "BlockForApproval", s.WaitingForChild.Choices[1].Next, "a wait for approvals is told apart before children")
	assert.Equal(t, "AwaitChildren", s.WaitingForChild.Choices[2].Next)

	m := s.AwaitChildren
	assert.Equal(t, "Map", m.Type)
	assert.Equal(t, "$.outcome.result.waiting.child_task_ids", m.ItemsPath)
	require.NotNil(t, m.MaxConcurrency)
	assert.Zero(t, *m.MaxConcurrency, "every child is waited for at once")
	assert.Equal(t, "$$.Map.Item.Value", m.ItemSelector["child_task_id.$"])
	assert.Equal(t, "$.outcome.result.waiting.timeout_seconds", m.ItemSelector["timeout_seconds.$"])
	assert.Equal(t, []catch{{[]string{"TaskNotRunnable"}, "Superseded"}, {[]string{"States.ALL"}, "DeadLetter"}}, m.Catch)
	// The children's outcomes go where the resume reads them, and nowhere
	// else: a copy beside it doubled the state (Step Functions' 256 KB).
	assert.Equal(t, "$.resume.children", m.ResultPath)
	assert.Equal(t, "ResumeAfterChildren", m.Next)

	w := m.ItemProcessor.States[m.ItemProcessor.StartAt]
	assert.Equal(t, "arn:aws:states:::lambda:invoke.waitForTaskToken", w.Resource)
	assert.Equal(t, "$.timeout_seconds", w.TimeoutSecondsPath, "no child is waited for past the parent's deadline")
	assert.Equal(t, "await", w.Parameters.Payload["action"])
	assert.Equal(t, "$.child_task_id", w.Parameters.Payload["child_task_id.$"])
	assert.Equal(t, "$$.Task.Token", w.Parameters.Payload["task_token.$"])
	assert.Equal(t, "$$.Execution.Id", w.Parameters.Payload["execution_arn.$"], "the parent's execution, which Await checks")
	assert.True(t, w.End)
	require.Len(t, w.Retry, 2)
	assert.ElementsMatch(t, []string{"TaskNotRunnable", "InvalidTask", "States.Timeout", "AgentBusy"}, w.Retry[0].ErrorEquals)
	assert.Zero(t, w.Retry[0].MaxAttempts, "reaching the deadline is not retried: it is rechecked")
	// The deadline reached is rechecked: a parent blocked while a task
	// below it waits for approval waits again; one past its deadline
	// fails with TaskTimedOut (its status: timed_out).
	require.Equal(t, []catch{{[]string{"States.Timeout"}, "RecheckWait"}}, w.Catch)
	rc := m.ItemProcessor.States["RecheckWait"]
	assert.Equal(t, "recheck_wait", rc.Parameters.Payload["action"])
	assert.Equal(t, "$$.Execution.Id", rc.Parameters.Payload["execution_arn.$"])
	assert.Equal(t, "WaitAgain?", rc.Next)
	ch := m.ItemProcessor.States["WaitAgain?"]
	require.Len(t, ch.Choices, 1)
	assert.Equal(t, "$.recheck.timeout_seconds", ch.Choices[0].Variable)
	require.NotNil(t, ch.Choices[0].NumericGreaterThan)
	assert.Zero(t, *ch.Choices[0].NumericGreaterThan)
	assert.Equal(t, "WaitAgain", ch.Choices[0].Next)
	assert.Equal(t, "ParentTimedOut", ch.Default)
	assert.Equal(t, "AwaitChild", m.ItemProcessor.States["WaitAgain"].Next)
	assert.Equal(t, "Fail", m.ItemProcessor.States["ParentTimedOut"].Type)
	assert.Equal(t, "TaskTimedOut", m.ItemProcessor.States["ParentTimedOut"].Error)

	ra := s.ResumeAfterChildren
	assert.Equal(t, "resume_waiting", ra.Parameters.Payload["action"])
	assert.Equal(t, "ResumeTask", ra.Next)
	var busy int
	for _, r := range ra.Retry {
		if len(r.ErrorEquals) == 1 && r.ErrorEquals[0] == "AgentBusy" {
			busy = r.MaxAttempts
		}
	}
	assert.Greater(t, busy, 2, "a parent resumed waits for a free slot of its agent")
	assert.Equal(t, []string{"States.ALL"}, w.Retry[1].ErrorEquals)
	assert.Equal(t, 2, w.Retry[1].MaxAttempts)

	assert.Equal(t, map[string]string{"state.$": "$.outcome.result.waiting.state", "children.$": "$.resume.children"}, s.ResumeTask.Parameters)
	assert.Equal(t, "$.resume", s.ResumeTask.ResultPath)
	// The saved conversation travels once: the resume's copy in $.resume,
	// the last attempt's outcome dropped before the worker runs again.
	assert.Equal(t, "DropSavedOutcome", s.ResumeTask.Next)
	assert.Equal(t, "$.outcome", s.DropSavedOutcome.ResultPath)
	assert.Empty(t, s.DropSavedOutcome.Result)
	assert.Equal(t, "RunTask", s.DropSavedOutcome.Next)
}

// The approval states: block, one token wait per approval bounded by its
// expiry (an expired wait is expired, not failed), resume with a slot
// (AgentBusy retried), run the worker with every decision.
func TestDelegationWaitsForApprovalsBlocked(t *testing.T) {
	raw, err := statemachines.Definition("delegation.asl.json")
	require.NoError(t, err)
	var def struct {
		TimeoutSeconds int
		States         map[string]json.RawMessage
	}
	require.NoError(t, json.Unmarshal([]byte(raw), &def))
	assert.GreaterOrEqual(t, def.TimeoutSeconds, 24*3600, "an approval waits up to 24 hours")
	var m struct {
		ItemsPath     string
		ItemProcessor struct {
			StartAt string
			States  map[string]struct {
				Resource           string
				TimeoutSecondsPath string
				Catch              []struct {
					ErrorEquals []string
					Next        string
				}
				Parameters struct{ Payload map[string]string }
			}
		}
		ResultPath, Next string
	}
	require.NoError(t, json.Unmarshal(def.States["AwaitApprovals"], &m))
	assert.Equal(t, "$.outcome.result.waiting.approvals", m.ItemsPath)
	w := m.ItemProcessor.States[m.ItemProcessor.StartAt]
	assert.Equal(t, "arn:aws:states:::lambda:invoke.waitForTaskToken", w.Resource)
	assert.Equal(t, "$.approval.timeout_seconds", w.TimeoutSecondsPath)
	assert.Equal(t, "request_approval", w.Parameters.Payload["action"])
	require.Len(t, w.Catch, 1)
	assert.Equal(t, []string{"States.Timeout"}, w.Catch[0].ErrorEquals)
	assert.Equal(t, "expire_approval", m.ItemProcessor.States[w.Catch[0].Next].Parameters.Payload["action"])
	assert.Equal(t, "ResumeApproved", m.Next)
	var r struct {
		Retry []struct {
			ErrorEquals []string
			MaxAttempts int
		}
		Next string
	}
	require.NoError(t, json.Unmarshal(def.States["ResumeApproved"], &r))
	assert.Equal(t, "ResumeWithDecisions", r.Next)
	busy := false
	for _, x := range r.Retry {
		busy = busy || (len(x.ErrorEquals) == 1 && x.ErrorEquals[0] == "AgentBusy" && x.MaxAttempts > 2)
	}
	assert.True(t, busy, "a resume waits for a free slot")
}

// TestDelegationWaitsForARemoteAgentInAWaitState: a task of an A2A agent
// outside the team waits in a Wait state (nothing runs, nothing polls in
// a Lambda) for what the worker asked, then the worker reads the remote
// task once with its saved state and the remote task's id.
func TestDelegationWaitsForARemoteAgentInAWaitState(t *testing.T) {
	raw, err := statemachines.Definition("delegation.asl.json")
	require.NoError(t, err)
	var def struct {
		States map[string]struct {
			Type        string
			SecondsPath string
			Parameters  map[string]any
			ResultPath  string
			Next        string
			Choices     []struct {
				Variable  string
				IsPresent bool
				Next      string
			}
		}
	}
	require.NoError(t, json.Unmarshal([]byte(raw), &def))
	c := def.States["WaitingForChild"].Choices[0]
	assert.Equal(t, "$.outcome.result.waiting.remote", c.Variable)
	assert.True(t, c.IsPresent)
	w := def.States[c.Next]
	assert.Equal(t, "Wait", w.Type)
	assert.Equal(t, "$.outcome.result.waiting.remote.poll_seconds", w.SecondsPath)
	r := def.States[w.Next]
	assert.Equal(t, "Pass", r.Type)
	assert.Equal(t, map[string]any{"state.$": "$.outcome.result.waiting.state", "remote.$": "$.outcome.result.waiting.remote"}, r.Parameters)
	assert.Equal(t, "$.resume", r.ResultPath)
	assert.Equal(t, "DropSavedOutcome", r.Next, "the saved outcome is dropped before the worker runs again")
}
