package messaging_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/idempotency"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/team/messaging"
)

// mem is an in-memory store and directory with the same contracts as the
// DynamoDB ones (the integration tests run those).
type mem struct {
	reads   int // GetAgent calls
	agents  map[string]agents.Agent
	tasks   map[string][]string
	msgs    map[string]messaging.Message
	inboxes map[string]map[string]*messaging.Message
	events  []messaging.SentEvent
}

func newMem() *mem {
	m := &mem{agents: map[string]agents.Agent{}, tasks: map[string][]string{}, msgs: map[string]messaging.Message{}, inboxes: map[string]map[string]*messaging.Message{}}
	for _, s := range []string{"kyra", "luke", "dana", "wren"} {
		m.agents[s] = agents.Agent{Slug: s, Status: agents.StatusActive}
	}
	return m
}

func (m *mem) GetAgent(_ context.Context, _, slug string) (agents.Agent, error) {
	m.reads++
	a, ok := m.agents[slug]
	if !ok {
		return a, apperr.NotFound("agent", slug)
	}
	return a, nil
}
func (m *mem) ActiveAgents(context.Context, string) ([]agents.Agent, error) {
	var out []agents.Agent
	for _, a := range m.agents {
		if a.Status == agents.StatusActive {
			out = append(out, a)
		}
	}
	return out, nil
}
func (m *mem) TaskAgents(_ context.Context, _, id string) ([]string, error) {
	l, ok := m.tasks[id]
	if !ok {
		return nil, apperr.NotFound("task", id)
	}
	return l, nil
}
func (m *mem) SessionAgents(_ context.Context, _, id string) ([]string, error) {
	return nil, apperr.NotFound("collaboration session", id)
}
func (m *mem) PutAgentMessage(_ context.Context, x messaging.Message) error {
	for id, y := range m.msgs {
		if x.IdempotencyKey != "" && y.IdempotencyKey == x.IdempotencyKey {
			return messaging.Replayed{ID: id}
		}
	}
	m.msgs[x.ID] = x
	return nil
}
func (m *mem) GetAgentMessage(_ context.Context, _, id string) (messaging.Message, error) {
	x, ok := m.msgs[id]
	if !ok {
		return x, apperr.NotFound("agent message", id)
	}
	return x, nil
}
func (m *mem) Deliver(_ context.Context, _, r string, x messaging.Message) (bool, error) {
	if m.inboxes[r] == nil {
		m.inboxes[r] = map[string]*messaging.Message{}
	}
	if _, ok := m.inboxes[r][x.ID]; ok {
		return false, nil
	}
	m.inboxes[r][x.ID] = &x
	return true, nil
}
func (m *mem) ListInbox(_ context.Context, _, agent string, unread bool, _ paging.Page) ([]messaging.Message, string, error) {
	var out []messaging.Message
	for _, x := range m.inboxes[agent] {
		if !unread || x.ReadAt == nil {
			out = append(out, *x)
		}
	}
	return out, "", nil
}
func (m *mem) MarkRead(_ context.Context, _, agent string, ids []string, at time.Time) (int, error) {
	n := 0
	for _, id := range ids {
		if x, ok := m.inboxes[agent][id]; ok && x.ReadAt == nil {
			x.ReadAt = &at
			n++
		}
	}
	return n, nil
}
func (m *mem) Publish(_ context.Context, _ string, d any) error {
	m.events = append(m.events, d.(messaging.SentEvent))
	return nil
}

func svc(m *mem) *messaging.Service { return &messaging.Service{Store: m, Dir: m, Bus: m} }

