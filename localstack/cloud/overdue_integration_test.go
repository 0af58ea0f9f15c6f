//go:build integration

package cloud_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	conclaveevents "github.com/conclave-ai/conclave/events"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/team/activity"
)

// overdueTask is a task's answer, as far as the due-date tests read it.
type overdueTask struct {
	ID         string `json:"id"`
	Status     string `json:"status"`
	Overdue    bool   `json:"overdue"`
	OverdueAt  string `json:"overdue_at"`
	Version    int    `json:"version"`
	Escalation *struct {
		ID     string `json:"id"`
		Status string `json:"status"`
		Action string `json:"action"`
	} `json:"escalation"`
	Events []struct {
		Type    string         `json:"type"`
		Payload map[string]any `json:"payload"`
	} `json:"events"`
}

func (d demoTeam) overdueTask(id string) overdueTask {
	d.t.Helper()
	r := d.do("GET", "/v1/tasks/"+id, nil)
	require.Equal(d.t, 200, r.Status, string(r.Body))
	var tk overdueTask
	require.NoError(d.t, json.Unmarshal(r.Body, &tk))
	return tk
}

func (tk overdueTask) count(typ string) int {
	n := 0
	for _, e := range tk.Events {
		if e.Type == typ {
			n++
		}
	}
	return n
}

// pastDue creates a board task for luke that was due a minute ago: it is
// accepted, and overdue at once.
func (d demoTeam) pastDue(title string) string {
	d.t.Helper()
	due := time.Now().UTC().Add(-time.Minute).Format(time.RFC3339)
	r := d.do("POST", "/v1/tasks", map[string]any{"assignee": "luke", "title": title, "due_at": due})
	require.Equal(d.t, 201, r.Status, string(r.Body))
	var tk overdueTask
	require.NoError(d.t, json.Unmarshal(r.Body, &tk))
	assert.True(d.t, tk.Overdue, "a past due_at is overdue at once")
	assert.Empty(d.t, tk.OverdueAt, "flagged by the sweeper")
	return tk.ID
}

// sweepTwiceAtOnce invokes the sweeper function twice concurrently (the
// scheduled one may run beside them too), until the task is flagged.
func sweepTwiceAtOnce(t *testing.T, e env, d demoTeam, id string) overdueTask {
	t.Helper()
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			_, err := invokeFunction(t, e, "task-sweeper", `{"source":"aws.events","detail-type":"Scheduled Event"}`)
			assert.NoError(t, err)
		})
	}
	wg.Wait()
	var tk overdueTask
	require.Eventually(t, func() bool {
		tk = d.overdueTask(id)
		return tk.OverdueAt != ""
	}, 10*time.Second, 200*time.Millisecond, "flagged by a sweep")
	return tk
}

// overdueEvents are the TaskOverdue events of the task in the team's
// activity log, each checked against the schema.
func overdueEvents(t *testing.T, e env, team, id string) []activity.Entry {
	t.Helper()
	list, _, err := e.db.activity.List(context.Background(), team, paging.Page{Limit: 100})
	require.NoError(t, err)
	var out []activity.Entry
	for _, en := range list {
		if en.DetailType == "TaskOverdue" && detailField(t, en, "task_id") == id {
			require.NoError(t, conclaveevents.Validate(en.DetailType, en.Detail))
			out = append(out, en)
		}
	}
	return out
}

