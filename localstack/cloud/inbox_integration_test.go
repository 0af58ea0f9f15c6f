//go:build integration

// Inboxes reach the agent (docs/agents-context.md): a message sent over
// HTTP and fanned out by the real bus → rule → SQS → message-fanout path
// is in the recipient's next model request, chat or task, is marked read
// once that turn or task step has committed, and is not shown again.
package cloud_test

import (
	"context"
	"io"
	"log/slog"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/platform/settings"
	"github.com/conclave-ai/conclave/shared/wire/conversationsfn"
)

// modelLog is the model port in front of the function's own model,
// keeping every request it is sent.
type modelLog struct {
	models.Model
	mu       sync.Mutex
	requests []models.Request
}

func (m *modelLog) Converse(ctx context.Context, req models.Request) (models.Response, error) {
	m.mu.Lock()
	m.requests = append(m.requests, req)
	m.mu.Unlock()
	return m.Model.Converse(ctx, req)
}

// last is the last request made for agent.
func (m *modelLog) last(t *testing.T, agent string) models.Request {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := len(m.requests) - 1; i >= 0; i-- {
		if m.requests[i].Metadata[models.MetadataAgent] == agent {
			return m.requests[i]
		}
	}
	t.Fatalf("no model request for %s", agent)
	return models.Request{}
}

// readAt is the read time of msgID in agent's inbox (nil: unread),
// read from the store so no API call marks anything.
func readAt(t *testing.T, e env, team, agent, msgID string) *time.Time {
	t.Helper()
	list, _, err := e.db.inbox.ListInbox(context.Background(), team, agent, false, paging.Page{Limit: 100})
	require.NoError(t, err)
	for _, m := range list {
		if m.ID == msgID {
			return m.ReadAt
		}
	}
	t.Fatalf("message %s is not in %s's inbox", msgID, agent)
	return nil
}

