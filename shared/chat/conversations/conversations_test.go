package conversations_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
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
	"github.com/conclave-ai/conclave/shared/testkit/demo"
	"github.com/conclave-ai/conclave/shared/testkit/memstore"
)

// These tests drive chat through the conversations service's public
// methods on the in-memory store, with a deterministic model and without
// the expert gate (the unit tests of routing pin the gate's choices).

const team = demo.TeamID

// model is a deterministic model port: an agent answers with its name and
// the message it was asked; the agents named in fail return an error.
type model struct {
	mu       sync.Mutex
	fail     map[string]bool // by agent slug
	requests []models.Request
}

func (m *model) Converse(_ context.Context, req models.Request) (models.Response, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests = append(m.requests, req)
	agent := req.Metadata[models.MetadataAgent]
	if m.fail[agent] {
		return models.Response{}, errors.New("model unavailable")
	}
	last := req.Messages[len(req.Messages)-1].Content
	return models.Response{Text: agent + " answers: " + last, InputTokens: 12, OutputTokens: 6, ModelID: "test-model"}, nil
}

// last returns the last request the model received.
func (m *model) last(tb testing.TB) models.Request {
	tb.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	require.NotEmpty(tb, m.requests)
	return m.requests[len(m.requests)-1]
}

type fixture struct {
	store  *memstore.Store
	bus    *memstore.Publisher
	model  *model
	memory *memory.Service
	// cfg and sources are what svc is built from (rebuild): a test
	// changes a part there, as a function's wiring would give it.
	cfg     conversations.Config
	sources conversations.Sources
	svc     *conversations.Service
}

// rebuild builds f.svc again from f.cfg, with f.sources as its context.
func (f *fixture) rebuild() {
	f.cfg.Context = f.sources
	f.svc = conversations.MustNew(f.cfg)
}

var now = time.Date(2030, 1, 2, 9, 0, 0, 0, time.UTC)

// newFixture is the demo team, chat with the given flags, the team memory
// bus and a recording event bus, all on one in-memory store.
func newFixture(tb testing.TB, flags cascade.Flags) *fixture {
	tb.Helper()
	store := memstore.New()
	require.NoError(tb, demo.Seed(context.Background(), store))
	clock := func() time.Time { return now }
	store.Now = clock
	bus := &memstore.Publisher{}
	m := &model{fail: map[string]bool{}}
	mem := &memory.Service{Store: store, Dir: store, Bus: bus, Now: clock}
	f := &fixture{store: store, bus: bus, model: m, memory: mem,
		cfg: conversations.Config{
			Store: store, Agents: store, Model: m, Memories: mem, Bus: bus, Now: clock,
			Router: &cascade.Router{Flags: flags, Tiers: routing.DefaultTierModels},
			Log:    slog.New(slog.NewTextHandler(io.Discard, nil)),
		},
		sources: conversations.Sources{Memories: mem}}
	f.rebuild()
	return f
}

var (
	collaborationOff = cascade.Flags{}
	collaborationOn  = cascade.Flags{Collaboration: true}
)

func (f *fixture) create(tb testing.TB, agent string) conversations.Conversation {
	tb.Helper()
	c, err := f.svc.Create(context.Background(), team, conversations.CreateInput{Title: "Chat", Agent: agent})
	require.NoError(tb, err)
	return c
}

func (f *fixture) post(tb testing.TB, convID, content string) conversations.PostResult {
	tb.Helper()
	res, err := f.svc.Post(context.Background(), team, convID, conversations.PostInput{Content: content})
	require.NoError(tb, err)
	return res
}

func (f *fixture) get(tb testing.TB, id string) conversations.Conversation {
	tb.Helper()
	c, err := f.svc.Get(context.Background(), team, id)
	require.NoError(tb, err)
	return c
}

func (f *fixture) messages(tb testing.TB, id string) []conversations.Message {
	tb.Helper()
	list, _, err := f.svc.Messages(context.Background(), team, id, paging.Page{})
	require.NoError(tb, err)
	return list
}

// reply is the one agent reply of a turn.
func reply(tb testing.TB, res conversations.PostResult) conversations.Message {
	tb.Helper()
	var out []conversations.Message
	for _, m := range res.Replies {
		if m.Role == conversations.AuthorAssistant {
			out = append(out, m)
		}
	}
	require.Len(tb, out, 1, "%+v", res.Replies)
	return out[0]
}

// roles maps each participant to its role ("left" for one that left).
func roles(c conversations.Conversation) map[string]string {
	out := map[string]string{}
	for _, p := range c.Participants {
		out[p.Agent] = p.Role
		if p.LeftAt != nil {
			out[p.Agent] = "left"
		}
	}
	return out
}

