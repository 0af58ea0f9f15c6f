//go:build integration

// Messaging, handoff, multi-agent conversations and the memory bus against
// the local cloud: HTTP through the edge, messages fanned out by the real
// bus → rule → SQS → message-fanout path, memory contexts invalidated by
// the MemoryShared consumer.
package cloud_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	conclaveevents "github.com/conclave-ai/conclave/events"
	"github.com/conclave-ai/conclave/shared/platform/manifest"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

var demoSlugs = []string{"archie", "dana", "kyra", "luke", "sage", "wren"}

// inbox peeks at an agent's whole inbox (nothing is marked read).
func (d demoTeam) inbox(slug string) []map[string]any {
	d.t.Helper()
	st, res := d.call("GET", "/v1/agents/"+slug+"/inbox?all=true&peek=true&limit=100", nil)
	require.Equal(d.t, 200, st, res)
	var out []map[string]any
	for _, it := range res["items"].([]any) {
		out = append(out, it.(map[string]any))
	}
	return out
}

// waitInboxes waits until every listed agent holds want entries of
// message id, then returns every demo agent's count of it.
func (d demoTeam) waitInboxes(msgID string, want map[string]int) map[string]int {
	d.t.Helper()
	count := func() map[string]int {
		got := map[string]int{}
		for _, s := range demoSlugs {
			for _, m := range d.inbox(s) {
				if m["id"] == msgID {
					got[s]++
				}
			}
		}
		return got
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := count()
		ok := true
		for s, n := range want {
			ok = ok && got[s] == n
		}
		if ok || time.Now().After(deadline) {
			// A little longer, so a wrong extra delivery would show.
			time.Sleep(1500 * time.Millisecond)
			return count()
		}
		time.Sleep(300 * time.Millisecond)
	}
}

func (d demoTeam) send(from string, body map[string]any) map[string]any {
	d.t.Helper()
	st, m := d.call("POST", "/v1/agents/"+from+"/messages", body)
	require.Equal(d.t, 201, st, m)
	return m
}

func TestDirectMessageReachesExactlyOneInbox(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	m := d.send("luke", map[string]any{"to": "dana", "type": "info_request", "content": "What do last week's signups look like?", "metadata": map[string]any{"priority": "low"}})
	assert.Equal(t, "direct", m["channel"])
	assert.Nil(t, m["read_at"])
	got := d.waitInboxes(m["id"].(string), map[string]int{"dana": 1})
	assert.Equal(t, map[string]int{"dana": 1}, got)

	// Reading marks it read; unread is then empty; all still shows it.
	st, res := d.call("GET", "/v1/agents/dana/inbox", nil)
	require.Equal(t, 200, st)
	items := res["items"].([]any)
	require.Len(t, items, 1)
	first := items[0].(map[string]any)
	assert.Equal(t, "luke", first["from"])
	assert.Equal(t, "info_request", first["type"])
	assert.Equal(t, "low", first["metadata"].(map[string]any)["priority"])
	assert.NotNil(t, first["read_at"])
	st, res = d.call("GET", "/v1/agents/dana/inbox", nil)
	require.Equal(t, 200, st)
	assert.Empty(t, res["items"])
	all := d.inbox("dana")
	require.Len(t, all, 1)
	assert.Equal(t, first["read_at"], all[0]["read_at"], "read_at records the first read")

	// Explicit acknowledgement, newest first with a limit.
	m2 := d.send("kyra", map[string]any{"to": "dana", "content": "FYI one"})
	m3 := d.send("sage", map[string]any{"to": "dana", "content": "FYI two"})
	d.waitInboxes(m3["id"].(string), map[string]int{"dana": 1})
	d.waitInboxes(m2["id"].(string), map[string]int{"dana": 1})
	st, res = d.call("GET", "/v1/agents/dana/inbox?peek=true&limit=1", nil)
	require.Equal(t, 200, st)
	require.Len(t, res["items"], 1)
	assert.Equal(t, m3["id"], res["items"].([]any)[0].(map[string]any)["id"], "newest first")
	st, res = d.call("POST", "/v1/agents/dana/inbox/read", map[string]any{"message_ids": []string{m2["id"].(string), m3["id"].(string), "amsg_nope"}})
	require.Equal(t, 200, st, res)
	assert.Equal(t, 2.0, res["marked_read"])
	st, res = d.call("GET", "/v1/agents/dana/inbox?peek=true", nil)
	require.Equal(t, 200, st)
	assert.Empty(t, res["items"])
}

