//go:build integration

// Collaboration sessions that do not simply complete: a hanging agent and
// the deadline, a failing worker and the dead-letter queue, cancel, a
// human's approval, resume, and the five-per-agent limit inside sessions.
package cloud_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/aws/executions"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/work/sessions"
)

func twoContributors(a, b string) []any {
	return []any{part(a, "contributor", 0), part(b, "contributor", 0)}
}

// waitSessionDeadLetter waits for the session's payload on the sessions
// dead-letter queue.
func waitSessionDeadLetter(t *testing.T, e env, id string) map[string]any {
	t.Helper()
	body := awaitMessage(t, e, "session-dlq", 30*time.Second, func(body string) bool {
		var probe struct {
			SessionID string `json:"session_id"`
		}
		_ = json.Unmarshal([]byte(body), &probe)
		return probe.SessionID == id
	})
	out := map[string]any{}
	require.NoError(t, json.Unmarshal([]byte(body), &out))
	return out
}

func TestSessionHangingAgentEndsTimedOutByItsDeadline(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	d.script(e, "archie", "timeout")
	started := time.Now()
	id := d.start(map[string]any{"pattern": "brainstorm", "max_duration_seconds": 3, "participants": twoContributors("luke", "archie")})
	s := d.waitSession(id, 3*time.Second+sessions.SweepGrace+10*time.Second)
	assert.Equal(t, "timed_out", s["status"], s)
	assert.Equal(t, "DeadlineExceeded", s["status_reason"])
	assert.Less(t, time.Since(started), 3*time.Second+sessions.SweepGrace+10*time.Second)
	assert.Equal(t, "timed_out", d.trace(id)["outcome"])
	dl := waitSessionDeadLetter(t, e, id)
	assert.Contains(t, dl, "error", "the full payload with the error is on the dead-letter queue")
}

// An execution that ends without its Catch running (stopped here; one that
// times out is the same) leaves the session unfinished: the sweeper ends it
// timed_out once its deadline and the grace have passed.
func TestSessionSweeperEndsSessionsWhoseExecutionIsGone(t *testing.T) {
	e := mustSerialEnv(t)
	d := mustDemoTeam(t, e)
	d.script(e, "archie", "timeout")
	id := d.start(map[string]any{"pattern": "brainstorm", "max_duration_seconds": 60, "participants": twoContributors("luke", "archie")})
	s := d.waitSession(id, 20*time.Second, "active")
	c := sfn.NewFromConfig(e.cfg)
	_, err := c.StopExecution(context.Background(), &sfn.StopExecutionInput{ExecutionArn: aws.String(s["execution_arn"].(string))})
	require.NoError(t, err)

	svc := &sessions.Service{Store: e.db.sessions, Log: slog.Default(), Workflows: &executions.Starter{Client: c, ARNs: map[string]string{}}}
	deadline, err := time.Parse(time.RFC3339Nano, s["deadline"].(string))
	require.NoError(t, err)
	svc.Now = func() time.Time { return deadline.Add(sessions.SweepGrace - time.Second) }
	_, err = svc.Sweep(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "active", d.waitSession(id, time.Second, "active")["status"], "not before the grace has passed")
	svc.Now = func() time.Time { return deadline.Add(sessions.SweepGrace + time.Second) }
	n, err := svc.Sweep(context.Background())
	require.NoError(t, err)
	assert.Positive(t, n)
	got := d.waitSession(id, time.Second)
	assert.Equal(t, "timed_out", got["status"])
	out, err := invokeFunction(t, e, "task-sweeper", `{"source":"aws.events","detail-type":"Scheduled Event"}`)
	require.NoError(t, err)
	assert.Contains(t, out, "sessions_timed_out", "the scheduled sweeper sweeps sessions too")
}

