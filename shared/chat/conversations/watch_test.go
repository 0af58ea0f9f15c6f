package conversations_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/routing/cascade"
)

// talkingModel is a toolModel that says something before its tool calls,
// as real models do ("Let me check."), and writes its text in pieces to a
// watcher (OnDelta).
type talkingModel struct{ *toolModel }

func (m talkingModel) Converse(ctx context.Context, req models.Request) (models.Response, error) {
	resp, err := m.toolModel.Converse(ctx, req)
	if err == nil && len(resp.ToolCalls) > 0 {
		resp.Text = "Let me check " + resp.ToolCalls[0].Name + "."
	}
	if req.OnDelta != nil {
		for _, p := range models.Chunks(resp.Text, 2) {
			req.OnDelta(p)
		}
	}
	return resp, err
}

type recorder struct {
	mu     sync.Mutex
	routed []cascade.Decision
	deltas []conversations.Delta
	tools  []conversations.ToolEvent
}

func (r *recorder) Routed(d cascade.Decision) {
	r.mu.Lock()
	r.routed = append(r.routed, d)
	r.mu.Unlock()
}
func (r *recorder) Delta(d conversations.Delta) {
	r.mu.Lock()
	r.deltas = append(r.deltas, d)
	r.mu.Unlock()
}
func (r *recorder) ToolCalled(t conversations.ToolEvent) {
	r.mu.Lock()
	r.tools = append(r.tools, t)
	r.mu.Unlock()
}
func (r *recorder) ToolAnswered(t conversations.ToolEvent) {
	r.mu.Lock()
	r.tools = append(r.tools, t)
	r.mu.Unlock()
}

// A watched turn: the decision, the model's pieces under the id of the
// message they become, and its tool calls; what the model said before a
// tool call stays in the stored reply, as it was watched, and in what the
// model sees next.
func TestAWatchedTurnSeesWhatItStores(t *testing.T) {
	m := &toolModel{tokens: 20, plan: []models.ToolCall{{ID: "1", Name: "check_task_status", Input: `{"task_id":"task_1"}`}}}
	f := toolFixture(t, m, &fakeTools{specs: spec("check_task_status")})
	f.cfg.Model = talkingModel{m}
	f.rebuild()
	c := f.create(t, "kyra")
	w := &recorder{}
	res, err := f.svc.Post(context.Background(), team, c.ID, conversations.PostInput{Content: "How is the audit going?", Watch: w})
	require.NoError(t, err)
	r := reply(t, res)
	assert.Equal(t, "Let me check check_task_status.\n\nanswer after: check_task_status done", r.Content)
	stored := f.messages(t, c.ID)
	assert.Equal(t, r.Content, stored[len(stored)-1].Content)

	require.Len(t, w.routed, 1)
	assert.Equal(t, res.Routing.ID, w.routed[0].ID)
	var text strings.Builder
	for _, d := range w.deltas {
		assert.Equal(t, r.ID, d.MessageID, "the pieces name the message they become")
		assert.Equal(t, "kyra", d.Agent)
		assert.False(t, d.Draft, "one agent answers: no draft")
		text.WriteString(d.Text)
	}
	assert.Equal(t, r.Content, text.String(), "the pieces concatenate to the stored reply")
	require.Len(t, w.tools, 2)
	assert.Equal(t, "check_task_status", w.tools[0].Tool)
	assert.Empty(t, w.tools[0].Output)
	assert.Equal(t, "check_task_status done", w.tools[1].Output)
	assert.Equal(t, r.ID, w.tools[1].MessageID)

	last := m.requests[len(m.requests)-1].Messages
	require.GreaterOrEqual(t, len(last), 3)
	assert.Equal(t, "Let me check check_task_status.", last[len(last)-2].Content, "the model sees what it said before its call")
}

// streamingModel writes each answer to the watcher in one piece.
type streamingModel struct{ *pricedModel }

func (m streamingModel) Converse(ctx context.Context, req models.Request) (models.Response, error) {
	resp, err := m.pricedModel.Converse(ctx, req)
	if err == nil && req.OnDelta != nil {
		req.OnDelta(resp.Text)
	}
	return resp, err
}

// An ENSEMBLE's answers are watched as drafts under the agents' own ids;
// the synthesis it stores is a message of its own.
func TestAnEnsemblesAnswersAreDraftsAndItsSynthesisHasItsOwnID(t *testing.T) {
	m := &pricedModel{answers: map[string]string{"luke": offTopic, "dana": relevant}, fail: map[string]bool{"archie": true}}
	f := gateFixture(t, streamingModel{m}, &fakeTools{})
	f.cfg.Synth = &routing.Synthesizer{Model: synth{}, ModelID: pricedID}
	f.rebuild()
	conv := f.create(t, "kyra")
	w := &recorder{}
	res, err := f.svc.Post(context.Background(), team, conv.ID, conversations.PostInput{Content: indexQuestion, Strategy: "ensemble", Watch: w})
	require.NoError(t, err)
	r := reply(t, res)
	require.Len(t, w.deltas, 2, "dana's and luke's answers")
	for _, d := range w.deltas {
		assert.True(t, d.Draft, "%+v", d)
		assert.NotEqual(t, r.ID, d.MessageID, "the synthesis is not a draft's message")
	}
}
