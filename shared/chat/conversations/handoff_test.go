package conversations_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/routing/cascade"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/team/memory"
)

// fakeStore keeps conversations in memory and records what each turn and
// handoff commits.
type fakeStore struct {
	convs    map[string]conversations.Conversation
	turns    []conversations.Turn
	handoffs []conversations.HandoffChange
}

func (f *fakeStore) CreateConversation(_ context.Context, c conversations.Conversation, _ *conversations.Participant) error {
	f.convs[c.ID] = c
	return nil
}
func (f *fakeStore) GetConversation(_ context.Context, _, id string) (conversations.Conversation, error) {
	c, ok := f.convs[id]
	if !ok {
		return c, apperr.NotFound("conversation", id)
	}
	return c, nil
}
func (f *fakeStore) ListConversations(context.Context, string, string, paging.Page) ([]conversations.Conversation, string, error) {
	return nil, "", nil
}
func (f *fakeStore) ListAgentConversations(context.Context, string, string, paging.Page) ([]conversations.Conversation, string, error) {
	return nil, "", nil
}
func (f *fakeStore) ListParticipants(context.Context, string, string) ([]conversations.Participant, error) {
	return nil, nil
}
func (f *fakeStore) ListMessages(context.Context, string, string, paging.Page) ([]conversations.Message, string, error) {
	return nil, "", nil
}
func (f *fakeStore) RecentMessages(context.Context, string, string, int) ([]conversations.Message, error) {
	return nil, nil
}
func (f *fakeStore) GetMessage(_ context.Context, _, _, id string) (conversations.Message, error) {
	return conversations.Message{}, apperr.NotFound("message", id)
}
func (f *fakeStore) CommitTurn(_ context.Context, _ string, t conversations.Turn) error {
	f.turns = append(f.turns, t)
	f.convs[t.Conversation.ID] = t.Conversation
	return nil
}
func (f *fakeStore) CloseConversation(context.Context, string, conversations.Conversation, time.Time) error {
	return nil
}
func (f *fakeStore) RateMessage(context.Context, string, conversations.Feedback) error { return nil }
func (f *fakeStore) CommitHandoff(_ context.Context, _ string, h conversations.HandoffChange) error {
	f.handoffs = append(f.handoffs, h)
	f.convs[h.Conversation.ID] = h.Conversation
	return nil
}
func (f *fakeStore) ListHandoffs(context.Context, string, string) ([]conversations.Handoff, error) {
	return nil, nil
}
func (f *fakeStore) SetParticipants(context.Context, string, string, []conversations.Participant, []string, time.Time) error {
	return nil
}

type directory map[string]agents.Agent

func (d directory) GetAgent(_ context.Context, _, slug string) (agents.Agent, error) {
	a, ok := d[slug]
	if !ok {
		return a, apperr.NotFound("agent", slug)
	}
	return a, nil
}
func (d directory) ActiveAgents(context.Context, string) ([]agents.Agent, error) {
	var out []agents.Agent
	for _, a := range d {
		if a.Status == agents.StatusActive {
			out = append(out, a)
		}
	}
	return out, nil
}
func (d directory) DefaultAgent(context.Context, string) (string, error) { return "kyra", nil }

// memories builds memories as the memory service does; contexts are empty.
type memories struct{ svc memory.Service }

func (m *memories) ForPerson(_ context.Context, _, agent, _ string) (memory.Context, error) {
	return memory.Context{Agent: agent}, nil
}
func (m *memories) New(author string, in memory.CreateInput, source string) (memory.Memory, error) {
	return m.svc.New(author, in, source)
}

type bus struct{ events []conversations.HandoffEvent }

func (b *bus) Publish(_ context.Context, detailType string, detail any) error {
	if detailType == conversations.HandoffDetailType {
		b.events = append(b.events, detail.(conversations.HandoffEvent))
	}
	return nil
}

// echo answers every request.
type echo struct{}

func (echo) Converse(_ context.Context, req models.Request) (models.Response, error) {
	return models.Response{Text: "hello from " + req.Metadata[models.MetadataAgent], ModelID: "echo"}, nil
}