func (f *fixture) activeConversations(tb testing.TB, slug string) int {
	tb.Helper()
	loads, err := f.store.AgentLoads(context.Background(), team)
	require.NoError(tb, err)
	return loads.Of(slug).ActiveConversations
}

func (f *fixture) setStatus(tb testing.TB, slug, status string) {
	tb.Helper()
	_, err := agents.NewService(f.store).SetStatus(context.Background(), team, slug, status)
	require.NoError(tb, err)
}

func requireAppErr(tb testing.TB, err error, code, reason string) *apperr.Error {
	tb.Helper()
	require.Error(tb, err)
	ae, ok := apperr.As(err)
	require.True(tb, ok, "%v is not an *apperr.Error", err)
	require.Equal(tb, code, ae.Code, ae.Error())
	require.Equal(tb, reason, ae.Reason, ae.Error())
	return ae
}

func TestCreateWithoutAnAgent(t *testing.T) {
	f := newFixture(t, collaborationOff)
	c := f.create(t, "")
	assert.Equal(t, conversations.StatusOpen, c.Status)
	assert.Equal(t, "Chat", c.Title)
	assert.Empty(t, c.PrimaryAgent)
	assert.Empty(t, c.CurrentAgent)
	assert.Equal(t, 1, c.Version)
	assert.Equal(t, now, c.CreatedAt)

	got := f.get(t, c.ID)
	assert.Equal(t, c.ID, got.ID)
	assert.Empty(t, got.Participants)
	list, _, err := f.svc.List(context.Background(), team, "", paging.Page{})
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, c.ID, list[0].ID)
}

func TestCreateWithAPrimaryAgent(t *testing.T) {
	f := newFixture(t, collaborationOff)
	c := f.create(t, "luke")
	assert.Equal(t, "luke", c.PrimaryAgent)
	assert.Equal(t, "luke", c.CurrentAgent)
	got := f.get(t, c.ID)
	assert.Equal(t, map[string]string{"luke": conversations.RolePrimary}, roles(got))
	assert.Equal(t, 1, f.activeConversations(t, "luke"))
}

func TestCreateRejections(t *testing.T) {
	f := newFixture(t, collaborationOff)
	f.setStatus(t, "dana", agents.StatusPaused)
	ctx := context.Background()
	for _, tc := range []struct {
		in     conversations.CreateInput
		code   string
		reason string
	}{
		{conversations.CreateInput{Agent: "nobody"}, apperr.ENOTFOUND, ""},
		{conversations.CreateInput{Agent: "Not A Slug"}, apperr.ENOTFOUND, ""},
		{conversations.CreateInput{Agent: "dana"}, apperr.ECONFLICT, "AgentUnavailable"},
		{conversations.CreateInput{Title: strings.Repeat("x", conversations.MaxTitle+1)}, apperr.EINVALID, ""},
	} {
		_, err := f.svc.Create(ctx, team, tc.in)
		requireAppErr(t, err, tc.code, tc.reason)
	}
	list, _, err := f.svc.List(ctx, team, "", paging.Page{})
	require.NoError(t, err)
	assert.Empty(t, list, "nothing was created")
	assert.Equal(t, 0, f.activeConversations(t, "dana"))
}

func TestWithCollaborationOffTheTeamsDefaultAgentAnswersANewConversation(t *testing.T) {
	f := newFixture(t, collaborationOff)
	c := f.create(t, "")
	res := f.post(t, c.ID, "  What should we plan for next week?  ")

	assert.Equal(t, conversations.AuthorUser, res.UserMessage.Role)
	assert.Equal(t, "What should we plan for next week?", res.UserMessage.Content)
	r := reply(t, res)
	assert.Equal(t, "kyra", r.Agent)
	assert.Equal(t, "kyra answers: What should we plan for next week?", r.Content)
	assert.Equal(t, res.UserMessage.ID, r.ReplyTo)
	assert.Equal(t, "test-model", r.ModelID)
	assert.Equal(t, 12, r.InputTokens)
	assert.Equal(t, "direct", string(res.Routing.Strategy))
	assert.Equal(t, []string{"kyra"}, res.Routing.SelectedAgents)
	assert.Equal(t, res.Routing.ID, r.DecisionID)

	got := f.get(t, c.ID)
	assert.Equal(t, "kyra", got.CurrentAgent)
	assert.Equal(t, "kyra", got.PrimaryAgent, "the first agent to answer becomes the primary")
	assert.Equal(t, 2, got.MessageCount)
	assert.Equal(t, 2, got.Version)
	assert.Equal(t, map[string]string{"kyra": conversations.RolePrimary}, roles(got))
	assert.Equal(t, 1, f.activeConversations(t, "kyra"))

	msgs := f.messages(t, c.ID)
	require.Len(t, msgs, 2)
	assert.Equal(t, res.UserMessage.ID, msgs[0].ID, "oldest first")
	assert.Equal(t, r.ID, msgs[1].ID)

	req := f.model.last(t)
	assert.Equal(t, map[string]string{models.MetadataTeamID: demo.TeamID, models.MetadataAgent: "kyra", models.MetadataConversationID: c.ID}, req.Metadata,
		"the call is attributed to the team, the agent and the conversation (budget usage)")
	assert.Contains(t, req.System, "You are Kyra (@kyra)")
	assert.Contains(t, req.System, "general-assistance")
}

