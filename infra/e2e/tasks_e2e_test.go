//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func mkAgent(t *testing.T, c client, prefix string) string {
	t.Helper()
	slug := uniqueSlug(prefix)
	r := c.do("POST", "/v1/agents", agentBody(slug))
	require.Equal(t, 201, r.Status, string(r.Body))
	return slug
}

func eventTypesOf(t *testing.T, task map[string]any) []string {
	t.Helper()
	var out []string
	evs, _ := task["events"].([]any)
	for _, e := range evs {
		out = append(out, e.(map[string]any)["type"].(string))
	}
	return out
}

func TestTaskBoardLifecycleOverHTTP(t *testing.T) {
	me, _ := clients(t)
	slug := mkAgent(t, me, "board")
	r := me.do("POST", "/v1/tasks", map[string]any{"assignee": slug, "title": "Summarize the quarterly report", "type": "summarize", "priority": "high"})
	require.Equal(t, 201, r.Status, string(r.Body))
	task := r.JSON(t)
	id := task["id"].(string)
	assert.Equal(t, "queued", task["status"])
	assert.Equal(t, "user", task["created_by"].(map[string]any)["type"])

	assert.Equal(t, "running", me.do("POST", "/v1/tasks/"+id+"/start", nil).JSON(t)["status"])
	assert.Equal(t, "blocked", me.do("POST", "/v1/tasks/"+id+"/block", map[string]any{"reason": "waiting for data"}).JSON(t)["status"])
	assert.Equal(t, "running", me.do("POST", "/v1/tasks/"+id+"/start", nil).JSON(t)["status"])
	done := me.do("POST", "/v1/tasks/"+id+"/complete", map[string]any{"output": "15 pages; revenue up 4%"})
	require.Equal(t, 200, done.Status, string(done.Body))
	assert.Equal(t, "completed", done.JSON(t)["status"])

	// Terminal: every further verb is 409 with the current status, and
	// nothing changes.
	for _, verb := range []string{"start", "complete", "cancel", "block"} {
		bad := me.do("POST", "/v1/tasks/"+id+"/"+verb, nil)
		assert.Equal(t, 409, bad.Status, verb)
		code, _, reason := bad.ErrorFields(t)
		assert.Equal(t, "conflict", code)
		assert.Equal(t, "InvalidTransition", reason)
		assert.Equal(t, "completed", bad.JSON(t)["error"].(map[string]any)["details"].(map[string]any)["status"])
	}
	bad := me.do("POST", "/v1/tasks/"+id+"/assign", map[string]any{"assignee": "luke"})
	assert.Equal(t, 409, bad.Status, "terminal tasks cannot be reassigned")
	got := me.do("GET", "/v1/tasks/"+id, nil).JSON(t)
	assert.Equal(t, "15 pages; revenue up 4%", got["result"])
	assert.Equal(t, []string{"created", "started", "blocked", "resumed", "completed"}, eventTypesOf(t, got))
	assert.EqualValues(t, 0, me.do("GET", "/v1/agents/"+slug+"/load", nil).JSON(t)["active_tasks"])

	list := me.do("GET", "/v1/tasks?assignee="+slug+"&status=completed", nil)
	require.Equal(t, 200, list.Status)
	assert.Len(t, list.JSON(t)["items"], 1)
}

func TestTaskInputErrorsNameTheField(t *testing.T) {
	me, _ := clients(t)
	slug := mkAgent(t, me, "val")
	for _, c := range []struct {
		body  any
		field string
	}{
		{map[string]any{"title": "x"}, "assignee"},
		{map[string]any{"assignee": slug}, "title"},
		{map[string]any{"assignee": slug, "title": "x", "type": "dance"}, "type"},
		{map[string]any{"assignee": slug, "title": "x", "budgets": map[string]any{"max_tokens": 9000}}, "budgets.max_tokens"},
		{map[string]any{"assignee": slug, "title": "x", "colour": "red"}, "colour"},
	} {
		r := me.do("POST", "/v1/tasks", c.body)
		assert.Equal(t, 400, r.Status, string(r.Body))
		_, field, _ := r.ErrorFields(t)
		assert.Equal(t, c.field, field)
	}
	assert.Equal(t, 400, me.do("GET", "/v1/tasks?status=sleeping", nil).Status)
	assert.Equal(t, 400, me.do("GET", "/v1/tasks/task_x?wait=99", nil).Status)
	assert.Empty(t, me.do("GET", "/v1/tasks?assignee="+slug, nil).JSON(t)["items"], "bad input wrote nothing")
	r := me.do("POST", "/v1/tasks", map[string]any{"assignee": slug, "title": "x", "created_by_agent": slug})
	assert.Equal(t, 400, r.Status)
	_, _, reason := r.ErrorFields(t)
	assert.Equal(t, "SelfDelegation", reason)
}