// handedToLuke is a conversation Kyra handed to Luke.
func handedToLuke(id string) conversations.Conversation {
	at := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	h := conversations.Handoff{ID: "hoff_1", ConversationID: id, From: "kyra", To: "luke", Kind: conversations.KindHandoff, Reason: "code review", ContextSummary: "auth.go races", CreatedAt: at}
	return conversations.Conversation{ID: id, TeamID: "team_1", Status: conversations.StatusOpen, PrimaryAgent: "kyra", CurrentAgent: "luke",
		PreviousAgent: "kyra", HandoffActive: true, LastHandoff: &h, MessageCount: 4, Version: 3, CreatedAt: at, UpdatedAt: at}
}

func newService(t *testing.T) (*conversations.Service, *fakeStore, *bus) {
	t.Helper()
	cfg, store, b := serviceConfig(t)
	return conversations.MustNew(cfg), store, b
}

// serviceConfig is what newService builds its service from.
func serviceConfig(t *testing.T) (conversations.Config, *fakeStore, *bus) {
	t.Helper()
	store := &fakeStore{convs: map[string]conversations.Conversation{"conv_chat": handedToLuke("conv_chat"), "conv_api": handedToLuke("conv_api")}}
	dir := directory{}
	for _, a := range []agents.Agent{{Slug: "kyra", Name: "Kyra"}, {Slug: "luke", Name: "Luke"}, {Slug: "dana", Name: "Dana"}} {
		a.Status = agents.StatusActive
		dir[a.Slug] = a
	}
	b := &bus{}
	mem := &memories{}
	cfg := conversations.Config{Store: store, Agents: dir, Router: &cascade.Router{Flags: cascade.Flags{Collaboration: true}},
		Model: echo{}, Memories: mem, Context: conversations.Sources{Memories: mem}, Bus: b}
	return cfg, store, b
}