func TestWithCollaborationOffTheConversationsAgentAnswersEvenWhenAnotherIsMentioned(t *testing.T) {
	f := newFixture(t, collaborationOff)
	c := f.create(t, "luke")
	first := f.post(t, c.ID, "Review this function please")
	assert.Equal(t, "luke", reply(t, first).Agent)

	second := f.post(t, c.ID, "@dana what do you think?")
	assert.Equal(t, "luke", reply(t, second).Agent, "mentions route only with collaboration on")
	assert.Equal(t, map[string]string{"luke": conversations.RolePrimary}, roles(f.get(t, c.ID)))

	// The agent sees the conversation so far.
	req := f.model.last(t)
	require.Len(t, req.Messages, 3)
	assert.Equal(t, "Review this function please", req.Messages[0].Content)
	assert.Equal(t, "assistant", req.Messages[1].Role)
	assert.Equal(t, "@dana what do you think?", req.Messages[2].Content)
}

func TestWithCollaborationOffAnUnavailableAgentFallsBackToTheDefault(t *testing.T) {
	f := newFixture(t, collaborationOff)
	c := f.create(t, "luke")
	f.setStatus(t, "luke", agents.StatusPaused)

	res := f.post(t, c.ID, "Are you there?")
	require.Len(t, res.Replies, 2)
	assert.Equal(t, conversations.AuthorSystem, res.Replies[0].Role)
	assert.Equal(t, "luke is not available, so the team's default agent is answering.", res.Replies[0].Content)
	assert.Equal(t, "kyra", reply(t, res).Agent)
	assert.True(t, res.Routing.Fallback)
	got := f.get(t, c.ID)
	assert.Equal(t, "kyra", got.CurrentAgent)
	assert.Equal(t, map[string]string{"luke": conversations.RolePrimary, "kyra": conversations.RoleInvited}, roles(got))
	assert.Equal(t, 0, f.activeConversations(t, "luke"))
	assert.Equal(t, 1, f.activeConversations(t, "kyra"))
}

func TestAMentionRoutesToTheNamedAgent(t *testing.T) {
	f := newFixture(t, collaborationOn)
	c := f.create(t, "kyra")
	res := f.post(t, c.ID, "@luke can you look at the retry loop?")

	assert.Equal(t, "luke", reply(t, res).Agent)
	assert.Equal(t, "mention", string(res.Routing.Strategy))
	assert.Equal(t, []string{"luke"}, res.Routing.SelectedAgents)
	got := f.get(t, c.ID)
	assert.Equal(t, "luke", got.CurrentAgent)
	assert.Equal(t, "kyra", got.PrimaryAgent)
	assert.Equal(t, map[string]string{"kyra": conversations.RolePrimary, "luke": conversations.RoleInvited}, roles(got))
	assert.Equal(t, 0, f.activeConversations(t, "kyra"))
	assert.Equal(t, 1, f.activeConversations(t, "luke"))

	d, err := (&cascade.Service{Store: f.store}).Decision(context.Background(), team, res.Routing.ID)
	require.NoError(t, err)
	assert.Equal(t, res.UserMessage.ID, d.MessageID)
	assert.Equal(t, []string{"luke"}, d.AnsweredBy)
}

func TestAClosedConversationTakesNoMoreMessages(t *testing.T) {
	f := newFixture(t, collaborationOff)
	ctx := context.Background()
	c := f.create(t, "kyra")
	f.post(t, c.ID, "hello")

	closed, err := f.svc.Close(ctx, team, c.ID)
	require.NoError(t, err)
	assert.Equal(t, conversations.StatusClosed, closed.Status)
	assert.Equal(t, 0, f.activeConversations(t, "kyra"), "a closed conversation no longer counts")

	_, err = f.svc.Post(ctx, team, c.ID, conversations.PostInput{Content: "are you still there?"})
	requireAppErr(t, err, apperr.ECONFLICT, "ConversationClosed")
	assert.Len(t, f.messages(t, c.ID), 2, "nothing was written")
	_, err = f.svc.Close(ctx, team, c.ID)
	requireAppErr(t, err, apperr.ECONFLICT, "ConversationClosed")
	_, err = f.svc.Handoff(ctx, team, c.ID, conversations.HandoffInput{To: "luke", Reason: "code"})
	requireAppErr(t, err, apperr.ECONFLICT, "ConversationClosed")
	_, err = f.svc.SetAgents(ctx, team, c.ID, conversations.AgentsInput{Add: []string{"dana"}})
	requireAppErr(t, err, apperr.ECONFLICT, "ConversationClosed")
}

