//go:build integration

// Results come back (issue 13, items 3 and 4) against the local cloud: the
// end of a task, report or session linked to a conversation is posted into
// it by the result-poster function (bus → rule → SQS → function), once,
// and a client long-polling GET …/messages?after=…&wait=N receives it; a
// conversation_id that is not the team's is 404 with nothing written.
package cloud_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/platform/manifest"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

// pollResult long-polls the conversation from after (wait=20) until a
// message with result_of naming workID arrives (90 s at most), as a chat
// client waits; it returns that message and every message it received.
func (d demoTeam) pollResult(conv, after, workID string) (map[string]any, []map[string]any) {
	d.t.Helper()
	var seen []map[string]any
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		q := url.Values{"after": {after}, "wait": {"20"}}
		st, page := d.call("GET", "/v1/conversations/"+conv+"/messages?"+q.Encode(), nil)
		require.Equal(d.t, 200, st, page)
		for _, it := range page["items"].([]any) {
			m := it.(map[string]any)
			seen = append(seen, m)
			after = m["id"].(string)
			if ref, ok := m["result_of"].(map[string]any); ok && ref["id"] == workID {
				return m, seen
			}
		}
	}
	d.t.Fatalf("no result of %s reached conversation %s (saw %v)", workID, conv, seen)
	return nil, nil
}

// results are the messages of conv posted as the result of workID.
func (d demoTeam) results(conv, workID string) []map[string]any {
	d.t.Helper()
	st, page := d.call("GET", "/v1/conversations/"+conv+"/messages?limit=100", nil)
	require.Equal(d.t, 200, st, page)
	var out []map[string]any
	for _, it := range page["items"].([]any) {
		m := it.(map[string]any)
		if ref, ok := m["result_of"].(map[string]any); ok && ref["id"] == workID {
			out = append(out, m)
		}
	}
	return out
}

// chat opens a conversation with kyra and has one turn, so a client holds
// a last message to long-poll from.
func (d demoTeam) chat() (conv, last string) {
	d.t.Helper()
	conv = d.conversation("kyra")
	turn := d.post(conv, map[string]any{"content": "Can someone look into the login bug?"})
	return conv, lastReply(d.t, turn)["id"].(string)
}

// A fire-and-forget delegation: a task created through POST /v1/tasks
// with the conversation's id runs on the delegation machine; its result
// is posted into the conversation as the assignee's message naming the
// task, and the client long-polling after its last message receives it.
func TestDelegatedTaskResultReachesALongPollingClient(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	conv, last := d.chat()
	st, before := d.call("GET", "/v1/conversations/"+conv, nil)
	require.Equal(t, 200, st)

	st, task := d.call("POST", "/v1/tasks", map[string]any{"assignee": "luke", "title": "Find the login bug", "instructions": "find the bug in login.go",
		"conversation_id": conv, "execute": true})
	require.Equal(t, 201, st, task)
	assert.Equal(t, "conversation", task["result_delivery"])
	id := task["id"].(string)

	m, seen := d.pollResult(conv, last, id)
	assert.Len(t, seen, 1, "nothing else was posted meanwhile: %v", seen)
	st, done := d.call("GET", "/v1/tasks/"+id, nil)
	require.Equal(t, 200, st)
	require.Equal(t, "completed", done["status"], done)
	assert.Equal(t, "assistant", m["role"])
	assert.Equal(t, "luke", m["agent"], "attributed to the agent that did the work")
	assert.Equal(t, done["result"], m["content"])
	assert.Equal(t, "delegated", m["strategy"])
	assert.Equal(t, map[string]any{"type": "task", "id": id, "status": "completed", "agent": "luke"}, m["result_of"])

	st, after := d.call("GET", "/v1/conversations/"+conv, nil)
	require.Equal(t, 200, st)
	assert.Equal(t, before["message_count"].(float64)+1, after["message_count"], "the conversation counts the result")
	assert.Greater(t, after["version"].(float64), before["version"].(float64))
	// The next turn still commits (it read the new version) and its agent
	// sees the result in the history.
	d.post(conv, map[string]any{"content": "What did Luke find?"})

	// Nothing after the result: a wait that runs out is an empty page.
	st, page := d.call("GET", "/v1/conversations/"+conv+"/messages?after="+d.lastID(conv)+"&wait=1", nil)
	require.Equal(t, 200, st, page)
	assert.Empty(t, page["items"])
}

