//go:build integration

// Parallel delegation on the local cloud: a task whose model asks two
// colleagues in one response, run by the real delegation machine (its
// AwaitChildren Map, one task token per child) with the Go handlers behind
// the edge and the Bedrock adapter against the local Converse endpoint.
package cloud_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

// A delegated task fans out to two colleagues and synthesizes both
// results: both children run at once, the parent's execution waits for
// both with nothing running, and its worker is resumed once, after the
// last child ended, with each call answered by its own child's result.
func TestDelegationFansOutToTwoColleaguesAndSynthesizes(t *testing.T) {
	e := mustEnv(t)
	team := mustTeam(t, e)
	mustAgent(t, e, team, "kyra", &agents.Model{Script: "delegate2:luke,dana"})
	mustAgent(t, e, team, "luke", nil)
	mustAgent(t, e, team, "dana", nil)
	svc, c := taskService(t, e)
	ctx := context.Background()
	start := lastSeq(t)

	parent, err := svc.Create(ctx, team, user, executed(team, "kyra", "Audit the payment service", 90), false)
	require.NoError(t, err)
	done := waitTask(t, svc, team, parent.ID, 90*time.Second)
	require.Equal(t, tasks.Completed, done.Status, done.Error)

	subs, _, err := svc.List(ctx, team, tasks.Filter{Parent: parent.ID}, pageOf(10))
	require.NoError(t, err)
	require.Len(t, subs, 2, "both calls of the response delegated")
	fanOutBudgets(t, start, team, parent.ID, len(subs))
	var lastEnd time.Time
	byAgent := map[string]tasks.Task{}
	for _, s := range subs {
		byAgent[s.Assignee] = s
		assert.Equal(t, tasks.Completed, s.Status, s.Error)
		assert.Equal(t, 1, s.Depth)
		assert.Equal(t, tasks.Creator{Type: "agent", ID: "kyra"}, s.CreatedBy)
		require.NotNil(t, s.CompletedAt)
		if s.CompletedAt.After(lastEnd) {
			lastEnd = *s.CompletedAt
		}
		got, err := svc.Get(ctx, team, s.ID)
		require.NoError(t, err)
		// Each child carried a token of the parent's execution, unless it
		// had ended before the parent's wait on it registered: then the
		// wait was answered at once (tasks.Await), with no token stored.
		// Either way one wait per child (below).
		assert.LessOrEqual(t, countEvents(got, "awaited", ""), 1, "at most one token per child")
		// The synthesis carries each child's own result.
		assert.Contains(t, done.Result, "task "+s.ID+" by "+s.Assignee+" completed: "+firstWords(s.Result))
	}
	assert.Contains(t, byAgent, "luke")
	assert.Contains(t, byAgent, "dana")

	// One response, two calls; one wait; one resumed attempt, started
	// after the last child ended; each result recorded once.
	assert.Equal(t, 2, done.ToolCalls)
	assert.Equal(t, 2, countEvents(done, "tool_call", ""))
	assert.Equal(t, 2, countEvents(done, "tool_result", ""))
	assert.Equal(t, 2, countEvents(done, "progress", "attempt started"))
	assert.Equal(t, 1, countEvents(done, "progress", "attempt waiting for a delegated task"))
	var resumedAt []time.Time
	for _, ev := range done.Events {
		if ev.Type == "progress" && ev.Payload["message"] == "attempt started" && ev.Payload["resumed"] == true {
			resumedAt = append(resumedAt, ev.At)
		}
	}
	require.Len(t, resumedAt, 1, "the parent was woken once")
	assert.False(t, resumedAt[0].Before(lastEnd), "…after its last child ended (%s < %s)", resumedAt[0], lastEnd)

	// The machine: the worker ran twice around one AwaitChildren Map
	// holding one AwaitChild per child.
	d, history := waitExecution(t, c, done.Execution)
	assert.Equal(t, "SUCCEEDED", string(d.Status))
	entered := statesEntered(history)
	assert.Equal(t, 2, count(entered, "RunTask"))
	assert.Equal(t, 1, count(entered, "AwaitChildren"))
	assert.Equal(t, 2, count(entered, "AwaitChild"))
	assert.Equal(t, 1, count(entered, "ResumeTask"))
	// The resumed worker's input carries the saved conversation once: in
	// resume.state, the last outcome's copy dropped (DropSavedOutcome).
	var inputs []string
	for _, h := range history {
		if h.StateEnteredEventDetails != nil && aws.ToString(h.StateEnteredEventDetails.Name) == "RunTask" {
			inputs = append(inputs, aws.ToString(h.StateEnteredEventDetails.Input))
		}
	}
	require.Len(t, inputs, 2)
	var resumed struct {
		Outcome map[string]any `json:"outcome"`
		Resume  struct {
			State json.RawMessage `json:"state"`
		} `json:"resume"`
	}
	require.NoError(t, json.Unmarshal([]byte(inputs[1]), &resumed))
	assert.Empty(t, resumed.Outcome, "no second copy of the saved conversation")
	assert.NotEmpty(t, resumed.Resume.State)
}