// writeBeforeClose is a store on which, once, another write lands on the
// conversation between the close's read and its write.
type writeBeforeClose struct {
	conversations.Store
	meanwhile func()
}

func (w *writeBeforeClose) CloseConversation(ctx context.Context, teamID string, c conversations.Conversation, at time.Time) error {
	if f := w.meanwhile; f != nil {
		w.meanwhile = nil
		f()
	}
	return w.Store.CloseConversation(ctx, teamID, c, at)
}

// A turn that commits while the conversation is being closed does not
// make the close fail: it is tried again on a fresh read.
func TestACloseRacingAWriteClosesTheConversation(t *testing.T) {
	f := newFixture(t, collaborationOff)
	ctx := context.Background()
	c := f.create(t, "kyra")
	racing := &writeBeforeClose{Store: f.store, meanwhile: func() { f.post(t, c.ID, "one more thing") }}
	f.cfg.Store = racing
	f.rebuild()

	closed, err := f.svc.Close(ctx, team, c.ID)
	require.NoError(t, err)
	assert.Nil(t, racing.meanwhile, "the write landed between the read and the close")
	assert.Equal(t, conversations.StatusClosed, closed.Status)
	assert.Equal(t, conversations.StatusClosed, f.get(t, c.ID).Status)
	assert.Equal(t, f.get(t, c.ID).Version, closed.Version, "the version answered is the stored one")
	assert.Len(t, f.messages(t, c.ID), 2, "the racing turn kept its messages")
	assert.Equal(t, 0, f.activeConversations(t, "kyra"), "the agent's count moved once")
}

func TestPostValidatesAndFindsTheConversation(t *testing.T) {
	f := newFixture(t, collaborationOff)
	ctx := context.Background()
	c := f.create(t, "")
	for _, content := range []string{"", "   ", strings.Repeat("x", conversations.MaxContent+1)} {
		_, err := f.svc.Post(ctx, team, c.ID, conversations.PostInput{Content: content})
		ae := requireAppErr(t, err, apperr.EINVALID, "")
		assert.Equal(t, "content", ae.Field)
	}
	_, err := f.svc.Post(ctx, team, "conv_missing", conversations.PostInput{Content: "hi"})
	requireAppErr(t, err, apperr.ENOTFOUND, "")
	_, err = f.svc.Post(ctx, demo.OtherTeamID, c.ID, conversations.PostInput{Content: "hi"})
	requireAppErr(t, err, apperr.ENOTFOUND, "")
}

func TestWhenTheAgentFailsTheTurnIsStillRecorded(t *testing.T) {
	f := newFixture(t, collaborationOff)
	f.model.fail["kyra"] = true
	c := f.create(t, "kyra")

	res, err := f.svc.Post(context.Background(), team, c.ID, conversations.PostInput{Content: "hello"})
	requireAppErr(t, err, apperr.EUPSTREAM, "AllAgentsFailed")
	require.Len(t, res.Replies, 1)
	assert.Equal(t, conversations.AuthorSystem, res.Replies[0].Role)
	assert.Contains(t, res.Replies[0].Content, "kyra failed")
	assert.Equal(t, cascade.OutcomeFailed, res.Routing.Outcome)

	msgs := f.messages(t, c.ID)
	require.Len(t, msgs, 2)
	assert.Equal(t, conversations.AuthorSystem, msgs[1].Role)
}

