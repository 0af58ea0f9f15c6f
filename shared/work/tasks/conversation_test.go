package tasks_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/work/tasks"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// conversation stores an open conversation of teamID.
func (f *fixture) conversation(tb testing.TB, teamID string) string {
	tb.Helper()
	c := conversations.Conversation{ID: ids.New("conv"), TeamID: teamID, Title: "chat", Status: conversations.StatusOpen, Version: 1, CreatedAt: f.clock.Now()}
	require.NoError(tb, f.store.CreateConversation(context.Background(), c, nil))
	return c.ID
}

func (f *fixture) taskCount(tb testing.TB) int {
	tb.Helper()
	list, _, err := f.svc.List(context.Background(), team, tasks.Filter{}, paging.Page{Limit: 100})
	require.NoError(tb, err)
	return len(list)
}

// A conversation_id must name a conversation of the caller's team: an
// unknown one, a malformed one and another team's are all 404, checked in
// the create's own transaction, so nothing is written (no task, no slot,
// no event).
func TestCreateWithAForeignOrUnknownConversationIsNotFoundAndWritesNothing(t *testing.T) {
	f := newFixture(t)
	other := f.conversation(t, "team_other")
	for name, conv := range map[string]string{
		"another team's": other, "unknown": ids.New("conv"), "malformed": "conv_nope", "not an id": "conv_%00",
	} {
		_, err := f.svc.Create(context.Background(), team, user, tasks.CreateInput{Assignee: "luke", Title: "x", ConversationID: conv}, false)
		ae := requireAppErr(t, err, apperr.ENOTFOUND, "")
		assert.Contains(t, ae.Message, "conversation", name)
	}
	parent := f.running(t, "kyra")
	_, err := f.svc.Create(context.Background(), team, user, tasks.CreateInput{Assignee: "luke", ParentID: parent.ID, Title: "x", ConversationID: other}, true)
	requireAppErr(t, err, apperr.ENOTFOUND, "")

	assert.Equal(t, 1, f.taskCount(t), "only the parent exists")
	assert.Equal(t, 0, f.load(t, "luke"), "no slot was kept")
	assert.Len(t, f.bus.OfType("TaskStatusChanged"), 2, "only the parent was announced (queued, running)")
}

// A task created with a conversation_id posts its result there when it
// ends (DeliverToConversation) unless a chat turn waits for it
// (DeliverInReply); a sub-task that only inherits its parent's
// conversation and a report's task deliver nothing to the conversation.
// The status events of a task with a delivery name its conversation.
func TestResultDeliveryDefaultsAndValidation(t *testing.T) {
	f := newFixture(t)
	conv := f.conversation(t, team)

	tk := f.create(t, tasks.CreateInput{Assignee: "luke", Title: "x", ConversationID: conv})
	assert.Equal(t, tasks.DeliverToConversation, tk.ResultDelivery)
	assert.Equal(t, tasks.DeliverToConversation, f.get(t, tk.ID).ResultDelivery, "stored")
	assert.Equal(t, conv, f.statusEvents(tk.ID)[0].ConversationID)

	waited := f.create(t, tasks.CreateInput{Assignee: "dana", Title: "x", ConversationID: conv, ResultDelivery: tasks.DeliverInReply})
	assert.Equal(t, tasks.DeliverInReply, waited.ResultDelivery)

	parent, err := f.svc.Start(context.Background(), team, tk.ID, "user:key_test")
	require.NoError(t, err)
	child, err := f.delegate(parent, "archie")
	require.NoError(t, err)
	assert.Equal(t, conv, child.ConversationID, "a sub-task inherits its parent's conversation")
	assert.Empty(t, child.ResultDelivery, "its result goes to its parent")
	assert.Empty(t, f.statusEvents(child.ID)[0].ConversationID)

	rep := f.create(t, tasks.CreateInput{Assignee: "sage", Title: "x", ConversationID: conv, Report: &workflow.ReportCheck{ReportID: "rep_1"}})
	assert.Empty(t, rep.ResultDelivery, "a report posts its report, not its task")

	plain := f.create(t, tasks.CreateInput{Assignee: "wren", Title: "x"})
	assert.Empty(t, plain.ResultDelivery)

	_, err = f.svc.Create(context.Background(), team, user, tasks.CreateInput{Assignee: "wren", Title: "x", ResultDelivery: tasks.DeliverInReply}, false)
	ae := requireAppErr(t, err, apperr.EINVALID, "")
	assert.Equal(t, "conversation_id", ae.Field)
	_, err = f.svc.Create(context.Background(), team, user, tasks.CreateInput{Assignee: "wren", Title: "x", ConversationID: conv, ResultDelivery: "email"}, false)
	requireAppErr(t, err, apperr.EINVALID, "")
}

