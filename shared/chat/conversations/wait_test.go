package conversations_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/routing/cascade"
	"github.com/conclave-ai/conclave/shared/testkit/demo"
	"github.com/conclave-ai/conclave/shared/testkit/memstore"
)

// tail is a conversation of the demo team and a way to post into it as
// a finished task's result is posted (shared/work/results).
type tail struct {
	store *memstore.Store
	svc   *conversations.Service
	conv  string
}

func newTail(t *testing.T) tail {
	t.Helper()
	store := memstore.New()
	require.NoError(t, demo.Seed(context.Background(), store))
	svc := conversations.MustNew(conversations.Config{Store: store, Agents: store, Router: &cascade.Router{}, Tail: store})
	c, err := svc.Create(context.Background(), team, conversations.CreateInput{Title: "waiting"})
	require.NoError(t, err)
	return tail{store: store, svc: svc, conv: c.ID}
}

func (w tail) post(t *testing.T, content string) conversations.Message {
	t.Helper()
	m := conversations.Message{ID: ids.New("msg"), ConversationID: w.conv, Role: conversations.AuthorAssistant, Agent: "luke", Content: content,
		CreatedAt: time.Now().UTC(), ResultOf: &conversations.WorkRef{Type: "task", ID: ids.New("task"), Status: "completed", Agent: "luke"}}
	posted, err := w.store.PostResult(context.Background(), team, m, m.ResultOf.ID)
	require.NoError(t, err)
	require.True(t, posted)
	return m
}

func contents(list []conversations.Message) []string {
	out := []string{}
	for _, m := range list {
		out = append(out, m.Content)
	}
	return out
}

// after= returns what came after a message, oldest first, a page at a
// time; nothing after it is an empty page at once when there is no wait.
func TestMessagesAfterAMessageAreReturnedOldestFirstAndPaged(t *testing.T) {
	w := newTail(t)
	ctx := context.Background()
	first := w.post(t, "one")
	w.post(t, "two")
	w.post(t, "three")
	last := w.post(t, "four")

	list, next, err := w.svc.MessagesAfter(ctx, team, w.conv, first.ID, 0, paging.Page{Limit: 2})
	require.NoError(t, err)
	assert.Equal(t, []string{"two", "three"}, contents(list))
	require.NotEmpty(t, next)
	list, _, err = w.svc.MessagesAfter(ctx, team, w.conv, first.ID, 0, paging.Page{Limit: 2, Token: next})
	require.NoError(t, err)
	assert.Equal(t, []string{"four"}, contents(list))
	assert.Equal(t, "task", list[0].ResultOf.Type, "result_of comes back")

	list, next, err = w.svc.MessagesAfter(ctx, team, w.conv, last.ID, 0, paging.Page{})
	require.NoError(t, err)
	assert.Empty(t, list)
	assert.NotNil(t, list, "an empty page is an empty list")
	assert.Empty(t, next)

	// Any point of the timeline will do: the floor of a time before them.
	list, _, err = w.svc.MessagesAfter(ctx, team, w.conv, ids.Floor("msg", time.Now().Add(-time.Hour)), 0, paging.Page{})
	require.NoError(t, err)
	assert.Equal(t, []string{"one", "two", "three", "four"}, contents(list))

	// A page token is the listing's own.
	_, _, err = w.svc.MessagesAfter(ctx, team, w.conv, last.ID, 0, paging.Page{Limit: 2, Token: next + "x"})
	assert.True(t, apperr.Is(err, apperr.EINVALID), "%v", err)
}

// A waiting read returns as soon as a message arrives.
func TestAWaitingReadReturnsWhenAResultIsPosted(t *testing.T) {
	// A bubble of synctest: the deadlines, sleeps and waits below run on
	// its fake clock, which jumps ahead whenever every goroutine waits.
	synctest.Test(t, func(t *testing.T) {
		w := newTail(t)
		last := w.post(t, "seen")
		go func() {
			time.Sleep(3 * conversations.PollInterval / 2)
			w.post(t, "the delegated result")
		}()
		list, _, err := w.svc.MessagesAfter(context.Background(), team, w.conv, last.ID, conversations.MaxWait*time.Second, paging.Page{})
		require.NoError(t, err)
		assert.Equal(t, []string{"the delegated result"}, contents(list))
	})
}

// A wait that runs out, or whose context's deadline comes within the
// margin kept to answer, is an empty page, not an error.
func TestAWaitThatRunsOutIsAnEmptyPage(t *testing.T) {
	// A bubble of synctest: the deadlines, sleeps and waits below run on
	// its fake clock, which jumps ahead whenever every goroutine waits.
	synctest.Test(t, func(t *testing.T) {
		w := newTail(t)
		last := w.post(t, "seen")
		start := time.Now()
		list, _, err := w.svc.MessagesAfter(context.Background(), team, w.conv, last.ID, time.Second, paging.Page{})
		require.NoError(t, err)
		assert.Empty(t, list)
		assert.GreaterOrEqual(t, time.Since(start), time.Second, "it waited the whole second")

		ctx, cancel := context.WithTimeout(context.Background(), conversations.WaitMargin+conversations.PollInterval)
		defer cancel()
		list, _, err = w.svc.MessagesAfter(ctx, team, w.conv, last.ID, conversations.MaxWait*time.Second, paging.Page{})
		require.NoError(t, err)
		assert.Empty(t, list)
		assert.NoError(t, ctx.Err(), "answered before the deadline, inside the margin")
	})
}

// Bad parameters are refused before anything is read; another team's or
// an unknown conversation is 404, without waiting.
func TestMessagesAfterRefusesBadInputAndOtherTeams(t *testing.T) {
	w := newTail(t)
	ctx := context.Background()
	last := w.post(t, "seen")
	for name, c := range map[string]struct {
		after string
		wait  time.Duration
		field string
	}{
		"not a message id": {"conv_" + last.ID[4:], 0, "after"},
		"garbage":          {"msg_%00", 0, "after"},
		"negative wait":    {last.ID, -time.Second, "wait"},
		"wait too long":    {last.ID, (conversations.MaxWait + 1) * time.Second, "wait"},
	} {
		_, _, err := w.svc.MessagesAfter(ctx, team, w.conv, c.after, c.wait, paging.Page{})
		ae, ok := apperr.As(err)
		require.True(t, ok, "%s: %v", name, err)
		assert.Equal(t, apperr.EINVALID, ae.Code, name)
		assert.Equal(t, c.field, ae.Field, name)
	}
	_, _, err := w.svc.MessagesAfter(ctx, team, w.conv, last.ID, 0, paging.Page{Limit: 101})
	assert.True(t, apperr.Is(err, apperr.EINVALID))

	for _, conv := range []string{ids.New("conv"), w.conv} {
		teamID := team
		if conv == w.conv {
			teamID = "team_other"
		}
		_, _, err := w.svc.MessagesAfter(ctx, teamID, conv, last.ID, conversations.MaxWait*time.Second, paging.Page{})
		assert.True(t, apperr.Is(err, apperr.ENOTFOUND), "%v", err)
	}
}