// A fan-out with one colleague at the limit: that call is refused (a tool
// error the model reads), the other child runs, and the parent completes
// with both answers.
func TestDelegationFanOutWithOneRefusedChildCompletes(t *testing.T) {
	e := mustEnv(t)
	team := mustTeam(t, e)
	mustAgent(t, e, team, "kyra", &agents.Model{Script: "delegate2:luke,dana"})
	mustAgent(t, e, team, "luke", nil)
	mustAgent(t, e, team, "dana", nil)
	svc, _ := taskService(t, e)
	ctx := context.Background()
	// dana holds 5 tasks: her slots are full.
	holdSlots(t, svc, team, "luke", "dana", tasks.MaxActivePerAgent)

	parent, err := svc.Create(ctx, team, user, executed(team, "kyra", "Audit the payment service", 90), false)
	require.NoError(t, err)
	done := waitTask(t, svc, team, parent.ID, 90*time.Second)
	require.Equal(t, tasks.Completed, done.Status, done.Error)

	subs, _, err := svc.List(ctx, team, tasks.Filter{Parent: parent.ID}, pageOf(10))
	require.NoError(t, err)
	require.Len(t, subs, 1, "the refused child was not created")
	assert.Equal(t, "luke", subs[0].Assignee)
	assert.Equal(t, tasks.Completed, subs[0].Status)
	assert.Contains(t, done.Result, "task "+subs[0].ID+" by luke completed")
	assert.Contains(t, done.Result, "rejected (ConcurrencyLimit)")
	assert.Equal(t, tasks.MaxActivePerAgent, load(t, svc, team, "dana"))
	assert.Equal(t, 2, countEvents(done, "tool_result", ""))
}

// fanOutBudgets holds the parent's steps to their call budgets (as
// TestAWSCallBudgetsPerOperation holds a delegated task's) and logs them:
// the fan-out attempt, one await per child, the resumed attempt.
func fanOutBudgets(t *testing.T, since int64, team, parentID string, children int) {
	t.Helper()
	all, _ := invocations(t, since, "", team)
	byStep := map[string][]invocation{}
	for _, inv := range all {
		if inv.TaskID != parentID {
			continue
		}
		name := inv.Function
		if inv.Action != "" {
			name += " " + inv.Action
		}
		byStep[name] = append(byStep[name], inv)
	}
	workers := byStep["task-worker"]
	require.Len(t, workers, 2, "the parent's worker ran twice: the fan-out and the resume")
	n := children
	for _, st := range []struct {
		name string
		inv  []invocation
		max  calls
	}{
		// A task-worker attempt (see TestAWSCallBudgetsPerOperation: 12
		// DynamoDB calls with its memory context built, 3 of them
		// transactions), plus per child its tool call recorded (a read and
		// a transaction) and its create (the parent read, the one
		// transaction of every limit, announced, its execution started),
		// and the watch's reads that the task still runs (one per
		// worker.WatchInterval the attempt ran: creating two children on a
		// loaded machine outlasts one), and the team's approval policy,
		// read once at the attempt's first response with tool calls
		// (docs/approvals.md). Each attempt's model call is charged to
		// the team's budget (charged; the first, the team's first).
		{"task-worker (a fan-out of 2)", workers[:1], charged(calls{"DynamoDB": 12 + 4*n + watchReads(workers[0]) + 1, "DynamoDB.TransactWriteItems": 3 + 2*n, "EventBridge": n, "SFN": n, "BedrockRuntime": 1}, 1, true)},
		// Per child: the parent (still running for this execution), the
		// child, its token stored in one conditional write (or, ended
		// already, the token sent at once). The children's waits register
		// at once on the same parent, so one may lose a transaction
		// conflict and run again once (a read and the write): at most
		// five calls.
		{"task-lifecycle await (per child)", byStep["task-lifecycle await"], calls{"DynamoDB": 5, "DynamoDB.TransactWriteItems": 2, "SFN": 1}},
		// The resumed attempt: its start, every child's result in one
		// write, its end; the memory context cached by the first; and,
		// as the first, the watch's reads while it ran.
		{"task-worker (resumed with 2 results)", workers[1:], charged(calls{"DynamoDB": 10 + watchReads(workers[1]), "DynamoDB.TransactWriteItems": 3, "BedrockRuntime": 1}, 1, false)},
	} {
		require.NotEmpty(t, st.inv, st.name)
		for _, inv := range st.inv {
			within(t, st.name, inv.Calls, st.max)
		}
		t.Logf("| %s | %v |", st.name, st.inv[0].Calls)
	}
	assert.Len(t, byStep["task-lifecycle await"], n, "one await per child")
}

// firstWords is the start of a result, enough to find it in the parent's
// synthesis (which may clip it).
func firstWords(s string) string {
	if len(s) > 40 {
		s = s[:40]
	}
	return strings.TrimSpace(s)
}