func TestTeamBroadcastReachesEveryActiveAgentButTheSender(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	st, _ := d.call("POST", "/v1/agents/wren/pause", nil)
	require.Equal(t, 200, st)
	m := d.send("kyra", map[string]any{"channel": "team", "type": "notification", "content": "The user prefers short answers."})
	assert.Nil(t, m["to"])
	want := map[string]int{"archie": 1, "dana": 1, "luke": 1, "sage": 1}
	assert.Equal(t, want, d.waitInboxes(m["id"].(string), want), "not kyra (the sender), not wren (paused)")
}

func TestTaskChannelReachesTheTasksChain(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	svc, _ := taskService(t, e)
	ctx := context.Background()
	root, err := svc.Create(ctx, d.id, user, tasks.CreateInput{Assignee: "kyra", Title: "Plan the launch"}, false)
	require.NoError(t, err)
	_, err = svc.Start(ctx, d.id, root.ID, "user:key_test")
	require.NoError(t, err)
	child, err := svc.Create(ctx, d.id, tasks.Creator{Type: "agent", ID: "kyra"}, tasks.CreateInput{Assignee: "luke", Title: "Review the launch code", ParentID: root.ID}, false)
	require.NoError(t, err)

	// Dana is not on the task; the chain is Kyra (delegator) and Luke.
	m := d.send("dana", map[string]any{"channel": "task:" + child.ID, "type": "task_status", "content": "The dashboards for the launch are ready."})
	want := map[string]int{"kyra": 1, "luke": 1}
	assert.Equal(t, want, d.waitInboxes(m["id"].(string), want))
	// Luke, on the chain, writes to it: Kyra gets it, Luke does not.
	m = d.send("luke", map[string]any{"channel": "task:" + child.ID, "type": "task_result", "content": "Review done."})
	assert.Equal(t, map[string]int{"kyra": 1}, d.waitInboxes(m["id"].(string), map[string]int{"kyra": 1}))

	st, res := d.call("POST", "/v1/agents/dana/messages", map[string]any{"channel": "task:task_nope", "content": "hello"})
	assert.Equal(t, 404, st, res)
	st, res = d.call("POST", "/v1/agents/dana/messages", map[string]any{"channel": "collab:sess_nope", "content": "hello"})
	assert.Equal(t, 404, st, res)
}

func TestBadMessagesChangeNothing(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	for _, body := range []map[string]any{
		{"content": "no recipient"}, {"to": "dana", "content": ""}, {"to": "dana", "content": "x", "type": "gossip"},
		{"to": "dana", "channel": "everyone", "content": "x"}, {"to": "luke", "content": "to myself"},
		{"channel": "team", "to": "dana", "content": "both"}, {"to": "dana", "content": strings.Repeat("x", 8001)},
		{"to": "dana", "content": "x", "metadata": map[string]any{"blob": strings.Repeat("y", 5000)}},
	} {
		st, res := d.call("POST", "/v1/agents/luke/messages", body)
		assert.Equal(t, 400, st, body)
		assert.Equal(t, "invalid_request", res["error"].(map[string]any)["code"], body)
	}
	st, _ := d.call("POST", "/v1/agents/luke/messages", map[string]any{"to": "nobody", "content": "x"})
	assert.Equal(t, 404, st)
	st, _ = d.call("POST", "/v1/agents/nobody/messages", map[string]any{"to": "luke", "content": "x"})
	assert.Equal(t, 404, st)
	st, _ = d.call("POST", "/v1/agents/wren/pause", nil)
	require.Equal(t, 200, st)
	st, _ = d.call("POST", "/v1/agents/wren/messages", map[string]any{"to": "luke", "content": "x"})
	assert.Equal(t, 409, st, "a paused agent cannot send")
	time.Sleep(2 * time.Second)
	for _, s := range demoSlugs {
		assert.Empty(t, d.inbox(s), s)
	}
}

// fanoutEvent is the SQS delivery of an AgentMessageSent event, as the
// event source mapping hands it to message-fanout.
func fanoutEvent(t *testing.T, detail map[string]any) string {
	body, err := json.Marshal(map[string]any{"version": "0", "id": "evt-" + fmt.Sprint(time.Now().UnixNano()), "detail-type": "AgentMessageSent", "source": "conclave",
		"time": time.Now().UTC().Format(time.RFC3339), "detail": detail})
	require.NoError(t, err)
	ev := events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m1", Body: string(body), EventSource: "aws:sqs"}}}
	raw, err := json.Marshal(ev)
	require.NoError(t, err)
	return string(raw)
}