func TestSessionFailingWorkerIsRetriedTwiceThenDeadLettered(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	d.script(e, "archie", "fail")
	id := d.start(map[string]any{"pattern": "supervisor_worker", "participants": []any{part("luke", "worker", 0), part("archie", "worker", 0)}})
	s := d.waitSession(id, 60*time.Second)
	require.Equal(t, "failed", s["status"], s)
	assert.Equal(t, "StageFailed", s["status_reason"])
	dl := waitSessionDeadLetter(t, e, id)
	assert.Equal(t, "ModelFailed", dl["error"].(map[string]any)["Error"])
	c := sfn.NewFromConfig(e.cfg)
	desc, h := waitExecution(t, c, s["execution_arn"].(string))
	assert.Equal(t, sfntypes.ExecutionStatusFailed, desc.Status)
	failures := 0
	for _, ev := range h {
		if ev.Type == sfntypes.HistoryEventTypeTaskFailed && ev.TaskFailedEventDetails != nil && aws.ToString(ev.TaskFailedEventDetails.Error) == "ModelFailed" {
			failures++
		}
	}
	assert.Equal(t, 3, failures, "one attempt and two retries")
	assert.Contains(t, statesEntered(h), "DeadLetter")
	assert.Contains(t, statesEntered(h), "MarkFailed")
	st, list := d.call("GET", "/v1/tasks?assignee=archie&status=failed", nil)
	require.Equal(t, 200, st)
	assert.Len(t, list["items"], 3, "each attempt was a task of the task model, failed")
}

func TestSessionCancelStopsTheExecution(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	d.script(e, "archie", "timeout")
	id := d.start(map[string]any{"pattern": "brainstorm", "participants": twoContributors("luke", "archie")})
	d.waitSession(id, 20*time.Second, "active")
	st, s := d.call("POST", "/v1/sessions/"+id+"/cancel", nil)
	require.Equal(t, 200, st, s)
	assert.Equal(t, "cancelled", s["status"])
	// In AWS the execution ends ABORTED at once; moto lets the state under
	// way finish and then ends the stopped execution FAILED (as with
	// tasks, see TestCancelStopsTheExecution). Either way it never
	// completes or marks the session.
	desc, h := waitExecution(t, sfn.NewFromConfig(e.cfg), s["execution_arn"].(string))
	assert.Contains(t, []sfntypes.ExecutionStatus{sfntypes.ExecutionStatusAborted, sfntypes.ExecutionStatusFailed}, desc.Status)
	assert.NotContains(t, statesEntered(h), "Complete")
	assert.NotContains(t, statesEntered(h), "Synthesize")
	assert.Equal(t, "cancelled", d.waitSession(id, time.Second)["status"], "nothing changes a cancelled session afterwards")
	st, again := d.call("POST", "/v1/sessions/"+id+"/cancel", nil)
	assert.Equal(t, 409, st, again)
	require.Eventually(t, func() bool {
		_, list := d.call("GET", "/v1/agents/archie/load", nil)
		return list["active_tasks"] == float64(0)
	}, 10*time.Second, 200*time.Millisecond, "the stage under way stopped and gave its slot back")
}

func TestSessionWaitsForAHumanWithoutPollingThenApproveOrReject(t *testing.T) {
	e := mustEnv(t)
	for _, decision := range []string{"approve", "reject"} {
		t.Run(decision, func(t *testing.T) {
			d := mustDemoTeam(t, e)
			id := d.start(map[string]any{"pattern": "brainstorm", "approval": "final", "participants": twoContributors("luke", "archie")})
			s := d.waitSession(id, 60*time.Second, "awaiting_approval")
			assert.NotEmpty(t, s["final_output"])
			time.Sleep(time.Second) // the await step's own return is recorded
			c := sfn.NewFromConfig(e.cfg)
			arn := s["execution_arn"].(string)
			before, err := c.GetExecutionHistory(context.Background(), &sfn.GetExecutionHistoryInput{ExecutionArn: &arn, MaxResults: 1000})
			require.NoError(t, err)
			time.Sleep(3 * time.Second)
			after, err := c.GetExecutionHistory(context.Background(), &sfn.GetExecutionHistoryInput{ExecutionArn: &arn, MaxResults: 1000})
			require.NoError(t, err)
			assert.Equal(t, len(before.Events), len(after.Events), "nothing runs while the session waits (a task token, no polling)")
			assert.Equal(t, "AwaitApproval", lastState(after.Events))

			st, res := d.call("POST", "/v1/sessions/"+id+"/approve", map[string]any{"decision": decision, "comment": "looked at it"})
			require.Equal(t, 200, st, res)
			end := d.waitSession(id, 30*time.Second)
			if decision == "approve" {
				assert.Equal(t, "completed", end["status"])
			} else {
				assert.Equal(t, "failed", end["status"])
				assert.Equal(t, "RejectedByHuman", end["status_reason"])
			}
			st, _ = d.call("POST", "/v1/sessions/"+id+"/approve", map[string]any{"decision": decision})
			assert.Equal(t, 409, st, "only a session awaiting approval takes a decision")
		})
	}
}