func TestChannelsResolveToTheirRecipientsNeverTheSender(t *testing.T) {
	ctx := context.Background()
	m := newMem()
	m.agents["wren"] = agents.Agent{Slug: "wren", Status: agents.StatusPaused}
	m.tasks["task_1"] = []string{"luke", "kyra", "luke"}
	s := svc(m)
	cases := []struct {
		from string
		in   messaging.SendInput
		want []string
	}{
		{"luke", messaging.SendInput{To: "dana", Content: "hi"}, []string{"dana"}},
		{"kyra", messaging.SendInput{Channel: "team", Content: "all"}, []string{"dana", "luke"}},
		{"dana", messaging.SendInput{Channel: "task:task_1", Content: "t"}, []string{"kyra", "luke"}},
		{"luke", messaging.SendInput{Channel: "task:task_1", Content: "t"}, []string{"kyra"}},
	}
	for _, c := range cases {
		msg, err := s.Send(ctx, "team", c.from, c.in)
		require.NoError(t, err)
		n, err := s.FanOut(ctx, "team", msg.ID)
		require.NoError(t, err)
		assert.Equal(t, len(c.want), n)
		var got []string
		for r, box := range m.inboxes {
			if _, ok := box[msg.ID]; ok {
				got = append(got, r)
			}
		}
		assert.ElementsMatch(t, c.want, got, "%s %+v", c.from, c.in)
		// Running it again writes nothing.
		n, err = s.FanOut(ctx, "team", msg.ID)
		require.NoError(t, err)
		assert.Zero(t, n)
	}
	require.Len(t, m.events, len(cases))
	assert.Equal(t, "team", m.events[1].Channel)
}

func TestSendRefusesWhatNobodyCouldReceive(t *testing.T) {
	ctx := context.Background()
	m := newMem()
	s := svc(m)
	for _, c := range []struct {
		from string
		in   messaging.SendInput
		code string
	}{
		{"luke", messaging.SendInput{Content: "x"}, apperr.EINVALID},
		{"luke", messaging.SendInput{To: "luke", Content: "x"}, apperr.EINVALID},
		{"luke", messaging.SendInput{To: "dana", Content: "x", Type: "gossip"}, apperr.EINVALID},
		{"luke", messaging.SendInput{Channel: "task:", Content: "x"}, apperr.EINVALID},
		{"luke", messaging.SendInput{To: "nobody", Content: "x"}, apperr.ENOTFOUND},
		{"nobody", messaging.SendInput{To: "luke", Content: "x"}, apperr.ENOTFOUND},
		{"luke", messaging.SendInput{Channel: "task:task_x", Content: "x"}, apperr.ENOTFOUND},
		{"luke", messaging.SendInput{Channel: "collab:s1", Content: "x"}, apperr.ENOTFOUND},
	} {
		_, err := s.Send(ctx, "team", c.from, c.in)
		assert.True(t, apperr.Is(err, c.code), "%+v: %v", c, err)
	}
	assert.Empty(t, m.msgs)
	assert.Empty(t, m.events)
}

func TestInboxMarksWhatItReturnsUnlessPeeking(t *testing.T) {
	ctx := context.Background()
	m := newMem()
	s := svc(m)
	msg, err := s.Send(ctx, "team", "luke", messaging.SendInput{To: "dana", Content: "hi"})
	require.NoError(t, err)
	_, err = s.FanOut(ctx, "team", msg.ID)
	require.NoError(t, err)
	peek, _, err := s.Inbox(ctx, "team", "dana", messaging.InboxQuery{Peek: true, Page: paging.Page{Limit: 10}})
	require.NoError(t, err)
	require.Len(t, peek, 1)
	assert.Nil(t, peek[0].ReadAt)
	got, _, err := s.Inbox(ctx, "team", "dana", messaging.InboxQuery{Page: paging.Page{Limit: 10}})
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.NotNil(t, got[0].ReadAt)
	again, _, err := s.Inbox(ctx, "team", "dana", messaging.InboxQuery{Page: paging.Page{Limit: 10}})
	require.NoError(t, err)
	assert.Empty(t, again)
	_, err = s.MarkRead(ctx, "team", "dana", nil)
	assert.True(t, apperr.Is(err, apperr.EINVALID))
}