func TestRedeliveredEventCreatesNoDuplicate(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	m := d.send("kyra", map[string]any{"channel": "team", "content": "Standup moved to 10:00."})
	want := map[string]int{"archie": 1, "dana": 1, "luke": 1, "sage": 1, "wren": 1}
	require.Equal(t, want, d.waitInboxes(m["id"].(string), want))
	// The same event delivered again, twice (SQS is at-least-once).
	detail := map[string]any{"team_id": d.id, "message_id": m["id"], "from": "kyra", "channel": "team", "type": "notification", "created_at": m["created_at"]}
	for range 2 {
		out, err := invokeFunction(t, e, "message-fanout", fanoutEvent(t, detail))
		require.NoError(t, err)
		assert.JSONEq(t, `{"batchItemFailures":null}`, out)
	}
	assert.Equal(t, want, d.waitInboxes(m["id"].(string), want), "still one entry per recipient")
}

func TestFailingFanOutGoesToItsDeadLetterQueue(t *testing.T) {
	e := mustSerialEnv(t) // it waits on a shared dead-letter queue or the invocation log
	d := mustDemoTeam(t, e)
	ctx := context.Background()
	// An event naming a message that does not exist can never be fanned
	// out: the consumer fails it every time.
	bogus := "amsg_missing_" + fmt.Sprint(time.Now().UnixNano())
	detail, _ := json.Marshal(map[string]any{"team_id": d.id, "message_id": bogus, "from": "kyra", "channel": "team", "type": "notification", "created_at": time.Now().UTC().Format(time.RFC3339)})
	out, err := eventbridge.NewFromConfig(e.cfg).PutEvents(ctx, &eventbridge.PutEventsInput{Entries: []ebtypes.PutEventsRequestEntry{{
		EventBusName: aws.String(e.names.Bus()), Source: aws.String(manifest.EventSource), DetailType: aws.String("AgentMessageSent"), Detail: aws.String(string(detail)),
	}}})
	require.NoError(t, err)
	require.Zero(t, out.FailedEntryCount)

	q, _ := manifest.QueueByName("agent-messages")
	m := awaitSQSMessage(t, e, q.DLQName(), 60*time.Second, func(body string) bool { return strings.Contains(body, bogus) })
	var env struct {
		DetailType string `json:"detail-type"`
	}
	require.NoError(t, json.Unmarshal([]byte(aws.ToString(m.Body)), &env))
	assert.Equal(t, "AgentMessageSent", env.DetailType, "the whole event is kept")
	// The consumer dead-lettered it after its third failed attempt (the
	// queue's own redrive would wait for ten receives) and said why.
	assert.Equal(t, "3", aws.ToString(m.MessageAttributes["attempts"].StringValue))
	assert.Equal(t, "agent-messages", aws.ToString(m.MessageAttributes["source_queue"].StringValue))
	assert.Contains(t, aws.ToString(m.MessageAttributes["last_error"].StringValue), bogus)
}

func participantRoles(t *testing.T, c map[string]any) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, p := range c["participants"].([]any) {
		pm := p.(map[string]any)
		role := pm["role"].(string)
		if pm["left_at"] != nil {
			role += " (left)"
		}
		out[pm["agent"].(string)] = role
	}
	return out
}

var agentNames = map[string]string{"archie": "Archie", "dana": "Dana", "kyra": "Kyra", "luke": "Luke", "sage": "Sage", "wren": "Wren"}

// assertHandoverWrites checks what a handoff or return record h wrote: its
// system note in the conversation, and its episodic memory (the note's
// text) visible to the two agents of the handoff only.
func (d demoTeam) assertHandoverWrites(conv string, h map[string]any) {
	t := d.t
	t.Helper()
	from, to := h["from"].(string), h["to"].(string)
	verb := "handed off to"
	if h["kind"] == "return" {
		verb = "handed the conversation back to"
	}
	text := agentNames[from] + " " + verb + " " + agentNames[to] + " because " + h["reason"].(string)
	if sum, _ := h["context_summary"].(string); sum != "" {
		text += ". Summary: " + sum
	}
	st, msgs := d.call("GET", "/v1/conversations/"+conv+"/messages?limit=100", nil)
	require.Equal(t, 200, st)
	notes := 0
	for _, it := range msgs["items"].([]any) {
		if m := it.(map[string]any); m["role"] == "system" && m["content"] == text+"." {
			notes++
		}
	}
	assert.Equal(t, 1, notes, "the note of %s %s>%s", h["kind"], from, to)
	memID, _ := h["memory_id"].(string)
	require.NotEmpty(t, memID, "%s %s>%s has an episodic memory", h["kind"], from, to)
	for _, slug := range []string{from, to, "dana"} {
		st, mem := d.call("GET", "/v1/agents/"+slug+"/memories", nil)
		require.Equal(t, 200, st, mem)
		var content any
		for _, it := range mem["items"].([]any) {
			if m := it.(map[string]any); m["id"] == memID {
				content = m["content"]
				assert.Equal(t, "episodic", m["type"])
				assert.Equal(t, from, m["author"])
			}
		}
		if slug == from || slug == to {
			assert.Equal(t, text, content, "%s sees the memory of %s %s>%s", slug, h["kind"], from, to)
		} else {
			assert.Nil(t, content, "%s does not see the memory of %s %s>%s", slug, h["kind"], from, to)
		}
	}
}