func lastState(h []sfntypes.HistoryEvent) string {
	states := statesEntered(h)
	if len(states) == 0 {
		return ""
	}
	return states[len(states)-1]
}

func TestSessionResumeMakesNoModelCallForDoneStages(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	d.script(e, "archie", "fail")
	id := d.start(map[string]any{"pattern": "pipeline", "participants": []any{part("luke", "worker", 1), part("archie", "worker", 2), part("sage", "worker", 3)}})
	failed := d.waitSession(id, 60*time.Second)
	require.Equal(t, "failed", failed["status"], failed)
	require.Len(t, failed["stage_outputs"], 1, "stage 1 completed before stage 2 failed")
	stage1 := failed["stage_outputs"].([]any)[0].(map[string]any)
	callsBefore := failed["model_calls"].(float64)

	_, err := agents.NewService(e.db.agents).Update(context.Background(), d.id, "archie", agents.UpdateInput{Model: &agents.Model{Provider: "local"}})
	require.NoError(t, err)
	st, res := d.call("POST", "/v1/sessions/"+id+"/resume", nil)
	require.Equal(t, 200, st, res)
	assert.True(t, strings.HasSuffix(res["execution_arn"].(string), ":"+id+"-r1"), res["execution_arn"])
	done := d.waitSession(id, 60*time.Second)
	require.Equal(t, "completed", done["status"], done)
	outs := done["stage_outputs"].([]any)
	require.Len(t, outs, 3)
	assert.Equal(t, stage1, outs[0], "stage 1's stored output is reused as it was")
	assert.Equal(t, callsBefore+2, done["model_calls"], "one model call per remaining stage, none for stage 1")
	st, _ = d.call("POST", "/v1/sessions/"+id+"/resume", nil)
	assert.Equal(t, 409, st, "a completed session does not resume")
}

// holdFive fills slug's five slots over HTTP with tasks delegated (not
// executed) from a running work item of kyra's (work items hold none):
// they stay queued. It returns the parent and the five tasks.
func (d demoTeam) holdFive(slug string) (parent string, held []string) {
	d.t.Helper()
	st, res := d.call("POST", "/v1/tasks", map[string]any{"assignee": "kyra", "title": "coordinate"})
	require.Equal(d.t, 201, st, res)
	parent = res["id"].(string)
	st, res = d.call("POST", "/v1/tasks/"+parent+"/start", nil)
	require.Equal(d.t, 200, st, res)
	for i := 0; i < 5; i++ {
		st, res := d.call("POST", "/v1/tasks", map[string]any{"assignee": slug, "title": "busy work", "parent_task_id": parent, "execute": false})
		require.Equal(d.t, 201, st, res)
		held = append(held, res["id"].(string))
	}
	return parent, held
}

// A stage whose agent holds its five tasks waits in the workflow instead
// of failing: the session shows the wait (luke waiting_for_slot, a
// slot_waits entry), no sixth slot is taken, and when one of luke's tasks
// ends its slot is handed to the stage in the same transaction, so a
// delegation racing for it right after is still refused; the stage then
// runs on that slot and the session completes.
func TestSessionStageWaitsForASlot(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	parent, held := d.holdFive("luke")
	id := d.start(map[string]any{"pattern": "brainstorm", "participants": twoContributors("luke", "archie")})

	var waiting map[string]any
	require.Eventually(t, func() bool {
		_, waiting = d.call("GET", "/v1/sessions/"+id, nil)
		waits, _ := waiting["slot_waits"].([]any)
		return len(waits) == 1
	}, 60*time.Second, 200*time.Millisecond, "the stage waits for a slot")
	assert.Equal(t, "active", waiting["status"], waiting)
	w := waiting["slot_waits"].([]any)[0].(map[string]any)
	assert.Equal(t, "luke", w["agent"])
	assert.Nil(t, w["granted_at"])
	assert.Contains(t, fmt.Sprint(waiting["participants"]), "waiting_for_slot")
	time.Sleep(2 * time.Second) // nothing polls: still waiting, no sixth slot
	_, load := d.call("GET", "/v1/agents/luke/load", nil)
	assert.EqualValues(t, 5, load["active_tasks"], "the session never took a sixth slot")
	_, still := d.call("GET", "/v1/sessions/"+id, nil)
	assert.Equal(t, "active", still["status"])

	// One of luke's tasks ends: its slot goes to the stage, not to the
	// delegation racing for it.
	st, res := d.call("POST", "/v1/tasks/"+held[0]+"/cancel", map[string]any{"reason": "make room"})
	require.Equal(t, 200, st, res)
	st, res = d.call("POST", "/v1/tasks", map[string]any{"assignee": "luke", "title": "racing", "parent_task_id": parent, "execute": false})
	assert.Equal(t, 429, st, "the freed slot was handed to the waiting stage: %v", res)

	s := d.waitSession(id, 60*time.Second)
	require.Equal(t, "completed", s["status"], s)
	w = s["slot_waits"].([]any)[0].(map[string]any)
	assert.NotNil(t, w["granted_at"], "the trace shows when the slot came")
	_, load = d.call("GET", "/v1/agents/luke/load", nil)
	assert.EqualValues(t, 4, load["active_tasks"], "the stage's slot was given back; the other four are held")
}