func TestTasksAreInvisibleToOtherTeams(t *testing.T) {
	me, other := clients(t)
	slug := mkAgent(t, me, "iso")
	theirs := mkAgent(t, other, "iso")
	id := me.do("POST", "/v1/tasks", map[string]any{"assignee": slug, "title": "private"}).JSON(t)["id"].(string)

	assert.Equal(t, 404, other.do("GET", "/v1/tasks/"+id, nil).Status)
	for _, verb := range []string{"start", "cancel", "complete"} {
		assert.Equal(t, 404, other.do("POST", "/v1/tasks/"+id+"/"+verb, nil).Status, verb)
	}
	assert.Equal(t, 404, other.do("POST", "/v1/tasks/"+id+"/assign", map[string]any{"assignee": theirs}).Status)
	assert.Equal(t, 404, me.do("POST", "/v1/tasks/"+id+"/assign", map[string]any{"assignee": theirs}).Status, "another team's agent is not found")
	assert.Equal(t, 404, me.do("POST", "/v1/tasks", map[string]any{"assignee": theirs, "title": "x"}).Status)
	assert.NotContains(t, string(other.do("GET", "/v1/tasks?limit=100", nil).Body), id)
	assert.Equal(t, "queued", me.do("GET", "/v1/tasks/"+id, nil).JSON(t)["status"], "the other team changed nothing")
	me.do("POST", "/v1/tasks/"+id+"/cancel", nil)
}

func TestDelegateAndWaitForTheResult(t *testing.T) {
	me, _ := clients(t)
	lead, helper := mkAgent(t, me, "lead"), mkAgent(t, me, "help")
	parent := me.do("POST", "/v1/tasks", map[string]any{"assignee": lead, "title": "Audit the auth module"}).JSON(t)["id"].(string)
	require.Equal(t, 200, me.do("POST", "/v1/tasks/"+parent+"/start", nil).Status)

	r := me.do("POST", "/v1/tasks/"+parent+"/delegate", map[string]any{
		"assignee": helper, "title": "Review password hashing", "instructions": "Check the bcrypt cost factor in src/auth", "type": "review",
	})
	require.Equal(t, 201, r.Status, string(r.Body))
	child := r.JSON(t)
	assert.EqualValues(t, 1, child["delegation_depth"])
	assert.Equal(t, lead, child["created_by"].(map[string]any)["id"])

	got := me.do("GET", "/v1/tasks/"+child["id"].(string)+"?wait=20", nil)
	require.Equal(t, 200, got.Status)
	body := got.JSON(t)
	assert.Equal(t, "completed", body["status"], "the delegation executed and its result is back")
	assert.Contains(t, body["result"], "bcrypt")
	assert.Contains(t, string(me.do("GET", "/v1/tasks?parent_task_id="+parent, nil).Body), child["id"].(string))

	back := me.do("POST", "/v1/tasks/"+parent+"/delegate", map[string]any{"assignee": lead, "title": "loop"})
	assert.Equal(t, 400, back.Status, "the parent's assignee cannot delegate to itself")
	me.do("POST", "/v1/tasks/"+parent+"/complete", map[string]any{"output": "ok"})
}

// Racing creates for one agent stop at five, in every one of many rounds,
// and cancelling them gives every slot back.
func TestConcurrentCreatesStopAtFivePerAgent(t *testing.T) {
	me, _ := clients(t)
	const rounds = 10
	for r := range rounds {
		concurrentCreatesRound(t, me, r)
	}
}