// handoffEvents waits for n HandoffCompleted events of the conversation in
// the activity log and returns their handoff ids.
func (d demoTeam) handoffEvents(conv string, n int) []string {
	d.t.Helper()
	var ids []string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		st, list := d.call("GET", "/v1/activity?limit=100", nil)
		require.Equal(d.t, 200, st, list)
		ids = ids[:0]
		for _, it := range list["items"].([]any) {
			en := it.(map[string]any)
			det, _ := en["detail"].(map[string]any)
			if en["detail_type"] == "HandoffCompleted" && det["conversation_id"] == conv {
				ids = append(ids, det["handoff_id"].(string))
			}
		}
		if len(ids) >= n || time.Now().After(deadline) {
			return ids
		}
	}
}

func TestHandoffAndReturnKeepHistoryAndAttribution(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	conv := d.conversation("kyra")
	first := lastReply(t, d.post(conv, map[string]any{"content": "@kyra hi, I have some code to look at"}))
	require.Equal(t, "kyra", first["agent"])

	st, h := d.call("POST", "/v1/conversations/"+conv+"/handoff", map[string]any{"to": "luke", "reason": "the user needs a code review", "context_summary": "User wants auth.go reviewed for race conditions"})
	require.Equal(t, 201, st, h)
	assert.Equal(t, "kyra", h["from"])
	assert.Equal(t, "handoff", h["kind"])
	st, c := d.call("GET", "/v1/conversations/"+conv, nil)
	require.Equal(t, 200, st)
	assert.Equal(t, "luke", c["current_agent"])
	assert.Equal(t, map[string]string{"kyra": "handoff_source", "luke": "invited"}, participantRoles(t, c))

	// The episodic memory is visible to both agents of the handoff only.
	for slug, visible := range map[string]bool{"kyra": true, "luke": true, "dana": false} {
		st, mem := d.call("GET", "/v1/agents/"+slug+"/memories", nil)
		require.Equal(t, 200, st)
		found := false
		for _, m := range mem["items"].([]any) {
			found = found || strings.Contains(m.(map[string]any)["content"].(string), "Kyra handed off to Luke because the user needs a code review")
		}
		assert.Equal(t, visible, found, slug)
	}

	// A data question now goes to Luke (the conversation was handed to
	// him), who sees the whole history, the handoff summary and the memory.
	turn := d.post(conv, map[string]any{"content": "Which metrics trend down? Analyze the data."})
	reply := lastReply(t, turn)
	assert.Equal(t, "luke", reply["agent"])
	assert.Equal(t, "handoff", turn["routing"].(map[string]any)["strategy"])
	assert.Contains(t, reply["context_memories"], h["memory_id"])
	st, ctxv := d.call("GET", "/v1/conversations/"+conv+"/context?agent=luke", nil)
	require.Equal(t, 200, st, ctxv)
	assert.Contains(t, ctxv["handoff_summary"], "User wants auth.go reviewed for race conditions")
	assert.Contains(t, ctxv["identity"], "You are Luke (@luke)")
	hist := ctxv["history"].([]any)
	require.Len(t, hist, 5, "user, kyra, the handoff note, user, luke: all of it")
	assert.Equal(t, "kyra", hist[1].(map[string]any)["agent"])
	assert.Equal(t, "system", hist[2].(map[string]any)["role"])

	// "go back to Kyra" returns, recorded as a return, its note shown
	// before Kyra's reply.
	turn = d.post(conv, map[string]any{"content": "Thanks Luke. Can we go back to Kyra now?"})
	assert.Equal(t, "kyra", lastReply(t, turn)["agent"])
	replies := turn["replies"].([]any)
	require.Len(t, replies, 2, "the return's note, then Kyra")
	assert.Equal(t, "Luke handed the conversation back to Kyra because the user asked to go back to kyra. Summary: User wants auth.go reviewed for race conditions.", replies[0].(map[string]any)["content"])
	st, c = d.call("GET", "/v1/conversations/"+conv, nil)
	require.Equal(t, 200, st)
	assert.Equal(t, "kyra", c["current_agent"])
	assert.Equal(t, map[string]string{"kyra": "primary", "luke": "handoff_source"}, participantRoles(t, c))
	// The return endpoint goes back to the agent before: Luke.
	st, r := d.call("POST", "/v1/conversations/"+conv+"/return", nil)
	require.Equal(t, 201, st, r)
	assert.Equal(t, "luke", r["to"])
	assert.Equal(t, "return", r["kind"])

	st, list := d.call("GET", "/v1/conversations/"+conv+"/handoffs", nil)
	require.Equal(t, 200, st)
	var kinds []string
	for _, it := range list["items"].([]any) {
		hm := it.(map[string]any)
		kinds = append(kinds, hm["kind"].(string)+":"+hm["from"].(string)+">"+hm["to"].(string))
	}
	require.Equal(t, []string{"handoff:kyra>luke", "return:luke>kyra", "return:kyra>luke"}, kinds)
	// Both returns, "go back to Kyra" in a turn and POST …/return, wrote
	// the same: the note, the episodic memory both agents see, and a
	// HandoffCompleted event.
	var handoffIDs []string
	for _, it := range list["items"].([]any) {
		hm := it.(map[string]any)
		d.assertHandoverWrites(conv, hm)
		handoffIDs = append(handoffIDs, hm["id"].(string))
	}
	assert.ElementsMatch(t, handoffIDs, d.handoffEvents(conv, len(handoffIDs)))

	// Every assistant message is attributed; nothing was lost.
	st, msgs := d.call("GET", "/v1/conversations/"+conv+"/messages?limit=100", nil)
	require.Equal(t, 200, st)
	var authors []string
	for _, it := range msgs["items"].([]any) {
		m := it.(map[string]any)
		a := m["role"].(string)
		if a == "assistant" {
			a = m["agent"].(string)
		}
		authors = append(authors, a)
	}
	assert.Equal(t, []string{"user", "kyra", "system", "user", "luke", "user", "system", "kyra", "system"}, authors)
	assert.Equal(t, float64(len(authors)), c["message_count"].(float64)+1, "the return added its note")

	// Handoff rules.
	st, res := d.call("POST", "/v1/conversations/"+conv+"/handoff", map[string]any{"from": "kyra", "to": "dana", "reason": "x"})
	assert.Equal(t, 409, st, res)
	assert.Equal(t, "NotCurrentAgent", res["error"].(map[string]any)["reason"])
	for _, body := range []map[string]any{{"to": "dana"}, {"reason": "x"}, {"to": "luke", "reason": "x"}} {
		st, _ := d.call("POST", "/v1/conversations/"+conv+"/handoff", body)
		assert.Equal(t, 400, st, body)
	}
	st, _ = d.call("POST", "/v1/conversations/"+conv+"/handoff", map[string]any{"to": "nobody", "reason": "x"})
	assert.Equal(t, 404, st)
	fresh := d.conversation("kyra")
	st, _ = d.call("POST", "/v1/conversations/"+fresh+"/return", nil)
	assert.Equal(t, 409, st, "nothing to return to")
}