func TestRateAReply(t *testing.T) {
	f := newFixture(t, collaborationOff)
	ctx := context.Background()
	c := f.create(t, "kyra")
	res := f.post(t, c.ID, "Plan the launch")
	r := reply(t, res)

	fb, err := f.svc.Rate(ctx, team, c.ID, r.ID, conversations.RateInput{Rating: 4, Comment: " helpful "})
	require.NoError(t, err)
	assert.Equal(t, []string{"kyra"}, fb.Agents)
	assert.Equal(t, "helpful", fb.Comment)
	assert.Equal(t, now, fb.RatedAt)
	msgs := f.messages(t, c.ID)
	assert.Equal(t, 4, msgs[1].Rating)
	assert.Equal(t, 0, msgs[0].Rating)

	// Both ends of the scale are ratings.
	for _, rating := range []int{1, 5} {
		fb, err := f.svc.Rate(ctx, team, c.ID, r.ID, conversations.RateInput{Rating: rating})
		require.NoError(t, err, rating)
		assert.Equal(t, rating, fb.Rating)
	}
	// A later rating replaces the earlier one, for the gate too.
	_, err = f.svc.Rate(ctx, team, c.ID, r.ID, conversations.RateInput{Rating: 2})
	require.NoError(t, err)
	assert.Equal(t, 2, f.messages(t, c.ID)[1].Rating)
	// Ratings are keyed by the reply's id, which holds the wall-clock time
	// it was made (the service's clock is fake), so "since" is wall time.
	ratings, err := f.store.RecentRatings(ctx, team, time.Now().Add(-time.Hour), 10)
	require.NoError(t, err)
	require.Len(t, ratings, 1)
	assert.Equal(t, "kyra", ratings[0].Agent)
	assert.Equal(t, 2, ratings[0].Rating)
	assert.Equal(t, "Plan the launch", ratings[0].Query)

	for _, tc := range []struct {
		conv, msg string
		in        conversations.RateInput
		code      string
		field     string
	}{
		{c.ID, r.ID, conversations.RateInput{Rating: 0}, apperr.EINVALID, "rating"},
		{c.ID, r.ID, conversations.RateInput{Rating: 6}, apperr.EINVALID, "rating"},
		{c.ID, r.ID, conversations.RateInput{Rating: 3, Comment: strings.Repeat("x", conversations.MaxComment+1)}, apperr.EINVALID, "comment"},
		{c.ID, res.UserMessage.ID, conversations.RateInput{Rating: 3}, apperr.EINVALID, "message_id"},
		{c.ID, "msg_missing", conversations.RateInput{Rating: 3}, apperr.ENOTFOUND, ""},
		{"conv_missing", r.ID, conversations.RateInput{Rating: 3}, apperr.ENOTFOUND, ""},
	} {
		_, err := f.svc.Rate(ctx, team, tc.conv, tc.msg, tc.in)
		ae := requireAppErr(t, err, tc.code, "")
		assert.Equal(t, tc.field, ae.Field)
	}
	assert.Equal(t, 2, f.messages(t, c.ID)[1].Rating, "refused ratings change nothing")
}

func handoffEvents(f *fixture) []conversations.HandoffEvent {
	return memstore.Details[conversations.HandoffEvent](f.bus, conversations.HandoffDetailType)
}

func TestHandoffThenReturn(t *testing.T) {
	f := newFixture(t, collaborationOn)
	ctx := context.Background()
	c := f.create(t, "kyra")
	f.post(t, c.ID, "I need help with my project")

	h, err := f.svc.Handoff(ctx, team, c.ID, conversations.HandoffInput{From: "kyra", To: "luke", Reason: "it is a code review", ContextSummary: "The user wants a review of worker.go"})
	require.NoError(t, err)
	assert.Equal(t, "kyra", h.From)
	assert.Equal(t, "luke", h.To)
	assert.Equal(t, conversations.KindHandoff, h.Kind)
	assert.NotEmpty(t, h.MemoryID)

	got := f.get(t, c.ID)
	assert.Equal(t, "luke", got.CurrentAgent)
	assert.Equal(t, "kyra", got.PreviousAgent)
	assert.True(t, got.HandoffActive)
	assert.Equal(t, map[string]string{"kyra": conversations.RoleHandoffSource, "luke": conversations.RoleInvited}, roles(got))
	assert.Equal(t, 0, f.activeConversations(t, "kyra"))
	assert.Equal(t, 1, f.activeConversations(t, "luke"))
	msgs := f.messages(t, c.ID)
	note := msgs[len(msgs)-1]
	assert.Equal(t, conversations.AuthorSystem, note.Role)
	assert.Equal(t, "Kyra handed off to Luke because it is a code review. Summary: The user wants a review of worker.go.", note.Content)
	assert.Equal(t, []conversations.HandoffEvent{{TeamID: team, ConversationID: c.ID, HandoffID: h.ID, From: "kyra", To: "luke", Kind: conversations.KindHandoff, Reason: "it is a code review", CreatedAt: now}}, handoffEvents(f))

	// The handoff memory is shared by the two agents, and no one else.
	for agent, visible := range map[string]bool{"kyra": true, "luke": true, "dana": false} {
		mems, err := f.memory.Visible(ctx, team, agent)
		require.NoError(t, err)
		ids := []string{}
		for _, m := range mems {
			ids = append(ids, m.ID)
		}
		assert.Equal(t, visible, len(ids) == 1 && ids[0] == h.MemoryID, agent)
	}

	// The agent taken over answers, with the handoff in its context.
	res := f.post(t, c.ID, "Here is the file")
	assert.Equal(t, "luke", reply(t, res).Agent)
	assert.Equal(t, "handoff", string(res.Routing.Strategy))
	assert.Contains(t, f.model.last(t).System, "kyra handed this conversation to you (it is a code review). Summary: The user wants a review of worker.go")
	ac, err := f.svc.ContextFor(ctx, team, c.ID, "luke")
	require.NoError(t, err)
	assert.Contains(t, ac.HandoffSummary, "The user wants a review of worker.go")

	back, err := f.svc.Return(ctx, team, c.ID)
	require.NoError(t, err)
	assert.Equal(t, conversations.KindReturn, back.Kind)
	assert.Equal(t, "luke", back.From)
	assert.Equal(t, "kyra", back.To)
	assert.Equal(t, "The user wants a review of worker.go", back.ContextSummary, "a return carries the summary back")
	got = f.get(t, c.ID)
	assert.Equal(t, "kyra", got.CurrentAgent)
	assert.Equal(t, "luke", got.PreviousAgent)
	assert.Equal(t, map[string]string{"kyra": conversations.RolePrimary, "luke": conversations.RoleHandoffSource}, roles(got))
	assert.Equal(t, 1, f.activeConversations(t, "kyra"))
	assert.Equal(t, 0, f.activeConversations(t, "luke"))

	hs, err := f.svc.Handoffs(ctx, team, c.ID)
	require.NoError(t, err)
	require.Len(t, hs, 2)
	assert.Equal(t, []string{h.ID, back.ID}, []string{hs[0].ID, hs[1].ID}, "oldest first")
	assert.Len(t, handoffEvents(f), 2)
	assert.Equal(t, "kyra", reply(t, f.post(t, c.ID, "Thanks!")).Agent)
}