// ReleaseToConversation hands a waited-for task's result to the
// conversation while the task runs; once the task has ended it writes
// nothing and returns the ended task, whose result the turn then delivers.
func TestReleaseToConversation(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	conv := f.conversation(t, team)
	waited := func() tasks.Task {
		return f.create(t, tasks.CreateInput{Assignee: "luke", Title: "x", ConversationID: conv, ResultDelivery: tasks.DeliverInReply})
	}

	t.Run("running: released", func(t *testing.T) {
		tk := waited()
		tk, err := f.svc.Start(ctx, team, tk.ID, "user:key_test")
		require.NoError(t, err)
		got, err := f.svc.ReleaseToConversation(ctx, team, tk.ID)
		require.NoError(t, err)
		assert.Equal(t, tasks.DeliverToConversation, got.ResultDelivery)
		assert.Equal(t, tasks.Running, got.Status)
		assert.Equal(t, tk.Version+1, got.Version, "a concurrent writer must read it again")
		assert.Equal(t, got, f.storedTask(t, tk.ID))

		again, err := f.svc.ReleaseToConversation(ctx, team, tk.ID)
		require.NoError(t, err)
		assert.Equal(t, got, again, "released once; nothing more is written")

		// The lifecycle goes on with the new delivery.
		done, err := f.svc.Complete(ctx, team, tk.ID, "agent:luke", "the answer", nil)
		require.NoError(t, err)
		assert.Equal(t, tasks.DeliverToConversation, done.ResultDelivery)
	})

	t.Run("ended first: nothing written, the ended task returned", func(t *testing.T) {
		tk := waited()
		_, err := f.svc.Start(ctx, team, tk.ID, "user:key_test")
		require.NoError(t, err)
		done, err := f.svc.Complete(ctx, team, tk.ID, "agent:luke", "the answer", nil)
		require.NoError(t, err)
		got, err := f.svc.ReleaseToConversation(ctx, team, tk.ID)
		require.NoError(t, err)
		assert.Equal(t, tasks.Completed, got.Status)
		assert.Equal(t, "the answer", got.Result)
		assert.Equal(t, tasks.DeliverInReply, got.ResultDelivery, "the turn delivers it")
		assert.Equal(t, done.Version, f.storedTask(t, tk.ID).Version, "nothing written")
	})

	t.Run("not waited for: returned as it is", func(t *testing.T) {
		tk := f.create(t, tasks.CreateInput{Assignee: "dana", Title: "x", ConversationID: conv})
		got, err := f.svc.ReleaseToConversation(ctx, team, tk.ID)
		require.NoError(t, err)
		assert.Equal(t, tk.Version, got.Version)
		assert.Equal(t, tasks.DeliverToConversation, got.ResultDelivery)
		plain := f.create(t, tasks.CreateInput{Assignee: "dana", Title: "y"})
		got, err = f.svc.ReleaseToConversation(ctx, team, plain.ID)
		require.NoError(t, err)
		assert.Empty(t, got.ResultDelivery, "a task without a conversation gets no delivery")
	})

	t.Run("unknown or another team's task", func(t *testing.T) {
		_, err := f.svc.ReleaseToConversation(ctx, team, "task_nope")
		requireAppErr(t, err, apperr.ENOTFOUND, "")
		tk := waited()
		_, err = f.svc.ReleaseToConversation(ctx, "team_other", tk.ID)
		requireAppErr(t, err, apperr.ENOTFOUND, "")
		_, err = f.svc.Cancel(ctx, team, tk.ID, "user:key_test", "done with it")
		require.NoError(t, err)
	})
}

// The race the turn's wait runs: the task ends while the turn hands its
// result to the conversation. Whichever lands first, exactly one of the
// two delivers the result: the released task ends with
// DeliverToConversation (the poster posts it), or the release returns the
// ended task still DeliverInReply (the turn puts it in its reply).
func TestReleaseToConversationRacesTheTasksEnd(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	conv := f.conversation(t, team)
	for i := range 40 {
		tk := f.create(t, tasks.CreateInput{Assignee: "luke", Title: "race", ConversationID: conv, ResultDelivery: tasks.DeliverInReply})
		_, err := f.svc.Start(ctx, team, tk.ID, "user:key_test")
		require.NoError(t, err)
		var released tasks.Task
		var relErr, endErr error
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); released, relErr = f.svc.ReleaseToConversation(ctx, team, tk.ID) }()
		go func() { defer wg.Done(); _, endErr = f.svc.Complete(ctx, team, tk.ID, "agent:luke", "result", nil) }()
		wg.Wait()
		require.NoError(t, relErr)
		require.NoError(t, endErr, "the end is not lost to the release's version bump")
		final := f.storedTask(t, tk.ID)
		require.Equal(t, tasks.Completed, final.Status)
		byTurn := released.Status.Terminal() && released.ResultDelivery == tasks.DeliverInReply
		byPoster := !released.Status.Terminal() && released.ResultDelivery == tasks.DeliverToConversation
		require.True(t, byTurn != byPoster, "run %d: exactly one deliverer (released %+v)", i, released)
		if byTurn {
			assert.Equal(t, tasks.DeliverInReply, final.ResultDelivery)
		} else {
			assert.Equal(t, tasks.DeliverToConversation, final.ResultDelivery)
		}
	}
}

func (f *fixture) storedTask(tb testing.TB, id string) tasks.Task {
	tb.Helper()
	t, err := f.store.GetTask(context.Background(), team, id)
	require.NoError(tb, err)
	return t
}