func TestMultiAgentConversation(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	conv := d.conversation("kyra")
	st, c := d.call("POST", "/v1/conversations/"+conv+"/agents", map[string]any{"add": []string{"dana", "archie"}})
	require.Equal(t, 200, st, c)
	assert.Equal(t, map[string]string{"kyra": "primary", "dana": "invited", "archie": "invited"}, participantRoles(t, c))
	d.post(conv, map[string]any{"content": "@dana what do the numbers say?"})
	d.post(conv, map[string]any{"content": "@archie and how should we design it?"})
	st, c = d.call("POST", "/v1/conversations/"+conv+"/agents", map[string]any{"remove": []string{"dana"}})
	require.Equal(t, 200, st, c)
	assert.Equal(t, "invited (left)", participantRoles(t, c)["dana"])

	// Each agent sees the whole conversation, every message attributed.
	st, ctxv := d.call("GET", "/v1/conversations/"+conv+"/context?agent=archie", nil)
	require.Equal(t, 200, st)
	var agentsSeen []string
	for _, m := range ctxv["history"].([]any) {
		if a, ok := m.(map[string]any)["agent"].(string); ok {
			agentsSeen = append(agentsSeen, a)
		}
	}
	assert.Equal(t, []string{"dana", "archie"}, agentsSeen)

	st, res := d.call("POST", "/v1/conversations/"+conv+"/agents", map[string]any{"remove": []string{"archie"}})
	assert.Equal(t, 409, st, res, "the current agent cannot be removed")
	st, _ = d.call("POST", "/v1/conversations/"+conv+"/agents", map[string]any{"remove": []string{"sage"}})
	assert.Equal(t, 404, st, "not a participant")
	st, _ = d.call("POST", "/v1/conversations/"+conv+"/agents", map[string]any{"add": []string{"nobody"}})
	assert.Equal(t, 404, st)
	st, _ = d.call("POST", "/v1/conversations/"+conv+"/agents", map[string]any{})
	assert.Equal(t, 400, st)
}