// A task created past its due date: the sweepers racing flag it once,
// TaskOverdue is published once, and under the board policy it escalates
// (its escalated event, a task_overdue escalation listed beside the
// consultations'). A bad action is refused with nothing changed; cancel
// ends the task with the note on its timeline.
func TestOverdueTaskEmitsOnceEscalatesAndResolvesWithCancel(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	st, pol := d.call("GET", "/v1/board-policy", nil)
	require.Equal(t, 200, st)
	assert.Equal(t, false, pol["escalate_overdue"], "the default")
	st, pol = d.call("PUT", "/v1/board-policy", map[string]any{"escalate_overdue": true})
	require.Equal(t, 200, st, pol)
	assert.Equal(t, true, pol["escalate_overdue"])

	id := d.pastDue("Ship the release notes")
	tk := sweepTwiceAtOnce(t, e, d, id)
	assert.True(t, tk.Overdue)
	require.NotNil(t, tk.Escalation)
	assert.Equal(t, "open", tk.Escalation.Status)
	assert.Equal(t, 1, tk.count("overdue"), "flagged once")
	assert.Equal(t, 1, tk.count("escalated"), "escalated once")

	en := waitActivity(t, e, d.id, func(en activity.Entry) bool {
		return en.DetailType == "TaskOverdue" && detailField(t, en, "task_id") == id
	})
	assert.Equal(t, tk.Escalation.ID, detailField(t, en, "escalation_id"))
	// Another sweep, and time for any second event to arrive: still one.
	_, err := invokeFunction(t, e, "task-sweeper", `{"source":"aws.events","detail-type":"Scheduled Event"}`)
	require.NoError(t, err)
	time.Sleep(2 * time.Second)
	assert.Len(t, overdueEvents(t, e, d.id, id), 1, "TaskOverdue once")

	st, list := d.call("GET", "/v1/escalations?status=open", nil)
	require.Equal(t, 200, st, list)
	var found map[string]any
	for _, it := range list["items"].([]any) {
		if m := it.(map[string]any); m["id"] == tk.Escalation.ID {
			found = m
		}
	}
	require.NotNil(t, found, "listed beside the consultations' escalations")
	assert.Equal(t, "task_overdue", found["type"])
	assert.Equal(t, id, found["task_id"])

	// Bad input: the field named, nothing changed.
	for _, bad := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"answer": "drop it", "action": "delete"}, "action"},
		{map[string]any{"answer": "", "action": "cancel"}, "answer"},
		{map[string]any{"answer": "drop it", "action": 3}, "action"},
	} {
		r := d.do("POST", "/v1/escalations/"+tk.Escalation.ID+"/resolve", bad.body)
		require.Equal(t, 400, r.Status, string(r.Body))
		_, field, _ := r.ErrorFields(t)
		assert.Equal(t, bad.field, field)
	}
	same := d.overdueTask(id)
	assert.Equal(t, tk.Version, same.Version, "nothing changed")
	assert.Equal(t, "open", same.Escalation.Status)

	// Cancel, replayed with its Idempotency-Key: one resolution.
	body := map[string]any{"answer": "Not needed this release", "action": "cancel", "resolved_by": "ana"}
	r := d.do("POST", "/v1/escalations/"+tk.Escalation.ID+"/resolve", body, "Idempotency-Key", "resolve-"+id)
	require.Equal(t, 200, r.Status, string(r.Body))
	res := r.JSON(t)
	assert.Equal(t, "resolved", res["status"])
	assert.Equal(t, "cancel", res["action"])
	assert.Equal(t, id, res["task_id"])
	again := d.do("POST", "/v1/escalations/"+tk.Escalation.ID+"/resolve", body, "Idempotency-Key", "resolve-"+id)
	require.Equal(t, 200, again.Status, string(again.Body))
	assert.JSONEq(t, string(r.Body), string(again.Body), "the replay answers the first answer")
	r = d.do("POST", "/v1/escalations/"+tk.Escalation.ID+"/resolve", body)
	require.Equal(t, 409, r.Status, string(r.Body))
	_, _, reason := r.ErrorFields(t)
	assert.Equal(t, "Resolved", reason)

	done := d.overdueTask(id)
	assert.Equal(t, "canceled", done.Status)
	assert.False(t, done.Overdue, "an ended task is not overdue")
	assert.Equal(t, 1, done.count("escalation_resolved"))
	assert.Equal(t, 1, done.count("canceled"))
	for _, ev := range done.Events {
		if ev.Type == "escalation_resolved" {
			assert.Equal(t, "Not needed this release", ev.Payload["note"])
		}
	}
}

// Requeue puts a running overdue task back in its assignee's queue; another
// team sees none of it, cannot resolve it, and has its own policy.
func TestOverdueEscalationRequeueAndIsolation(t *testing.T) {
	e := mustEnv(t)
	d, other := mustDemoTeam(t, e), mustDemoTeam(t, e)
	st, _ := d.call("PUT", "/v1/board-policy", map[string]any{"escalate_overdue": true})
	require.Equal(t, 200, st)
	id := d.pastDue("Migrate the billing table")
	st, started := d.call("POST", "/v1/tasks/"+id+"/start", nil)
	require.Equal(t, 200, st, started)
	tk := sweepTwiceAtOnce(t, e, d, id)
	require.NotNil(t, tk.Escalation)

	st, pol := other.call("GET", "/v1/board-policy", nil)
	require.Equal(t, 200, st)
	assert.Equal(t, false, pol["escalate_overdue"], "each team its own policy")
	st, list := other.call("GET", "/v1/escalations", nil)
	require.Equal(t, 200, st)
	for _, it := range list["items"].([]any) {
		assert.NotEqual(t, tk.Escalation.ID, it.(map[string]any)["id"], "another team's escalation is not listed")
	}
	r := other.do("POST", "/v1/escalations/"+tk.Escalation.ID+"/resolve", map[string]any{"answer": "mine now", "action": "cancel"})
	assert.Equal(t, 404, r.Status, string(r.Body))
	assert.Equal(t, "running", d.overdueTask(id).Status, "another team's resolve changed nothing")

	st, res := d.call("POST", "/v1/escalations/"+tk.Escalation.ID+"/resolve", map[string]any{"answer": "Pick it up again tomorrow", "action": "requeue"})
	require.Equal(t, 200, st, res)
	assert.Equal(t, "requeue", res["action"])
	back := d.overdueTask(id)
	assert.Equal(t, "queued", back.Status)
	assert.True(t, back.Overdue, "still past its due date")
	assert.Equal(t, 1, back.count("escalation_resolved"))
	st, q := d.call("GET", "/v1/tasks?assignee=luke&status=queued&sort=priority", nil)
	require.Equal(t, 200, st, q)
	var ids []string
	for _, it := range q["items"].([]any) {
		ids = append(ids, it.(map[string]any)["id"].(string))
	}
	assert.Contains(t, ids, id, "back in luke's queue")
	// Requeued, it is not flagged or escalated again.
	_, err := invokeFunction(t, e, "task-sweeper", `{"source":"aws.events","detail-type":"Scheduled Event"}`)
	require.NoError(t, err)
	assert.Equal(t, 1, d.overdueTask(id).count("escalated"))
}