// The long-poll waits: with nothing after the last message, wait=2
// answers an empty page after at least 2 s; a message that arrives during
// a wait (here a turn sent by another client) is returned as soon as it is
// there, before the wait runs out.
func TestMessagesLongPollWaitsAndWakes(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	conv, last := d.chat()
	messages := func(wait int) ([]any, time.Duration) {
		start := time.Now()
		st, page := d.call("GET", fmt.Sprintf("/v1/conversations/%s/messages?after=%s&wait=%d", conv, last, wait), nil)
		require.Equal(t, 200, st, page)
		return page["items"].([]any), time.Since(start)
	}

	items, took := messages(2)
	assert.Empty(t, items)
	assert.GreaterOrEqual(t, took, 2*time.Second, "an empty wait=2 waits its 2 s")

	type answer struct {
		items []any
		took  time.Duration
	}
	got := make(chan answer, 1)
	go func() {
		items, took := messages(20)
		got <- answer{items, took}
	}()
	time.Sleep(2 * time.Second) // the poll is waiting
	turn := d.post(conv, map[string]any{"content": "Any news on the login bug?"})
	a := <-got
	require.NotEmpty(t, a.items, "the turn's messages reach the waiting client")
	assert.Equal(t, turn["user_message"].(map[string]any)["id"], a.items[0].(map[string]any)["id"], "from the first message after the last one held")
	assert.Less(t, a.took, 20*time.Second, "answered when the message arrived, not when the wait ran out")
	assert.GreaterOrEqual(t, a.took, 2*time.Second, "it was waiting when the turn was sent")
}

// A failed task's failure is posted too, saying what ended it.
func TestFailedTaskFailureIsPosted(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	d.script(e, "dana", "fail")
	conv, last := d.chat()
	st, task := d.call("POST", "/v1/tasks", map[string]any{"assignee": "dana", "title": "Sum the numbers", "conversation_id": conv, "execute": true})
	require.Equal(t, 201, st, task)
	id := task["id"].(string)
	m, _ := d.pollResult(conv, last, id)
	st, done := d.call("GET", "/v1/tasks/"+id, nil)
	require.Equal(t, 200, st)
	require.Equal(t, "failed", done["status"], done)
	assert.Equal(t, "dana", m["agent"])
	assert.Equal(t, fmt.Sprintf("Task %s (Sum the numbers) failed: %s", id, done["error"]), m["content"])
	assert.True(t, strings.HasPrefix(done["error"].(string), "ModelFailed"), done["error"])
	assert.Equal(t, "failed", m["result_of"].(map[string]any)["status"])
}