// Kyra learns a fact; Luke's next reply context contains it without
// anyone telling Luke. Luke's context is cached first, so only the
// MemoryShared consumer dropping it can make the fact appear.
func TestSharedMemoryReachesEveryAgentsNextContext(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	conv := d.conversation("luke")
	lastReply(t, d.post(conv, map[string]any{"content": "@luke review this function"}))
	ctxPath := "/v1/conversations/" + conv + "/context?agent=luke"
	st, c := d.call("GET", ctxPath, nil)
	require.Equal(t, 200, st)
	require.Equal(t, true, c["memories"].(map[string]any)["cached"], "Luke's context is cached")

	st, mem := d.call("POST", "/v1/agents/kyra/memories", map[string]any{"type": "fact", "visibility": "shared", "content": "The user's company switched to PostgreSQL."})
	require.Equal(t, 201, st, mem)
	memID := mem["id"].(string)

	contains := func(c map[string]any) bool {
		for _, m := range c["memories"].(map[string]any)["shared"].([]any) {
			if m.(map[string]any)["id"] == memID {
				return true
			}
		}
		return false
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, c = d.call("GET", ctxPath, nil)
		require.Equal(t, 200, st)
		if contains(c) {
			assert.Equal(t, false, c["memories"].(map[string]any)["cached"], "rebuilt after the invalidation")
			break
		}
		require.True(t, time.Now().Before(deadline), "the shared memory never reached Luke's context")
		assert.Equal(t, true, c["memories"].(map[string]any)["cached"], "until invalidated, the cache answers")
		time.Sleep(300 * time.Millisecond)
	}
	reply := lastReply(t, d.post(conv, map[string]any{"content": "@luke which database should the migration target?"}))
	assert.Contains(t, reply["context_memories"], memID)
	// Every other agent sees it too; a private memory stays private.
	for _, s := range demoSlugs {
		st, c := d.call("GET", "/v1/conversations/"+conv+"/context?agent="+s, nil)
		require.Equal(t, 200, st)
		assert.True(t, contains(c), s)
	}
	st, priv := d.call("POST", "/v1/agents/luke/memories", map[string]any{"content": "I prefer table-driven tests."})
	require.Equal(t, 201, st, priv)
	assert.Equal(t, "private", priv["visibility"])
	st, c = d.call("GET", ctxPath, nil)
	require.Equal(t, 200, st)
	require.NotEmpty(t, c["memories"].(map[string]any)["private"], "the author's cache is dropped at once")
	st, c = d.call("GET", "/v1/conversations/"+conv+"/context?agent=dana", nil)
	require.Equal(t, 200, st)
	for _, m := range c["memories"].(map[string]any)["private"].([]any) {
		assert.NotEqual(t, priv["id"], m.(map[string]any)["id"])
	}
	for _, body := range []map[string]any{{"content": ""}, {"content": "x", "visibility": "public"}, {"content": "x", "type": "gossip"}, {"content": "x", "type": "user_profile"}} {
		st, _ := d.call("POST", "/v1/agents/luke/memories", body)
		assert.Equal(t, 400, st, body)
	}
}