func TestMentioningThePreviousAgentReturnsTheConversation(t *testing.T) {
	f := newFixture(t, collaborationOn)
	ctx := context.Background()
	c := f.create(t, "kyra")
	_, err := f.svc.Handoff(ctx, team, c.ID, conversations.HandoffInput{To: "luke", Reason: "code"})
	require.NoError(t, err)

	res := f.post(t, c.ID, "@kyra thanks, back to you")
	assert.Equal(t, "kyra", reply(t, res).Agent)
	hs, err := f.svc.Handoffs(ctx, team, c.ID)
	require.NoError(t, err)
	require.Len(t, hs, 2, "the turn recorded the return")
	assert.Equal(t, conversations.KindReturn, hs[1].Kind)
	assert.Equal(t, "luke", hs[1].From)
	got := f.get(t, c.ID)
	assert.Equal(t, "kyra", got.CurrentAgent)
	assert.Equal(t, "luke", got.PreviousAgent)
	assert.Equal(t, conversations.RoleHandoffSource, roles(got)["luke"])
	assert.Len(t, handoffEvents(f), 2)

	// The same writes as POST …/return: a memory for the two agents and the
	// system note before the reply.
	require.NotEmpty(t, hs[1].MemoryID, "the return wrote its episodic memory")
	luke, err := f.memory.ForAgent(ctx, team, "luke")
	require.NoError(t, err)
	assert.Contains(t, luke.IDs(), hs[1].MemoryID)
	require.GreaterOrEqual(t, len(res.Replies), 2)
	assert.Equal(t, conversations.AuthorSystem, res.Replies[0].Role, "the return note comes before the reply")
}

// Turns racing on one conversation all land: the store refuses the losers
// with conversations.ErrChanged and the service retries them on the new
// version, so no turn and no counter is lost.
func TestConcurrentTurnsInOneConversationAllLand(t *testing.T) {
	f := newFixture(t, collaborationOff)
	c := f.create(t, "kyra")
	const n = 8
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := f.svc.Post(context.Background(), team, c.ID, conversations.PostInput{Content: fmt.Sprintf("question %d", i)})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	got := f.get(t, c.ID)
	assert.Equal(t, 2*n, got.MessageCount)
	assert.Len(t, f.messages(t, c.ID), 2*n)
	assert.Equal(t, 1, f.activeConversations(t, "kyra"))
}