// The board policy refuses bad input with the field named, and keeps the
// policy it had.
func TestBoardPolicyBadInput(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	st, _ := d.call("PUT", "/v1/board-policy", map[string]any{"escalate_overdue": true})
	require.Equal(t, 200, st)
	for _, bad := range []struct {
		body  any
		field string
	}{
		{map[string]any{"escalate_overdue": "yes"}, "escalate_overdue"},
		{map[string]any{"escalate_overdue": false, "notify": true}, "notify"},
		{nil, "body"},
	} {
		r := d.do("PUT", "/v1/board-policy", bad.body)
		require.Equal(t, 400, r.Status, string(r.Body))
		_, field, _ := r.ErrorFields(t)
		assert.Equal(t, bad.field, field)
	}
	st, pol := d.call("GET", "/v1/board-policy", nil)
	require.Equal(t, 200, st)
	assert.Equal(t, true, pol["escalate_overdue"], "unchanged")
	// Without the policy an overdue task is flagged and not escalated.
	st, _ = d.call("PUT", "/v1/board-policy", map[string]any{})
	require.Equal(t, 200, st)
	id := d.pastDue("Quiet overdue")
	tk := sweepTwiceAtOnce(t, e, d, id)
	assert.Nil(t, tk.Escalation)
	assert.Zero(t, tk.count("escalated"))
}

// overdueEscalation makes an escalated overdue task of assignee's in d's
// team (the policy on, the task due already, the sweeper run) and returns
// its escalation's id.
func overdueEscalation(t *testing.T, e env, d demoTeam, assignee string) string {
	t.Helper()
	st, _ := d.call("PUT", "/v1/board-policy", map[string]any{"escalate_overdue": true})
	require.Equal(t, 200, st)
	due := time.Now().UTC().Add(-time.Minute).Format(time.RFC3339)
	r := d.do("POST", "/v1/tasks", map[string]any{"assignee": assignee, "title": "Overdue work", "due_at": due})
	require.Equal(t, 201, r.Status, string(r.Body))
	var tk overdueTask
	require.NoError(t, json.Unmarshal(r.Body, &tk))
	tk = sweepTwiceAtOnce(t, e, d, tk.ID)
	require.NotNil(t, tk.Escalation)
	return tk.Escalation.ID
}

// An executed task past its due date, requeued by the human who resolves
// its escalation: its execution is stopped and it runs again under a new
// execution (the consultations function starts it); cancelling it then
// stops that one.
func TestOverdueExecutedTaskRequeuedRunsAgain(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	d.script(e, "sage", "timeout") // sage's model hangs: the task stays running
	st, _ := d.call("PUT", "/v1/board-policy", map[string]any{"escalate_overdue": true})
	require.Equal(t, 200, st)
	due := time.Now().UTC().Add(-time.Minute).Format(time.RFC3339)
	st, created := d.call("POST", "/v1/tasks", map[string]any{"assignee": "sage", "title": "Audit the login flow", "due_at": due,
		"execute": true, "budgets": map[string]any{"timeout_seconds": 60}})
	require.Equal(t, 201, st, created)
	id := created["id"].(string)
	var first map[string]any
	require.Eventually(t, func() bool {
		_, first = d.call("GET", "/v1/tasks/"+id, nil)
		return first["status"] == "running"
	}, 20*time.Second, 100*time.Millisecond)
	tk := sweepTwiceAtOnce(t, e, d, id)
	require.NotNil(t, tk.Escalation)

	st, res := d.call("POST", "/v1/escalations/"+tk.Escalation.ID+"/resolve", map[string]any{"answer": "Run it again", "action": "requeue"})
	require.Equal(t, 200, st, res)
	var again map[string]any
	require.Eventually(t, func() bool {
		_, again = d.call("GET", "/v1/tasks/"+id, nil)
		arn, _ := again["execution_arn"].(string)
		return again["status"] == "running" && arn != "" && arn != first["execution_arn"]
	}, 20*time.Second, 100*time.Millisecond, "running again under a new execution")
	assert.EqualValues(t, 2, again["runs"])
	st, canceled := d.call("POST", "/v1/tasks/"+id+"/cancel", map[string]any{"reason": "enough"})
	require.Equal(t, 200, st, canceled)
}