func TestMessagesInboxesAndMemoriesAreIsolatedBetweenTeams(t *testing.T) {
	e := mustEnv(t)
	a, b := mustDemoTeam(t, e), mustDemoTeam(t, e)
	m := a.send("kyra", map[string]any{"channel": "team", "content": "Team A secret plan."})
	a.waitInboxes(m["id"].(string), map[string]int{"luke": 1})
	st, mem := a.call("POST", "/v1/agents/kyra/memories", map[string]any{"visibility": "shared", "content": "Team A uses Oracle."})
	require.Equal(t, 201, st, mem)
	conv := a.conversation("kyra")
	a.post(conv, map[string]any{"content": "@kyra hello"})

	for _, s := range demoSlugs {
		assert.Empty(t, b.inbox(s), "team B's %s", s)
		st, list := b.call("GET", "/v1/agents/"+s+"/memories", nil)
		require.Equal(t, 200, st)
		for _, it := range list["items"].([]any) {
			assert.NotContains(t, it.(map[string]any)["content"], "Team A")
		}
	}
	st, _ = b.call("POST", "/v1/agents/luke/inbox/read", map[string]any{"message_ids": []string{m["id"].(string)}})
	assert.Equal(t, 200, st)
	assert.Nil(t, a.inbox("luke")[0]["read_at"], "B cannot mark A's message read")
	for _, req := range []struct {
		method, path string
		body         any
	}{
		{"POST", "/v1/conversations/" + conv + "/handoff", map[string]any{"to": "luke", "reason": "x"}},
		{"POST", "/v1/conversations/" + conv + "/return", nil},
		{"GET", "/v1/conversations/" + conv + "/handoffs", nil},
		{"POST", "/v1/conversations/" + conv + "/agents", map[string]any{"add": []string{"luke"}}},
		{"GET", "/v1/conversations/" + conv + "/context?agent=kyra", nil},
	} {
		st, _ := b.call(req.method, req.path, req.body)
		assert.Equal(t, 404, st, req)
	}
	svc, _ := taskService(t, e)
	task, err := svc.Create(context.Background(), a.id, user, tasks.CreateInput{Assignee: "kyra", Title: "A's task"}, false)
	require.NoError(t, err)
	st, _ = b.call("POST", "/v1/agents/kyra/messages", map[string]any{"channel": "task:" + task.ID, "content": "hi"})
	assert.Equal(t, 404, st, "another team's task is not a channel")
}