func concurrentCreatesRound(t *testing.T, me client, round int) {
	slug := mkAgent(t, me, "busy")
	// The racing tasks are delegated (not executed) from a running work
	// item of another agent's: they hold slots and stay queued. Work items
	// hold no slot (TestTenWorkItemsForOneAgentAreAllAccepted).
	lead := mkAgent(t, me, "lead")
	r := me.do("POST", "/v1/tasks", map[string]any{"assignee": lead, "title": "coordinate"})
	require.Equal(t, 201, r.Status, string(r.Body))
	parent := r.JSON(t)["id"].(string)
	require.Equal(t, 200, me.do("POST", "/v1/tasks/"+parent+"/start", nil).Status)
	const n = 20
	statuses := make([]int, n)
	reasons := make([]string, n)
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := me.do("POST", "/v1/tasks", map[string]any{"assignee": slug, "title": fmt.Sprintf("part %d", i), "parent_task_id": parent, "execute": false})
			statuses[i] = r.Status
			if r.Status == 201 {
				ids[i] = r.JSON(t)["id"].(string)
			} else {
				_, _, reasons[i] = r.ErrorFields(t)
			}
		}()
	}
	wg.Wait()
	created, limited := 0, 0
	for i, s := range statuses {
		switch {
		case s == 201:
			created++
		case s == 429 && reasons[i] == "ConcurrencyLimit":
			limited++
		}
	}
	require.Equal(t, 5, created, "round %d", round)
	require.Equal(t, n-5, limited, "round %d", round)
	assert.EqualValues(t, 5, me.do("GET", "/v1/agents/"+slug+"/load", nil).JSON(t)["active_tasks"])
	for _, id := range ids {
		if id != "" {
			assert.Equal(t, 200, me.do("POST", "/v1/tasks/"+id+"/cancel", map[string]any{"reason": "test over"}).Status)
		}
	}
	assert.EqualValues(t, 0, me.do("GET", "/v1/agents/"+slug+"/load", nil).JSON(t)["active_tasks"])
}

// BenchmarkCreateAndCancelTask measures the task write path end to end: one
// POST /v1/tasks (the create transaction: task, event, slot counter, agent
// check) and one cancel (transition transaction releasing the slot).
func BenchmarkCreateAndCancelTask(b *testing.B) {
	t := &testing.T{}
	me, _ := clients(t)
	me.T = t
	slug := uniqueSlug("bench")
	if r := me.do("POST", "/v1/agents", agentBody(slug)); r.Status != 201 {
		b.Fatalf("create agent: %d %s", r.Status, r.Body)
	}
	for b.Loop() {
		r := me.do("POST", "/v1/tasks", map[string]any{"assignee": slug, "title": "bench"})
		if r.Status != 201 {
			b.Fatalf("create: %d %s", r.Status, r.Body)
		}
		var task struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(r.Body, &task)
		if c := me.do("POST", "/v1/tasks/"+task.ID+"/cancel", nil); c.Status != 200 {
			b.Fatalf("cancel: %d %s", c.Status, c.Body)
		}
	}
}

// Work items (board tasks) hold no slot: ten for one agent are all
// accepted over HTTP, the load route counts them in the agent's queue and
// not in its active tasks, and one started has no deadline.
func TestTenWorkItemsForOneAgentAreAllAccepted(t *testing.T) {
	me, _ := clients(t)
	slug := mkAgent(t, me, "board")
	var ids []string
	for i := range 10 {
		r := me.do("POST", "/v1/tasks", map[string]any{"assignee": slug, "title": fmt.Sprintf("board work %d", i)})
		require.Equal(t, 201, r.Status, string(r.Body))
		ids = append(ids, r.JSON(t)["id"].(string))
	}
	load := me.do("GET", "/v1/agents/"+slug+"/load", nil).JSON(t)
	assert.EqualValues(t, 0, load["active_tasks"])
	assert.EqualValues(t, 10, load["queued_work_items"])
	assert.EqualValues(t, 1000, load["queue_limit"])

	r := me.do("POST", "/v1/tasks/"+ids[0]+"/start", nil)
	require.Equal(t, 200, r.Status, string(r.Body))
	started := r.JSON(t)
	assert.Equal(t, "running", started["status"])
	assert.NotContains(t, started, "deadline", "a work item has no 120 s deadline")
	load = me.do("GET", "/v1/agents/"+slug+"/load", nil).JSON(t)
	assert.EqualValues(t, 0, load["active_tasks"])
	assert.EqualValues(t, 9, load["queued_work_items"])
}
