package conversations_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/team/messaging"
)

// inboxes is the messaging service on the fixture's store, counting the
// acknowledgements it is asked for (and failing them when ackErr is set).
type inboxes struct {
	*messaging.Service
	mu     sync.Mutex
	acks   map[string][]string
	ackErr error
}

func (i *inboxes) Acknowledge(ctx context.Context, teamID, agent string, ids []string) (int, error) {
	i.mu.Lock()
	i.acks[agent] = append(i.acks[agent], ids...)
	err := i.ackErr
	i.mu.Unlock()
	if err != nil {
		return 0, err
	}
	return i.Service.Acknowledge(ctx, teamID, agent, ids)
}

func withInboxes(f *fixture) *inboxes {
	in := &inboxes{Service: &messaging.Service{Store: f.store, Dir: f.store, Bus: f.bus, Now: f.cfg.Now}, acks: map[string][]string{}}
	f.sources.Inbox, f.cfg.Inbox = in, in
	f.rebuild()
	return in
}

// deliver sends a message and fans it out as the message-fanout function
// would.
func (in *inboxes) deliver(tb testing.TB, from, to, typ, content string) messaging.Message {
	tb.Helper()
	m, err := in.Send(context.Background(), team, from, messaging.SendInput{To: to, Type: typ, Content: content})
	require.NoError(tb, err)
	_, err = in.FanOut(context.Background(), team, m.ID)
	require.NoError(tb, err)
	return m
}

func (in *inboxes) unread(tb testing.TB, agent string) []string {
	tb.Helper()
	list, _, err := in.Inbox(context.Background(), team, agent, messaging.InboxQuery{Peek: true, Page: paging.Page{Limit: 100}})
	require.NoError(tb, err)
	var ids []string
	for _, m := range list {
		ids = append(ids, m.ID)
	}
	return ids
}

func TestATurnShowsTheTeamAndTheInboxOnceAndMarksItReadAfterTheCommit(t *testing.T) {
	f := newFixture(t, collaborationOff)
	in := withInboxes(f)
	c := f.create(t, "luke")
	req := in.deliver(t, "kyra", "luke", "task_request", "Please check the release checklist before Friday")

	f.post(t, c.ID, "How is the parser doing?")
	sys := f.model.last(t).System
	assert.Contains(t, sys, "Your inbox: 1 unread")
	assert.Contains(t, sys, "- @kyra task_request (REQUEST): Please check the release checklist before Friday")
	assert.Contains(t, sys, "Your team", "the roster")
	for _, slug := range []string{"archie", "dana", "kyra", "sage", "wren"} {
		assert.Contains(t, sys, "- @"+slug+" ", "every active colleague of the demo team fits")
	}
	assert.NotContains(t, sys, "- @luke ", "not itself")
	assert.Equal(t, []string{req.ID}, in.acks["luke"])
	assert.Empty(t, in.unread(t, "luke"), "read once the turn committed")

	f.post(t, c.ID, "And the tests?")
	assert.NotContains(t, f.model.last(t).System, "Your inbox", "shown once")
	assert.Len(t, in.acks["luke"], 1, "nothing more to mark")
}

func TestAReplyThatFailedLeavesTheInboxUnread(t *testing.T) {
	f := newFixture(t, collaborationOff)
	in := withInboxes(f)
	c := f.create(t, "luke")
	m := in.deliver(t, "kyra", "luke", "info_request", "Which linter do we use?")

	f.model.fail["luke"] = true
	_, err := f.svc.Post(context.Background(), team, c.ID, conversations.PostInput{Content: "Anything new?"})
	require.Error(t, err, "every agent asked failed")
	assert.Contains(t, f.model.last(t).System, "Which linter do we use?", "it was in the failed call's context")
	assert.Empty(t, in.acks["luke"], "no reply kept: nothing marked")
	assert.Equal(t, []string{m.ID}, in.unread(t, "luke"))

	f.model.fail["luke"] = false
	f.post(t, c.ID, "Anything new?")
	assert.Contains(t, f.model.last(t).System, "Which linter do we use?", "shown again")
	assert.Empty(t, in.unread(t, "luke"))
}

func TestAFailedAcknowledgementShowsTheMessagesAgain(t *testing.T) {
	f := newFixture(t, collaborationOff)
	in := withInboxes(f)
	c := f.create(t, "luke")
	in.deliver(t, "dana", "luke", "notification", "Budget numbers are in")
	in.ackErr = errors.New("throttled")

	f.post(t, c.ID, "Hello there, status?")
	assert.Contains(t, f.model.last(t).System, "Budget numbers are in")
	in.ackErr = nil
	f.post(t, c.ID, "Status again?")
	assert.Contains(t, f.model.last(t).System, "Budget numbers are in", "still unread: shown again")
	assert.Empty(t, in.unread(t, "luke"))
}

func TestAnUnreadableInboxIsLeftOut(t *testing.T) {
	f := newFixture(t, collaborationOff)
	f.sources.Inbox, f.cfg.Inbox = brokenInbox{}, brokenInbox{}
	f.rebuild()
	c := f.create(t, "luke")
	f.post(t, c.ID, "Hello there, status?")
	sys := f.model.last(t).System
	assert.NotContains(t, sys, "Your inbox")
	assert.Contains(t, sys, "Your team", "the roster needs no read")
}

type brokenInbox struct{}

func (brokenInbox) Unread(context.Context, string, string) ([]messaging.Message, error) {
	return nil, errors.New("down")
}
func (brokenInbox) Acknowledge(context.Context, string, string, []string) (int, error) {
	return 0, errors.New("down")
}