// posterEvent is the SQS delivery of one event to the result-poster, as
// the event source mapping hands it over.
func posterEvent(t *testing.T, detailType string, detail any) string {
	t.Helper()
	body, err := json.Marshal(map[string]any{"version": "0", "id": "evt-" + fmt.Sprint(time.Now().UnixNano()), "detail-type": detailType,
		"source": "conclave", "time": time.Now().UTC().Format(time.RFC3339), "detail": detail})
	require.NoError(t, err)
	raw, err := json.Marshal(events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m1", Body: string(body), EventSource: "aws:sqs"}}})
	require.NoError(t, err)
	return string(raw)
}

// The same end delivered again — to the function directly, and through
// the bus — posts nothing more: the marker written with the message is
// there.
func TestRedeliveredResultEventPostsOnce(t *testing.T) {
	e := mustSerialEnv(t) // it waits on a shared dead-letter queue or the invocation log
	d := mustDemoTeam(t, e)
	conv, last := d.chat()
	st, task := d.call("POST", "/v1/tasks", map[string]any{"assignee": "luke", "title": "Board task", "conversation_id": conv})
	require.Equal(t, 201, st, task)
	id := task["id"].(string)
	st, res := d.call("POST", "/v1/tasks/"+id+"/start", nil)
	require.Equal(t, 200, st, res)
	st, res = d.call("POST", "/v1/tasks/"+id+"/complete", map[string]any{"output": "Done by hand."})
	require.Equal(t, 200, st, res)
	m, _ := d.pollResult(conv, last, id)
	assert.Equal(t, "Done by hand.", m["content"], "a board task completed through the API posts too")

	detail := map[string]any{"team_id": d.id, "task_id": id, "assignee": "luke", "status": "completed", "previous_status": "running",
		"root_task_id": id, "delegation_depth": 0, "tokens_used": 0, "cost_usd": 0, "conversation_id": conv}
	for range 2 {
		out, err := invokeFunction(t, e, "result-poster", posterEvent(t, "TaskStatusChanged", detail))
		require.NoError(t, err)
		assert.JSONEq(t, `{"batchItemFailures":null}`, out)
	}
	raw, _ := json.Marshal(detail)
	since := lastSeq(t)
	put, err := eventbridge.NewFromConfig(e.cfg).PutEvents(context.Background(), &eventbridge.PutEventsInput{Entries: []ebtypes.PutEventsRequestEntry{{
		EventBusName: aws.String(e.names.Bus()), Source: aws.String(manifest.EventSource), DetailType: aws.String("TaskStatusChanged"), Detail: aws.String(string(raw)),
	}}})
	require.NoError(t, err)
	require.Zero(t, put.FailedEntryCount)
	// The bus's copy reaches the poster through its queue (which finds
	// the result posted).
	require.Eventually(t, func() bool {
		list, _ := invocations(t, since, "result-poster", d.id)
		return len(list) > 0
	}, 30*time.Second, 250*time.Millisecond)
	assert.Len(t, d.results(conv, id), 1, "one result message however often the end is delivered")
}

// A task a chat turn waits for (result delivery "reply") is not posted:
// the turn puts the result in its reply. ReleaseToConversation hands a
// running one to the conversation (then it is posted when it ends), and
// finds an ended one ended (nothing written: the turn delivers it).
func TestReplyDeliveryIsNotPostedUntilReleased(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	svc, _ := taskService(t, e)
	ctx := context.Background()
	conv, last := d.chat()
	waited := func(title string) tasks.Task {
		tk, err := svc.Create(ctx, d.id, user, tasks.CreateInput{Assignee: "luke", Title: title, ConversationID: conv, ResultDelivery: tasks.DeliverInReply}, false)
		require.NoError(t, err)
		_, err = svc.Start(ctx, d.id, tk.ID, "user:key_test")
		require.NoError(t, err)
		return tk
	}

	ended := waited("answered in the reply")
	_, err := svc.Complete(ctx, d.id, ended.ID, "agent:luke", "in the reply", nil)
	require.NoError(t, err)
	got, err := svc.ReleaseToConversation(ctx, d.id, ended.ID)
	require.NoError(t, err)
	assert.Equal(t, tasks.Completed, got.Status)
	assert.Equal(t, tasks.DeliverInReply, got.ResultDelivery, "ended first: the turn delivers it")

	released := waited("released to the conversation")
	got, err = svc.ReleaseToConversation(ctx, d.id, released.ID)
	require.NoError(t, err)
	assert.Equal(t, tasks.DeliverToConversation, got.ResultDelivery)
	assert.Equal(t, released.Version+2, got.Version, "started, then released")
	_, err = svc.Complete(ctx, d.id, released.ID, "agent:luke", "posted by the poster", nil)
	require.NoError(t, err)

	// The released task's result arrives; the one the turn delivered never
	// does (its events were queued first).
	_, seen := d.pollResult(conv, last, released.ID)
	time.Sleep(2 * time.Second)
	assert.Empty(t, d.results(conv, ended.ID), "a result the turn delivers is not posted (saw %v)", seen)
	assert.Len(t, d.results(conv, released.ID), 1)
}

// A report requested from a conversation is posted there by its author.
func TestReportResultIsPostedIntoItsConversation(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	conv, last := d.chat()
	r := d.report(map[string]any{"type": "code_review", "to": "luke", "from": "kyra", "title": "Review login", "conversation_id": conv,
		"parameters": reportParams["code_review"]})
	id := r["id"].(string)
	m, _ := d.pollResult(conv, last, id)
	done := d.waitReport(id)
	require.Equal(t, "completed", done["status"], done)
	assert.Equal(t, "luke", m["agent"])
	assert.Equal(t, "report", m["strategy"])
	assert.Equal(t, map[string]any{"type": "report", "id": id, "status": "completed", "agent": "luke"}, m["result_of"])
	assert.True(t, strings.HasPrefix(m["content"].(string), "Report "+id+" (code_review): Review login\n\n"), m["content"])
	for _, s := range done["sections"].([]any) {
		assert.Contains(t, m["content"], s.(map[string]any)["content"])
	}
	assert.Empty(t, d.results(conv, done["task_id"].(string)), "the report's task is not posted besides the report")
}

// A session started from a conversation posts its end there: a cancelled
// one a note saying so.
func TestCancelledSessionIsPostedIntoItsConversation(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	d.script(e, "archie", "timeout")
	conv, last := d.chat()
	id := d.start(map[string]any{"pattern": "brainstorm", "conversation_id": conv, "participants": twoContributors("luke", "archie")})
	d.waitSession(id, 20*time.Second, "active")
	st, s := d.call("POST", "/v1/sessions/"+id+"/cancel", nil)
	require.Equal(t, 200, st, s)
	m, _ := d.pollResult(conv, last, id)
	assert.Equal(t, "kyra", m["agent"], "the session's lead")
	assert.Equal(t, "collaboration", m["strategy"])
	assert.Equal(t, map[string]any{"type": "session", "id": id, "status": "cancelled", "agent": "kyra"}, m["result_of"])
	assert.True(t, strings.HasPrefix(m["content"].(string), "Session "+id+" (brainstorm: "), m["content"])
	assert.Contains(t, m["content"], "was cancelled")
}

// A failing event is retried twice, then the consumer dead-letters it in
// the result-poster queue's DLQ with why (an end naming a task that does
// not exist can never be posted).
func TestFailingResultEventGoesToItsDeadLetterQueue(t *testing.T) {
	e := mustSerialEnv(t) // it waits on a shared dead-letter queue or the invocation log
	d := mustDemoTeam(t, e)
	conv := d.conversation("kyra")
	bogus := ids.New("task")
	detail, _ := json.Marshal(map[string]any{"team_id": d.id, "task_id": bogus, "assignee": "luke", "status": "completed", "root_task_id": bogus,
		"delegation_depth": 0, "tokens_used": 0, "cost_usd": 0, "conversation_id": conv})
	out, err := eventbridge.NewFromConfig(e.cfg).PutEvents(context.Background(), &eventbridge.PutEventsInput{Entries: []ebtypes.PutEventsRequestEntry{{
		EventBusName: aws.String(e.names.Bus()), Source: aws.String(manifest.EventSource), DetailType: aws.String("TaskStatusChanged"), Detail: aws.String(string(detail)),
	}}})
	require.NoError(t, err)
	require.Zero(t, out.FailedEntryCount)

	q, _ := manifest.QueueByName("conversation-results")
	m := awaitSQSMessage(t, e, q.DLQName(), 60*time.Second, func(body string) bool { return strings.Contains(body, bogus) })
	assert.Equal(t, "3", aws.ToString(m.MessageAttributes["attempts"].StringValue))
	assert.Equal(t, "conversation-results", aws.ToString(m.MessageAttributes["source_queue"].StringValue))
	assert.Contains(t, aws.ToString(m.MessageAttributes["last_error"].StringValue), bogus)
	assert.Empty(t, d.results(conv, bogus))
}

// Every route that accepts a conversation_id answers another team's (or an
// unknown) conversation 404 not_found and writes nothing: no task, no
// report, no session, no execution started.
func TestForeignConversationIDIsNotFoundAndWritesNothing(t *testing.T) {
	e := mustSerialEnv(t) // it counts every execution of the local cloud
	d := mustDemoTeam(t, e)
	other := mustDemoTeam(t, e)
	foreign := other.conversation("kyra")
	ctx := context.Background()
	c := sfn.NewFromConfig(e.cfg)
	executions := func() int {
		n := 0
		sms, err := c.ListStateMachines(ctx, &sfn.ListStateMachinesInput{})
		require.NoError(t, err)
		for _, sm := range sms.StateMachines {
			p := sfn.NewListExecutionsPaginator(c, &sfn.ListExecutionsInput{StateMachineArn: sm.StateMachineArn})
			for p.HasMorePages() {
				page, err := p.NextPage(ctx)
				require.NoError(t, err)
				n += len(page.Executions)
			}
		}
		return n
	}
	st, parent := d.call("POST", "/v1/tasks", map[string]any{"assignee": "kyra", "title": "parent"})
	require.Equal(t, 201, st, parent)
	pid := parent["id"].(string)
	st, _ = d.call("POST", "/v1/tasks/"+pid+"/start", nil)
	require.Equal(t, 200, st)
	startedBefore := executions()

	for _, conv := range []string{foreign, ids.New("conv"), "conv_nope"} {
		for _, r := range []struct {
			path string
			body map[string]any
		}{
			{"/v1/tasks", map[string]any{"assignee": "luke", "title": "t", "execute": true}},
			{"/v1/tasks/" + pid + "/delegate", map[string]any{"assignee": "luke", "title": "t"}},
			{"/v1/reports", map[string]any{"type": "code_review", "to": "luke", "title": "t", "parameters": reportParams["code_review"]}},
			{"/v1/sessions", map[string]any{"pattern": "brainstorm", "lead": "kyra", "goal": "g", "participants": twoContributors("luke", "archie")}},
		} {
			r.body["conversation_id"] = conv
			st, res := d.call("POST", r.path, r.body)
			require.Equal(t, 404, st, "%s with %s: %v", r.path, conv, res)
			assert.Equal(t, "not_found", res["error"].(map[string]any)["code"])
		}
	}
	st, list := d.call("GET", "/v1/tasks", nil)
	require.Equal(t, 200, st)
	assert.Len(t, list["items"], 1, "only the parent")
	for _, path := range []string{"/v1/reports", "/v1/sessions"} {
		st, list = d.call("GET", path, nil)
		require.Equal(t, 200, st)
		assert.Empty(t, list["items"], path)
	}
	_, load := d.call("GET", "/v1/agents/luke/load", nil)
	assert.EqualValues(t, 0, load["active_tasks"], "no slot kept")
	assert.Equal(t, startedBefore, executions(), "no execution started")
	st, msgs := other.call("GET", "/v1/conversations/"+foreign+"/messages", nil)
	require.Equal(t, 200, st)
	assert.Empty(t, msgs["items"], "the other team's conversation is untouched")
}