func TestHandoffRejections(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		agent  string // the conversation's primary agent
		in     conversations.HandoffInput
		code   string
		reason string
		field  string
	}{
		{"no reason", "kyra", conversations.HandoffInput{To: "luke"}, apperr.EINVALID, "", "reason"},
		{"no target", "kyra", conversations.HandoffInput{Reason: "code"}, apperr.EINVALID, "", "to"},
		{"summary too long", "kyra", conversations.HandoffInput{To: "luke", Reason: "code", ContextSummary: strings.Repeat("x", conversations.MaxSummary+1)}, apperr.EINVALID, "", "context_summary"},
		{"to the current agent", "kyra", conversations.HandoffInput{To: "kyra", Reason: "code"}, apperr.EINVALID, "", "to"},
		{"not from the current agent", "kyra", conversations.HandoffInput{From: "dana", To: "luke", Reason: "code"}, apperr.ECONFLICT, "NotCurrentAgent", ""},
		{"to an unknown agent", "kyra", conversations.HandoffInput{To: "nobody", Reason: "code"}, apperr.ENOTFOUND, "", ""},
		{"to a paused agent", "kyra", conversations.HandoffInput{To: "wren", Reason: "code"}, apperr.ECONFLICT, "AgentUnavailable", ""},
		{"without a current agent", "", conversations.HandoffInput{To: "luke", Reason: "code"}, apperr.ECONFLICT, "NoCurrentAgent", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, collaborationOn)
			f.setStatus(t, "wren", agents.StatusPaused)
			c := f.create(t, tc.agent)
			_, err := f.svc.Handoff(ctx, team, c.ID, tc.in)
			ae := requireAppErr(t, err, tc.code, tc.reason)
			assert.Equal(t, tc.field, ae.Field)
			hs, err := f.svc.Handoffs(ctx, team, c.ID)
			require.NoError(t, err)
			assert.Empty(t, hs)
			assert.Equal(t, c.CurrentAgent, f.get(t, c.ID).CurrentAgent)
			assert.Empty(t, handoffEvents(f))
		})
	}

	f := newFixture(t, collaborationOn)
	c := f.create(t, "kyra")
	_, err := f.svc.Return(ctx, team, c.ID)
	requireAppErr(t, err, apperr.ECONFLICT, "NoPreviousAgent")
	_, err = f.svc.Handoff(ctx, team, "conv_missing", conversations.HandoffInput{To: "luke", Reason: "code"})
	requireAppErr(t, err, apperr.ENOTFOUND, "")
}

func TestAddAndRemoveParticipants(t *testing.T) {
	f := newFixture(t, collaborationOff)
	ctx := context.Background()
	f.setStatus(t, "archie", agents.StatusPaused)
	c := f.create(t, "kyra")

	got, err := f.svc.SetAgents(ctx, team, c.ID, conversations.AgentsInput{Add: []string{"dana", "wren"}})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"kyra": conversations.RolePrimary, "dana": conversations.RoleInvited, "wren": conversations.RoleInvited}, roles(got))
	var joined time.Time
	for _, p := range got.Participants {
		if p.Agent == "wren" {
			joined = p.JoinedAt
		}
	}

	got, err = f.svc.SetAgents(ctx, team, c.ID, conversations.AgentsInput{Remove: []string{"wren"}})
	require.NoError(t, err)
	assert.Equal(t, "left", roles(got)["wren"])
	_, err = f.svc.SetAgents(ctx, team, c.ID, conversations.AgentsInput{Remove: []string{"wren"}})
	requireAppErr(t, err, apperr.ENOTFOUND, "")

	// Rejoining keeps the first role and join time.
	got, err = f.svc.SetAgents(ctx, team, c.ID, conversations.AgentsInput{Add: []string{"wren"}})
	require.NoError(t, err)
	assert.Equal(t, conversations.RoleInvited, roles(got)["wren"])
	for _, p := range got.Participants {
		if p.Agent == "wren" {
			assert.Equal(t, joined, p.JoinedAt)
		}
	}

	for _, tc := range []struct {
		in     conversations.AgentsInput
		code   string
		reason string
	}{
		{conversations.AgentsInput{}, apperr.EINVALID, ""},
		{conversations.AgentsInput{Add: []string{"luke", "luke"}}, apperr.EINVALID, ""},
		{conversations.AgentsInput{Add: []string{"luke"}, Remove: []string{"luke"}}, apperr.EINVALID, ""},
		{conversations.AgentsInput{Add: []string{"nobody"}}, apperr.ENOTFOUND, ""},
		{conversations.AgentsInput{Add: []string{"archie"}}, apperr.ECONFLICT, "AgentUnavailable"},
		{conversations.AgentsInput{Remove: []string{"kyra"}}, apperr.ECONFLICT, "CurrentAgent"},
		{conversations.AgentsInput{Remove: []string{"sage"}}, apperr.ENOTFOUND, ""},
	} {
		_, err := f.svc.SetAgents(ctx, team, c.ID, tc.in)
		requireAppErr(t, err, tc.code, tc.reason)
	}
	assert.Equal(t, map[string]string{"kyra": conversations.RolePrimary, "dana": conversations.RoleInvited, "wren": conversations.RoleInvited}, roles(f.get(t, c.ID)))
}