// Every event the system published while these tests ran in a team is in
// its activity log; each must validate against the schema of its type.
func TestEveryPublishedEventMatchesItsSchema(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	conv := d.conversation("kyra")
	d.post(conv, map[string]any{"content": "@kyra hi"})
	st, _ := d.call("POST", "/v1/conversations/"+conv+"/handoff", map[string]any{"to": "luke", "reason": "code review"})
	require.Equal(t, 201, st)
	d.send("luke", map[string]any{"channel": "team", "content": "hello team"})
	// A removed agent, @mentioned, answers and is re-joined.
	st, _ = d.call("POST", "/v1/conversations/"+conv+"/agents", map[string]any{"add": []string{"dana"}})
	require.Equal(t, 200, st)
	st, _ = d.call("POST", "/v1/conversations/"+conv+"/agents", map[string]any{"remove": []string{"dana"}})
	require.Equal(t, 200, st)
	d.post(conv, map[string]any{"content": "@dana what do you think?"})
	st, _ = d.call("POST", "/v1/agents/kyra/memories", map[string]any{"visibility": "shared", "content": "We ship on Fridays."})
	require.Equal(t, 201, st)
	st, task := d.call("POST", "/v1/tasks", map[string]any{"assignee": "dana", "title": "Count signups"})
	require.Equal(t, 201, st, task)
	st, _ = d.call("POST", "/v1/tasks/"+task["id"].(string)+"/cancel", nil)
	require.Equal(t, 200, st)
	ses := d.start(map[string]any{"pattern": "brainstorm", "participants": []any{part("luke", "contributor", 0), part("archie", "contributor", 0)}})
	d.waitSession(ses, 60*time.Second)
	st, rep := d.call("POST", "/v1/reports", map[string]any{"type": "action_plan", "to": "wren", "from": "kyra", "title": "SSO", "parameters": map[string]any{"goal": "ship SSO"}})
	require.Equal(t, 201, st, rep)

	// The third identical question of one agent within the hour is a loop:
	// escalated to a human (ConsultationEscalated).
	for range 3 {
		st, c := d.call("POST", "/v1/consultations", map[string]any{"requesting_agent": "kyra", "question": "How do we rotate the JWT signing keys safely?"})
		require.Equal(t, 201, st, c)
	}

	// A tool call waiting for approval (ApprovalRequested), rejected
	// (ApprovalDecided): only ava's model calls send_agent_message.
	_, err := agents.NewService(e.db.agents).Create(context.Background(), d.id, agents.CreateInput{
		Slug: "ava", Name: "Ava", Model: &agents.Model{Script: "message:luke"},
		Skills: []agents.Skill{{Name: "coordination", Description: "coordinates the team", Priority: 50}},
	})
	require.NoError(t, err)
	// An agent written through the API (AgentsChanged).
	st, _ = d.call("PATCH", "/v1/agents/ava", map[string]any{"tagline": "keeps everyone in the loop"})
	require.Equal(t, 200, st)
	// A user's correction of the router (RoutingCorrected): the gate
	// routes a new conversation's first message, the next one @mentions
	// another agent.
	routed := d.conversation("")
	first := d.post(routed, map[string]any{"content": "Can you review this Go function for bugs and naming issues?"})
	other := "wren"
	if first["routing"].(map[string]any)["selected_agents"].([]any)[0] == "wren" {
		other = "luke"
	}
	d.post(routed, map[string]any{"content": "@" + other + " could you take this one instead?"})
	// A routing evaluation (RoutingEvaluationRequested).
	st, _ = d.call("POST", "/v1/routing/evaluations", map[string]any{"messages": []any{map[string]any{"content": "@ava who is on call?", "expected_agent": "ava"}}})
	require.Equal(t, 202, st)
	st, _ = d.call("PUT", "/v1/approval-policy", map[string]any{"tools": []string{"send_agent_message"}})
	require.Equal(t, 200, st)
	st, gated := d.call("POST", "/v1/tasks", map[string]any{"assignee": "ava", "title": "Ask luke", "instructions": "Ask luke about the release", "execute": true})
	require.Equal(t, 201, st, gated)
	apr := d.pendingApproval(gated["id"].(string))
	st, _ = d.call("POST", "/v1/approvals/"+apr["id"].(string), map[string]any{"decision": "reject", "reason": "not now"})
	require.Equal(t, 200, st)
	svc, _ := taskService(t, e)
	waitTask(t, svc, d.id, gated["id"].(string), 60*time.Second)

	// A task past its due date, flagged by the sweeper (TaskOverdue).
	d.pastDue("Overdue from the start")
	_, err = invokeFunction(t, e, "task-sweeper", `{"source":"aws.events","detail-type":"Scheduled Event"}`)
	require.NoError(t, err)

	// A budget whose warning share one priced call crosses
	// (TeamBudgetWarning).
	mustAgent(t, e, d.id, "pricey", &agents.Model{Provider: "local", ID: pricedModel})
	st, _ = d.call("PUT", "/v1/budget", map[string]any{"monthly_limit_usd": 100, "warn_at": 1e-7})
	require.Equal(t, 200, st)
	d.post(d.conversation("pricey"), map[string]any{"content": "What will this cost?"})

	// A compound plan (PlanStarted, PlanStepCompleted, PlanCompleted).
	planConv := d.conversation("kyra")
	planTurn := d.post(planConv, map[string]any{"content": "Review the handler, then write the notes " + planMarker(threeStepPlan)})
	plan := pendingPlan(t, planTurn)
	d.waitPlan(plan, 90*time.Second)

	want := []string{"AgentMessageSent", "AgentsChanged", "ApprovalDecided", "ApprovalRequested", "ConsultationEscalated", "HandoffCompleted", "MemoryShared", "ParticipantRejoined",
		"PlanCompleted", "PlanStarted", "PlanStepCompleted", "ReportFinished", "RoutingCorrected", "RoutingEvaluationRequested", "SessionStageCompleted", "SessionStatusChanged", "TaskOverdue", "TaskStatusChanged", "TeamBudgetWarning"}
	deadline := time.Now().Add(30 * time.Second)
	var seen []string
	for {
		st, list := d.call("GET", "/v1/activity?limit=100", nil)
		require.Equal(t, 200, st, list)
		types := map[string]bool{}
		for _, it := range list["items"].([]any) {
			en := it.(map[string]any)
			dt := en["detail_type"].(string)
			raw, _ := json.Marshal(en["detail"])
			require.NoError(t, conclaveevents.Validate(dt, raw), "%s: %s", dt, raw)
			types[dt] = true
		}
		seen = seen[:0]
		for dt := range types {
			seen = append(seen, dt)
		}
		sort.Strings(seen)
		if len(seen) >= len(want) || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	assert.Equal(t, want, seen)
	assert.ElementsMatch(t, want, conclaveevents.BusDetailTypes(), "every emitted type has a schema, and every schema but the streams' own is emitted")
	// The streams' own types (MessagePosted, ResultPosted) and the
	// streams of the session and the plan, as stored.
	assertRunStreams(t, e, d.id, conv, ses, planConv, plan)
}