// A session cancelled while a stage waits for a slot leaves nothing
// behind: its ticket is dropped when it ends, so the next slot luke frees
// is released (his load falls), not handed to a stage nobody runs.
func TestACancelledSessionLeavesNoTicketBehind(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	parent, held := d.holdFive("luke")
	id := d.start(map[string]any{"pattern": "brainstorm", "participants": twoContributors("luke", "archie")})
	require.Eventually(t, func() bool {
		_, s := d.call("GET", "/v1/sessions/"+id, nil)
		waits, _ := s["slot_waits"].([]any)
		return len(waits) == 1
	}, 60*time.Second, 200*time.Millisecond, "the stage waits for a slot")

	st, res := d.call("POST", "/v1/sessions/"+id+"/cancel", nil)
	require.Equal(t, 200, st, res)
	st, res = d.call("POST", "/v1/tasks/"+held[0]+"/cancel", map[string]any{"reason": "make room"})
	require.Equal(t, 200, st, res)
	_, load := d.call("GET", "/v1/agents/luke/load", nil)
	assert.EqualValues(t, 4, load["active_tasks"], "the freed slot was released, not handed to the cancelled session")
	st, res = d.call("POST", "/v1/tasks", map[string]any{"assignee": "luke", "title": "takes it", "parent_task_id": parent, "execute": false})
	assert.Equal(t, 201, st, "a delegation takes the free slot: %v", res)
}

// The cost cap holds under concurrency on DynamoDB Local: 40 racing
// charges of $0.03 against a $0.50 cap, while the session is also being
// rewritten from stale reads; exactly 16 land and the total never
// crosses the cap.
func TestSessionCostCapHoldsUnderConcurrentCharges(t *testing.T) {
	e := mustEnv(t)
	ctx := context.Background()
	team := mustTeam(t, e)
	now := time.Now().UTC()
	ses := sessions.Session{TeamID: team, ID: "ses_race" + strings.ToLower(time.Now().Format("150405.000000000")), Pattern: sessions.Brainstorm,
		Lead: "kyra", Goal: "race", MaxDurationSeconds: 600, MaxCostUSD: 0.5, MaxRounds: 5, Status: sessions.Active, Runs: 1, Version: 1,
		CreatedAt: now, UpdatedAt: now}
	require.NoError(t, e.db.sessions.CreateSession(ctx, ses))
	var wg sync.WaitGroup
	var mu sync.Mutex
	landed, refused := 0, 0
	for i := 0; i < 40; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := e.db.sessions.Charge(ctx, team, ses.ID, 0.03, 100)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				landed++
			case errors.Is(err, sessions.ErrBudget):
				refused++
			default:
				t.Errorf("charge: %v", err)
			}
		}()
	}
	// A writer holding a stale read must re-read: its put fails.
	stale := ses
	stale.Version, stale.CurrentStage = ses.Version+1, "stale"
	wg.Wait()
	assert.ErrorIs(t, e.db.sessions.PutSession(ctx, stale), sessions.ErrChanged)
	got, err := e.db.sessions.GetSession(ctx, team, ses.ID)
	require.NoError(t, err)
	assert.Equal(t, 16, landed)
	assert.Equal(t, 24, refused)
	assert.Equal(t, 16, got.ModelCalls)
	assert.LessOrEqual(t, got.TotalCostUSD, 0.5+1e-9)
	assert.True(t, got.BudgetExhausted, "the first refused charge marked the session")
	assert.ErrorIs(t, e.db.sessions.Charge(ctx, team, ses.ID, 0.0001, 1), sessions.ErrBudget, "nothing is charged after the mark")
}