// racingStore hands the conversation over (through a second service on
// the same store) just before the first turn commits, as a concurrent
// POST …/handoff would.
type racingStore struct {
	*memstore.Store
	race func()
}

func (r *racingStore) CommitTurn(ctx context.Context, teamID string, t conversations.Turn) error {
	if r.race != nil {
		race := r.race
		r.race = nil
		race()
	}
	return r.Store.CommitTurn(ctx, teamID, t)
}

// A return asked for by "@kyra" was built on the conversation as read; if
// a handoff lands meanwhile the turn is refused rather than overwriting it.
func TestAReturnRacingAHandoffIsRefusedNotApplied(t *testing.T) {
	f := newFixture(t, collaborationOn)
	ctx := context.Background()
	c := f.create(t, "kyra")
	_, err := f.svc.Handoff(ctx, team, c.ID, conversations.HandoffInput{To: "luke", Reason: "code"})
	require.NoError(t, err)

	other := *f.svc
	racing := &racingStore{Store: f.store, race: func() {
		_, err := other.Handoff(ctx, team, c.ID, conversations.HandoffInput{To: "dana", Reason: "numbers"})
		require.NoError(t, err)
	}}
	f.cfg.Store = racing
	f.rebuild()
	_, err = f.svc.Post(ctx, team, c.ID, conversations.PostInput{Content: "@kyra thanks, back to you"})
	require.Error(t, err)
	assert.Equal(t, "ConversationChanged", apperrReason(err))

	got := f.get(t, c.ID)
	assert.Equal(t, "dana", got.CurrentAgent, "the concurrent handoff stands")
	hs, err := f.svc.Handoffs(ctx, team, c.ID)
	require.NoError(t, err)
	require.Len(t, hs, 2)
	assert.Equal(t, conversations.KindHandoff, hs[1].Kind)
}

func apperrReason(err error) string {
	if ae, ok := apperr.As(err); ok {
		return ae.Reason
	}
	return ""
}

// Every length limit of a conversation is accepted at its bound and
// refused one character over: a title of 200, a message of 8,000, a
// rating's comment of 1,000, a handoff's reason of 500 and summary of
// 4,000.
func TestTheLengthLimitsAtTheirBounds(t *testing.T) {
	ctx := context.Background()
	long := func(n int) string { return strings.Repeat("é", n) }
	field := func(err error) string {
		ae, ok := apperr.As(err)
		if !ok {
			return ""
		}
		return ae.Field
	}

	f := newFixture(t, collaborationOn)
	_, err := f.svc.Create(ctx, team, conversations.CreateInput{Title: long(conversations.MaxTitle)})
	assert.NoError(t, err)
	_, err = f.svc.Create(ctx, team, conversations.CreateInput{Title: long(conversations.MaxTitle + 1)})
	assert.Equal(t, "title", field(err))

	c := f.create(t, "kyra")
	_, err = f.svc.Post(ctx, team, c.ID, conversations.PostInput{Content: long(conversations.MaxContent + 1)})
	assert.Equal(t, "content", field(err))
	res, err := f.svc.Post(ctx, team, c.ID, conversations.PostInput{Content: "Plan the launch " + long(conversations.MaxContent-16)})
	require.NoError(t, err)
	r := reply(t, res)
	_, err = f.svc.Rate(ctx, team, c.ID, r.ID, conversations.RateInput{Rating: 3, Comment: long(conversations.MaxComment)})
	assert.NoError(t, err)
	_, err = f.svc.Rate(ctx, team, c.ID, r.ID, conversations.RateInput{Rating: 3, Comment: long(conversations.MaxComment + 1)})
	assert.Equal(t, "comment", field(err))

	_, err = f.svc.Handoff(ctx, team, c.ID, conversations.HandoffInput{To: "luke", Reason: long(conversations.MaxReason + 1)})
	assert.Equal(t, "reason", field(err))
	_, err = f.svc.Handoff(ctx, team, c.ID, conversations.HandoffInput{To: "luke", Reason: "code", ContextSummary: long(conversations.MaxSummary + 1)})
	assert.Equal(t, "context_summary", field(err))
	_, err = f.svc.Handoff(ctx, team, c.ID, conversations.HandoffInput{To: "luke", Reason: long(conversations.MaxReason), ContextSummary: long(conversations.MaxSummary)})
	assert.NoError(t, err)
}