// Returning by "@kyra" in a chat turn and by POST …/return write the same
// change: the record, the note, the roles, the memory, the conversation's
// handoff fields, and one HandoffCompleted event each.
func TestReturnInATurnWritesWhatTheReturnEndpointWrites(t *testing.T) {
	ctx := context.Background()
	svc, store, b := newService(t)

	res, err := svc.Post(ctx, "team_1", "conv_chat", conversations.PostInput{Content: "@kyra thanks, back to you"})
	require.NoError(t, err)
	require.Len(t, store.turns, 1)
	turn := store.turns[0]
	require.NotNil(t, turn.Handoff, "the turn is a return")
	require.Len(t, res.Replies, 2, "the return's note, then Kyra's reply")
	assert.Equal(t, conversations.AuthorSystem, res.Replies[0].Role)
	assert.Equal(t, "kyra", res.Replies[1].Agent)

	h, err := svc.Return(ctx, "team_1", "conv_api")
	require.NoError(t, err)
	require.Len(t, store.handoffs, 1)
	api := store.handoffs[0]
	assert.Equal(t, h, api.Handoff)

	// The same record but for its id, time, reason and memory id.
	for _, r := range []conversations.Handoff{*turn.Handoff, api.Handoff} {
		assert.Equal(t, "luke", r.From)
		assert.Equal(t, "kyra", r.To)
		assert.Equal(t, conversations.KindReturn, r.Kind)
		assert.Equal(t, "auth.go races", r.ContextSummary, "a return passes back the summary")
		assert.NotEmpty(t, r.MemoryID)
	}
	// The note: the same sentence for each reason.
	note := func(reason string) string {
		return "Luke handed the conversation back to Kyra because " + reason + ". Summary: auth.go races."
	}
	assert.Equal(t, note("the user asked to go back to kyra"), res.Replies[0].Content)
	assert.Equal(t, res.Replies[0], turn.Messages[1])
	assert.Equal(t, note("return to the previous agent"), api.Note.Content)
	// The memory: episodic, by Luke, visible to Kyra too, the note's text.
	require.NotNil(t, turn.Memory)
	require.NotNil(t, api.Memory)
	for _, m := range []struct {
		mem    memory.Memory
		reason string
		id     string
	}{{*turn.Memory, "the user asked to go back to kyra", turn.Handoff.MemoryID}, {*api.Memory, "return to the previous agent", api.Handoff.MemoryID}} {
		assert.Equal(t, m.id, m.mem.ID)
		assert.Equal(t, "luke", m.mem.Author)
		assert.Equal(t, []string{"kyra"}, m.mem.Agents)
		assert.Equal(t, "episodic", m.mem.Type)
		assert.Equal(t, memory.Private, m.mem.Visibility)
		assert.Equal(t, "handoff", m.mem.Source)
		assert.Equal(t, strings.TrimSuffix(note(m.reason), "."), m.mem.Content)
	}
	// The roles: Luke becomes the handoff source, Kyra the primary again.
	roles := func(ps []conversations.Participant) map[string]string {
		out := map[string]string{}
		for _, p := range ps {
			assert.True(t, p.SetRole, p.Agent)
			out[p.Agent] = p.Role
		}
		return out
	}
	want := map[string]string{"luke": conversations.RoleHandoffSource, "kyra": conversations.RolePrimary}
	assert.Equal(t, want, roles(turn.Join))
	assert.Equal(t, want, roles(api.Roles))
	// The conversation: Kyra answers, a return goes back to Luke.
	for _, c := range []conversations.Conversation{turn.Conversation, api.Conversation} {
		assert.Equal(t, "kyra", c.CurrentAgent)
		assert.Equal(t, "luke", c.PreviousAgent)
		assert.True(t, c.HandoffActive)
		require.NotNil(t, c.LastHandoff)
		assert.Equal(t, conversations.KindReturn, c.LastHandoff.Kind)
		assert.Equal(t, 4, c.Version)
	}
	assert.Equal(t, 4+3, turn.Conversation.MessageCount, "the user's message, the note, the reply")
	assert.Equal(t, 4+1, api.Conversation.MessageCount, "the note")
	// One event each, the same shape.
	require.Len(t, b.events, 2)
	assert.Equal(t, turn.Handoff.ID, b.events[0].HandoffID)
	assert.Equal(t, api.Handoff.ID, b.events[1].HandoffID)
	for _, ev := range b.events {
		assert.Equal(t, "team_1", ev.TeamID)
		assert.Equal(t, "luke", ev.From)
		assert.Equal(t, "kyra", ev.To)
		assert.Equal(t, conversations.KindReturn, ev.Kind)
	}
}

// A mention of another agent is not a return, and a return whose agent
// does not answer is not recorded.
func TestOnlyAnAnsweredMentionOfThePreviousAgentReturns(t *testing.T) {
	ctx := context.Background()
	cfg, store, b := serviceConfig(t)
	svc := conversations.MustNew(cfg)
	_, err := svc.Post(ctx, "team_1", "conv_chat", conversations.PostInput{Content: "@dana what do the metrics say?"})
	require.NoError(t, err)
	require.Len(t, store.turns, 1)
	assert.Nil(t, store.turns[0].Handoff)
	assert.Nil(t, store.turns[0].Memory)
	assert.Len(t, store.turns[0].Messages, 2, "the user's message and Dana's reply")

	cfg.Model = failing{}
	svc = conversations.MustNew(cfg)
	_, err = svc.Post(ctx, "team_1", "conv_api", conversations.PostInput{Content: "@kyra are you there?"})
	require.Error(t, err)
	assert.Equal(t, apperr.EUPSTREAM, apperr.Code(err))
	require.Len(t, store.turns, 2)
	assert.Nil(t, store.turns[1].Handoff)
	assert.Nil(t, store.turns[1].Memory)
	assert.Equal(t, "luke", store.turns[1].Conversation.CurrentAgent, "nothing was returned")
	assert.Equal(t, cascade.OutcomeFailed, store.turns[1].Decision.Outcome)
	assert.Equal(t, routing.Mentioned, store.turns[1].Decision.Strategy)
	assert.Empty(t, b.events)
}

type failing struct{}

func (failing) Converse(context.Context, models.Request) (models.Response, error) {
	return models.Response{}, models.ErrModel
}