// A chat turn: the conversations function's own wiring on the local cloud
// (conversationsfn.Service), its model port recorded.
func TestAnInboxMessageReachesTheRecipientsNextChatRequestOnce(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	content := "Could you double-check the retry policy of the payment webhook before the release?"
	m := d.send("kyra", map[string]any{"to": "luke", "type": "task_request", "content": content})
	id := m["id"].(string)
	waitInbox(t, e, d.id, "luke", id)

	env := map[string]string{settings.EnvStage: e.names.Stage, settings.EnvTable: e.names.Table(), settings.EnvBus: e.names.Bus(),
		settings.EnvModelProvider: "local"}
	deps := lambdafn.Deps{Config: settings.FromLookup(func(k string) string { return env[k] }), AWS: e.cfg, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	cfg, err := conversationsfn.Config(deps, e.db.core)
	require.NoError(t, err)
	log := &modelLog{Model: cfg.Model}
	cfg.Model = log
	svc := conversations.MustNew(cfg)
	ctx := context.Background()
	conv, err := svc.Create(ctx, d.id, conversations.CreateInput{Title: "inbox", Agent: "luke"})
	require.NoError(t, err)

	_, err = svc.Post(ctx, d.id, conv.ID, conversations.PostInput{Content: "@luke what is on your plate today?"})
	require.NoError(t, err)
	sys := log.last(t, "luke").System
	assert.Contains(t, sys, "Your inbox: 1 unread")
	assert.Contains(t, sys, "- @kyra task_request (REQUEST): Could you double-check the retry policy")
	assert.Contains(t, sys, "Your team")
	assert.Contains(t, sys, "- @kyra ", "the roster names the sender")
	assert.NotNil(t, readAt(t, e, d.id, "luke", id), "read once the turn committed")

	_, err = svc.Post(ctx, d.id, conv.ID, conversations.PostInput{Content: "@luke and tomorrow?"})
	require.NoError(t, err)
	sys = log.last(t, "luke").System
	assert.NotContains(t, sys, "Your inbox", "shown once")
	assert.NotContains(t, sys, "retry policy")
	assert.Contains(t, sys, "Your team")
}

// The deployed route: a turn over HTTP marks the message read once it has
// committed; its reply's input tokens (counted by the model from the
// request it received) carry the summary, and the next turn's do not.
//
// What the inbox costs a turn (the edge's invocation log): one Query per
// agent asked, every turn (in the budget table's turns), and one write
// when the turn showed messages, here a single UpdateItem.
func TestAChatTurnOverHTTPMarksTheInboxRead(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	ask := func() (float64, map[string]int) {
		// A fresh conversation each time: the same prompt but for the
		// inbox summary.
		conv := d.conversation("luke")
		seq := lastSeq(t)
		turn := d.post(conv, map[string]any{"content": "@luke how are things?"})
		list, _ := invocations(t, seq, "conversations", d.id)
		require.Len(t, list, 1)
		return lastReply(t, turn)["input_tokens"].(float64), list[0].Calls
	}
	ask() // luke's memory context is built and cached: the turns below read it alike
	m := d.send("dana", map[string]any{"to": "luke", "type": "info_request", "content": "Which of the parser's error paths lack tests right now, in your view?"})
	id := m["id"].(string)
	waitInbox(t, e, d.id, "luke", id)

	with, withCalls := ask()
	assert.NotNil(t, readAt(t, e, d.id, "luke", id), "read once the turn committed")
	without, withoutCalls := ask()
	again, _ := ask()
	assert.Equal(t, without, again, "nothing new: the same request")
	t.Logf("turn with one unread message: %v; without: %v", withCalls, withoutCalls)
	withoutCalls["DynamoDB.UpdateItem"]++
	assert.Equal(t, withoutCalls, withCalls, "marking one message read is one write")
	assert.GreaterOrEqual(t, with-without, float64(models.EstimateTokens("Your inbox: 1 unread message, newest first (read once you answer): - @dana info_request: Which of the parser's error paths lack tests right now, in your view?")),
		"the first request carried the summary")
}

// A task step: the worker's prompt shows the message (its ids are on the
// attempt's timeline), the message is read once the step has ended well,
// and the next task is not shown it again.
func TestAnInboxMessageReachesTheRecipientsNextTaskOnce(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	seq := lastSeq(t)
	run := func(title string) map[string]any {
		st, tk := d.call("POST", "/v1/tasks", map[string]any{"assignee": "luke", "title": title, "instructions": "Review the error handling of the payment handler", "execute": true})
		require.Equal(t, 201, st, tk)
		deadline := time.Now().Add(60 * time.Second)
		for {
			tk = d.task(tk["id"].(string))
			if tk["status"] == "completed" || tk["status"] == "failed" || time.Now().After(deadline) {
				require.Equal(t, "completed", tk["status"], tk)
				return tk
			}
			time.Sleep(300 * time.Millisecond)
		}
	}
	run("warm-up task") // luke's memory context is built and cached
	m := d.send("sage", map[string]any{"to": "luke", "type": "notification", "content": "The staging database is read-only until noon."})
	id := m["id"].(string)
	waitInbox(t, e, d.id, "luke", id)
	shown := func(tk map[string]any) []string {
		var out []string
		for _, ev := range tk["events"].([]any) {
			p, _ := ev.(map[string]any)["payload"].(map[string]any)
			ids, _ := p["inbox_shown"].([]any)
			for _, x := range ids {
				out = append(out, x.(string))
			}
		}
		return out
	}
	first := run("first task")
	assert.Equal(t, []string{id}, shown(first))
	assert.NotNil(t, readAt(t, e, d.id, "luke", id), "read once the step ended well")
	second := run("second task")
	assert.Empty(t, shown(second), "shown once")

	// What the inbox costs the step (the edge's invocation log): the
	// assignee is read with its team (one Query instead of a GetItem),
	// the inbox is one Query, and showing a message adds one write. The
	// watch's reads (at most one per second the step ran: a loaded
	// machine's step outlasts one) may differ between the two.
	worker := func(taskID string) invocation {
		list, _ := invocations(t, seq, "task-worker", d.id)
		for _, inv := range list {
			if inv.TaskID == taskID {
				return inv
			}
		}
		t.Fatalf("no task-worker invocation for %s", taskID)
		return invocation{}
	}
	with, without := worker(first["id"].(string)), worker(second["id"].(string))
	t.Logf("task step with one unread message: %v; without: %v", with.Calls, without.Calls)
	withCalls, withoutCalls := maps.Clone(with.Calls), maps.Clone(without.Calls)
	withoutCalls["DynamoDB.UpdateItem"]++
	reads := withCalls["DynamoDB.GetItem"] - withoutCalls["DynamoDB.GetItem"]
	assert.LessOrEqual(t, reads, watchReads(with), "no read but the watch's more")
	assert.GreaterOrEqual(t, reads, -watchReads(without), "no read but the watch's fewer")
	delete(withCalls, "DynamoDB.GetItem")
	delete(withoutCalls, "DynamoDB.GetItem")
	assert.Equal(t, withoutCalls, withCalls, "marking one message read is one write")
}