// A page with entries is read and marked: the agent is not read (only an
// agent of the team gets entries); an empty page reads it, so an unknown
// agent is still 404.
func TestInboxReadsTheAgentOnlyForAnEmptyPage(t *testing.T) {
	ctx := context.Background()
	m := newMem()
	s := svc(m)
	msg, err := s.Send(ctx, "team", "luke", messaging.SendInput{To: "dana", Content: "hi"})
	require.NoError(t, err)
	_, err = s.FanOut(ctx, "team", msg.ID)
	require.NoError(t, err)
	m.reads = 0
	got, _, err := s.Inbox(ctx, "team", "dana", messaging.InboxQuery{Page: paging.Page{Limit: 10}})
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Zero(t, m.reads, "a page with entries does not read the agent")

	empty, _, err := s.Inbox(ctx, "team", "dana", messaging.InboxQuery{Page: paging.Page{Limit: 10}})
	require.NoError(t, err)
	assert.Empty(t, empty)
	assert.Equal(t, 1, m.reads)
	_, _, err = s.Inbox(ctx, "team", "nobody", messaging.InboxQuery{Page: paging.Page{Limit: 10}})
	assert.True(t, apperr.Is(err, apperr.ENOTFOUND), "%v", err)
}

// Unread peeks (a model context shows the messages; they are read only
// when the answer that saw them is committed) and reads no agent;
// Acknowledge marks exactly the ids given, once.
func TestUnreadPeeksAndAcknowledgeMarksWhatWasShown(t *testing.T) {
	ctx := context.Background()
	m := newMem()
	s := svc(m)
	var sent []string
	for _, c := range []string{"one", "two"} {
		msg, err := s.Send(ctx, "team", "luke", messaging.SendInput{To: "dana", Type: "task_request", Content: c})
		require.NoError(t, err)
		_, err = s.FanOut(ctx, "team", msg.ID)
		require.NoError(t, err)
		sent = append(sent, msg.ID)
	}
	m.reads = 0
	got, err := s.Unread(ctx, "team", "dana")
	require.NoError(t, err)
	assert.Len(t, got, 2)
	again, err := s.Unread(ctx, "team", "dana")
	require.NoError(t, err)
	assert.Len(t, again, 2, "nothing marked by reading")
	assert.Zero(t, m.reads)

	n, err := s.Acknowledge(ctx, "team", "dana", sent[:1])
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	left, err := s.Unread(ctx, "team", "dana")
	require.NoError(t, err)
	require.Len(t, left, 1)
	assert.Equal(t, sent[1], left[0].ID)
	n, err = s.Acknowledge(ctx, "team", "dana", sent[:1])
	require.NoError(t, err)
	assert.Zero(t, n, "already read")
	n, err = s.Acknowledge(ctx, "team", "dana", nil)
	require.NoError(t, err)
	assert.Zero(t, n, "nothing shown, nothing written")
}

// A message sent again under the Idempotency-Key of one stored (its answer
// was lost) is that message, announced again (delivery is once per message
// and recipient), never a second message.
func TestAMessageSentAgainUnderItsKeyIsTheStoredOne(t *testing.T) {
	m := newMem()
	s := svc(m)
	ctx := idempotency.Scope(idempotency.WithKey(context.Background(), "k-1"), messaging.RefKind)
	first, err := s.Send(ctx, "team", "luke", messaging.SendInput{To: "dana", Content: "hello"})
	require.NoError(t, err)
	again, err := s.Send(ctx, "team", "luke", messaging.SendInput{To: "dana", Content: "hello"})
	require.NoError(t, err)
	assert.Equal(t, first.ID, again.ID)
	assert.Len(t, m.msgs, 1)
	require.Len(t, m.events, 2, "announced again")
	assert.Equal(t, m.events[0].MessageID, m.events[1].MessageID)
	other, err := s.Send(context.Background(), "team", "luke", messaging.SendInput{To: "dana", Content: "hello"})
	require.NoError(t, err)
	assert.NotEqual(t, first.ID, other.ID, "without a key, a new message")
	// The messages a turn's tools send run under the turn's key, scoped to
	// the turn: each is a message of its own.
	turn := idempotency.Scope(idempotency.WithKey(context.Background(), "k-2"), "turn")
	one, err := s.Send(turn, "team", "luke", messaging.SendInput{To: "dana", Content: "one"})
	require.NoError(t, err)
	two, err := s.Send(turn, "team", "luke", messaging.SendInput{To: "dana", Content: "two"})
	require.NoError(t, err)
	assert.NotEqual(t, one.ID, two.ID, "a key scoped to another create is not the message's")
}
