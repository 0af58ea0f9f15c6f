package memstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/routing/cascade"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/team/memory"
	"github.com/conclave-ai/conclave/shared/team/messaging"
	"github.com/conclave-ai/conclave/shared/testkit/demo"
	"github.com/conclave-ai/conclave/shared/testkit/memstore"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

// These tests pin the parts of the store's contract the services' tests
// do not reach: the DynamoDB behaviours it mirrors (paging, conditions,
// upserts) and its isolation of stored values.

const team = demo.TeamID

func newDemo(tb testing.TB) *memstore.Store {
	tb.Helper()
	s := memstore.New()
	require.NoError(tb, demo.Seed(context.Background(), s))
	return s
}

func slugsOf(list []agents.Agent) []string {
	out := []string{}
	for _, a := range list {
		out = append(out, a.Slug)
	}
	return out
}

func TestPagingMirrorsDynamoDB(t *testing.T) {
	s := newDemo(t)
	ctx := context.Background()
	var all []string
	p := paging.Page{Limit: 2}
	pages := 0
	for {
		list, next, err := s.ListAgents(ctx, team, agents.Filter{}, p)
		require.NoError(t, err)
		pages++
		all = append(all, slugsOf(list)...)
		if next == "" {
			break
		}
		p.Token = next
	}
	assert.Equal(t, []string{"archie", "dana", "kyra", "luke", "sage", "wren"}, all, "by slug")
	assert.Equal(t, 4, pages, "a full last page still returns a token, and the page after it is empty")

	// The limit counts agents before the status filter.
	_, err := agents.NewService(s).SetStatus(ctx, team, "wren", agents.StatusPaused)
	require.NoError(t, err)
	list, next, err := s.ListAgents(ctx, team, agents.Filter{Status: agents.StatusPaused}, paging.Page{Limit: 2})
	require.NoError(t, err)
	assert.Empty(t, list)
	assert.NotEmpty(t, next)

	// Tokens are bound to their listing.
	_, _, err = s.ListAgents(ctx, demo.OtherTeamID, agents.Filter{}, paging.Page{Limit: 2, Token: next})
	assert.Equal(t, apperr.EINVALID, apperr.Code(err))
	_, _, err = s.ListAgents(ctx, team, agents.Filter{}, paging.Page{Limit: 2, Token: "garbage"})
	assert.Equal(t, apperr.EINVALID, apperr.Code(err))
	_, _, err = s.ListAgents(ctx, team, agents.Filter{}, paging.Page{})
	assert.Equal(t, apperr.EINTERNAL, apperr.Code(err), "DynamoDB rejects a limit of 0")
}

func TestReturnedValuesAreCopies(t *testing.T) {
	s := newDemo(t)
	ctx := context.Background()
	a, err := s.GetAgent(ctx, team, "luke")
	require.NoError(t, err)
	a.Skills[0].Keywords[0] = "changed"
	b, err := s.GetAgent(ctx, team, "luke")
	require.NoError(t, err)
	assert.Equal(t, "code", b.Skills[0].Keywords[0])

	tk := tasks.Task{TeamID: team, ID: ids.New("task"), Assignee: "luke", RootID: "r", Chain: []string{"luke"}, Status: tasks.Queued, Version: 1}
	require.NoError(t, s.CreateTask(ctx, tk, nil, []tasks.Event{{Seq: 1, Type: tasks.EvCreated}}))
	tk.Chain[0] = "changed"
	got, err := s.GetTask(ctx, team, tk.ID)
	require.NoError(t, err)
	assert.Equal(t, []string{"luke"}, got.Chain)
}

func TestApplyTaskConditions(t *testing.T) {
	s := newDemo(t)
	ctx := context.Background()
	root := tasks.Task{TeamID: team, ID: ids.New("task"), Assignee: "kyra", Chain: []string{"kyra"}, Status: tasks.Running, Version: 1, CostCapUSD: 0.5, EventSeq: 1}
	root.RootID = root.ID
	require.NoError(t, s.CreateTask(ctx, root, nil, []tasks.Event{{Seq: 1, Type: tasks.EvCreated}}))
	child := tasks.Task{TeamID: team, ID: ids.New("task"), Assignee: "luke", RootID: root.ID, ParentID: root.ID, Chain: []string{"kyra", "luke"},
		CreatedBy: tasks.Creator{Type: "agent", ID: "kyra"}, Depth: 1, Status: tasks.Queued, Version: 1, EventSeq: 1}
	require.NoError(t, s.CreateTask(ctx, child, &root, []tasks.Event{{Seq: 1, Type: tasks.EvCreated}}))

	var cf *tasks.ConditionFailed
	stale := child
	stale.Version = 7
	err := s.ApplyTask(ctx, tasks.Change{Before: stale, After: child, From: []tasks.Status{tasks.Queued}})
	require.ErrorAs(t, err, &cf)
	assert.Equal(t, tasks.ItemTask, cf.Item, "the version read is the condition")

	after := child
	after.Status, after.Version = tasks.Running, 2
	err = s.ApplyTask(ctx, tasks.Change{Before: child, After: after, From: []tasks.Status{tasks.Blocked}})
	require.ErrorAs(t, err, &cf)
	assert.Equal(t, tasks.ItemTask, cf.Item, "the stored status must be one of From")

	err = s.ApplyTask(ctx, tasks.Change{Before: child, After: after, From: []tasks.Status{tasks.Queued}, Events: []tasks.Event{{Seq: 1, Type: tasks.EvStarted}}})
	require.ErrorAs(t, err, &cf)
	assert.Equal(t, tasks.ItemTask, cf.Item, "events are append-only")

	after.CostUSD = 0.2
	require.NoError(t, s.ApplyTask(ctx, tasks.Change{Before: child, After: after, From: []tasks.Status{tasks.Queued}, Events: []tasks.Event{{Seq: 2, Type: tasks.EvStarted}}, RootCharge: 0.2}))
	r, err := s.GetTask(ctx, team, root.ID)
	require.NoError(t, err)
	assert.InDelta(t, 0.2, r.TreeCostUSD, 1e-9)
	assert.Equal(t, 2, r.Version, "a charge moves the root's version")
	evs, err := s.ListTaskEvents(ctx, team, child.ID)
	require.NoError(t, err)
	assert.Len(t, evs, 2)
	n, err := s.AgentLoad(ctx, team, "luke")
	require.NoError(t, err)
	assert.Equal(t, tasks.Load{Active: 1}, n, "queued → running keeps the slot")
}

func TestDueTasksComparesDeadlinesToTheMillisecond(t *testing.T) {
	s := newDemo(t)
	ctx := context.Background()
	deadline := time.Date(2030, 1, 2, 9, 0, 0, 500_000_000, time.UTC)
	tk := tasks.Task{TeamID: team, ID: ids.New("task"), Assignee: "luke", Chain: []string{"luke"}, Status: tasks.Running, Version: 1, Deadline: &deadline}
	tk.RootID = tk.ID
	require.NoError(t, s.CreateTask(ctx, tk, nil, nil))

	for before, due := range map[time.Time]bool{
		deadline:                             false,
		deadline.Add(999 * time.Microsecond): false, // the same millisecond
		deadline.Add(time.Millisecond):       true,
	} {
		refs, err := s.DueTasks(ctx, before, 10)
		require.NoError(t, err)
		assert.Equal(t, due, len(refs) == 1, before)
	}
}

// turn commits one turn of conv with the given participants joining.
func turn(tb testing.TB, s *memstore.Store, conv *conversations.Conversation, current string, join ...conversations.Participant) error {
	tb.Helper()
	next := *conv
	next.Version++
	next.EventSeq++ // the message's event
	prev := conv.CurrentAgent
	next.CurrentAgent = current
	msg := conversations.Message{ID: ids.New("msg"), ConversationID: conv.ID, Role: conversations.AuthorUser, Content: "hi"}
	err := s.CommitTurn(context.Background(), team, conversations.Turn{Conversation: next, PrevCurrent: prev, Messages: []conversations.Message{msg}, Join: join,
		Decision: cascade.Decision{ID: ids.New("rdec"), ConversationID: conv.ID}})
	if err == nil {
		*conv = next
	}
	return err
}

func TestCommitTurnConditionsAndParticipantUpserts(t *testing.T) {
	s := newDemo(t)
	ctx := context.Background()
	t0 := time.Date(2030, 1, 2, 9, 0, 0, 0, time.UTC)
	conv := conversations.Conversation{ID: ids.New("conv"), TeamID: team, Status: conversations.StatusOpen, Version: 1, PrimaryAgent: "kyra", CurrentAgent: "kyra"}
	require.NoError(t, s.CreateConversation(ctx, conv, &conversations.Participant{Agent: "kyra", Role: conversations.RolePrimary, JoinedAt: t0}))

	// A participant keeps its first role and join time unless the change sets it.
	require.NoError(t, turn(t, s, &conv, "kyra", conversations.Participant{Agent: "kyra", Role: conversations.RoleInvited, JoinedAt: t0.Add(time.Hour)}))
	parts, err := s.ListParticipants(ctx, team, conv.ID)
	require.NoError(t, err)
	assert.Equal(t, []conversations.Participant{{Agent: "kyra", Role: conversations.RolePrimary, JoinedAt: t0}}, parts)
	require.NoError(t, turn(t, s, &conv, "luke", conversations.Participant{Agent: "luke", Role: conversations.RoleInvited, JoinedAt: t0},
		conversations.Participant{Agent: "kyra", Role: conversations.RoleHandoffSource, JoinedAt: t0.Add(time.Hour), SetRole: true}))
	parts, err = s.ListParticipants(ctx, team, conv.ID)
	require.NoError(t, err)
	assert.Equal(t, []conversations.Participant{
		{Agent: "kyra", Role: conversations.RoleHandoffSource, JoinedAt: t0},
		{Agent: "luke", Role: conversations.RoleInvited, JoinedAt: t0},
	}, parts)
	loads, err := s.AgentLoads(ctx, team)
	require.NoError(t, err)
	assert.Equal(t, 0, loads.Of("kyra").ActiveConversations)
	assert.Equal(t, 1, loads.Of("luke").ActiveConversations)

	// A stale version is ConversationChanged and writes nothing.
	stale := conv
	stale.Version--
	err = turn(t, s, &stale, "dana", conversations.Participant{Agent: "dana", Role: conversations.RoleInvited, JoinedAt: t0})
	ae, ok := apperr.As(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, apperr.ECONFLICT, ae.Code)
	assert.Equal(t, "ConversationChanged", ae.Reason)
	msgs, err := s.RecentMessages(ctx, team, conv.ID, 10)
	require.NoError(t, err)
	assert.Len(t, msgs, 2)
	parts, err = s.ListParticipants(ctx, team, conv.ID)
	require.NoError(t, err)
	assert.Len(t, parts, 2)

	// Removing requires an active participant; a missing conversation
	// fails the "open" condition, as in DynamoDB.
	err = s.SetParticipants(ctx, team, conv.ID, nil, []string{"dana"}, t0)
	assert.Equal(t, apperr.ENOTFOUND, apperr.Code(err))
	err = s.SetParticipants(ctx, team, "conv_missing", nil, nil, t0)
	ae, _ = apperr.As(err)
	require.NotNil(t, ae)
	assert.Equal(t, "ConversationClosed", ae.Reason)

	require.NoError(t, s.CloseConversation(ctx, team, conv, t0))
	err = turn(t, s, &conv, "luke")
	ae, _ = apperr.As(err)
	require.NotNil(t, ae)
	assert.Equal(t, "ConversationChanged", ae.Reason, "a closed conversation takes no turn")
}

func TestInboxDeliveryIsIdempotentAndTheFirstReadIsKept(t *testing.T) {
	s := newDemo(t)
	ctx := context.Background()
	m := messaging.Message{ID: ids.New("amsg"), TeamID: team, From: "kyra", To: "luke", Channel: messaging.ChannelDirect, Type: "notification", Content: "hi"}
	require.NoError(t, s.PutAgentMessage(ctx, m))
	assert.Equal(t, apperr.ECONFLICT, apperr.Code(s.PutAgentMessage(ctx, m)))

	wrote, err := s.Deliver(ctx, team, "luke", m)
	require.NoError(t, err)
	assert.True(t, wrote)
	wrote, err = s.Deliver(ctx, team, "luke", m)
	require.NoError(t, err)
	assert.False(t, wrote, "a redelivered event writes nothing")

	first := time.Date(2030, 1, 2, 9, 0, 0, 0, time.UTC)
	n, err := s.MarkRead(ctx, team, "luke", []string{m.ID, "amsg_unknown"}, first)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	n, err = s.MarkRead(ctx, team, "luke", []string{m.ID}, first.Add(time.Hour))
	require.NoError(t, err)
	assert.Equal(t, 0, n)
	list, _, err := s.ListInbox(ctx, team, "luke", false, paging.Page{Limit: 10})
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.NotNil(t, list[0].ReadAt)
	assert.Equal(t, first, *list[0].ReadAt)
	unread, _, err := s.ListInbox(ctx, team, "luke", true, paging.Page{Limit: 10})
	require.NoError(t, err)
	assert.Empty(t, unread)
}

func TestMemoryContextsAreCachedOnlyWhileTheEpochHolds(t *testing.T) {
	s := newDemo(t)
	ctx := context.Background()
	clock := time.Date(2030, 1, 2, 9, 0, 0, 0, time.UTC)
	s.Now = func() time.Time { return clock }
	c := memory.Context{Agent: "luke", BuiltAt: clock, Cached: true}

	epoch, err := s.MemoryEpoch(ctx, team)
	require.NoError(t, err)
	assert.Equal(t, 0, epoch)
	ok, err := s.PutContext(ctx, team, c, epoch)
	require.NoError(t, err)
	assert.True(t, ok)
	got, hit, err := s.GetContext(ctx, team, "luke")
	require.NoError(t, err)
	assert.True(t, hit)
	assert.False(t, got.Cached, "the stored context is not marked cached")

	require.NoError(t, s.DropContexts(ctx, team, []string{"luke"}))
	_, hit, err = s.GetContext(ctx, team, "luke")
	require.NoError(t, err)
	assert.False(t, hit)
	ok, err = s.PutContext(ctx, team, c, epoch)
	require.NoError(t, err)
	assert.False(t, ok, "built before the invalidation: not cached")
	ok, err = s.PutContext(ctx, team, c, 1)
	require.NoError(t, err)
	assert.True(t, ok)

	clock = clock.Add(time.Hour + time.Second)
	_, hit, err = s.GetContext(ctx, team, "luke")
	require.NoError(t, err)
	assert.False(t, hit, "a context older than an hour is a miss")
}

func TestPublisherRecordsEvents(t *testing.T) {
	p := &memstore.Publisher{}
	ctx := context.Background()
	require.NoError(t, p.Publish(ctx, "TaskStatusChanged", tasks.TaskStatusChanged{TaskID: "a"}))
	require.NoError(t, p.Publish(ctx, "MemoryShared", memory.SharedEvent{MemoryID: "m"}))
	require.NoError(t, p.Publish(ctx, "TaskStatusChanged", tasks.TaskStatusChanged{TaskID: "b"}))

	assert.Len(t, p.Events(), 3)
	assert.Len(t, p.OfType("MemoryShared"), 1)
	got := memstore.Details[tasks.TaskStatusChanged](p, "TaskStatusChanged")
	assert.Equal(t, []tasks.TaskStatusChanged{{TaskID: "a"}, {TaskID: "b"}}, got)

	p.Err = errors.New("bus down")
	assert.ErrorIs(t, p.Publish(ctx, "MemoryShared", memory.SharedEvent{}), p.Err)
	assert.Len(t, p.Events(), 3, "a failed publish records nothing")
	p.Reset()
	assert.Empty(t, p.Events())
}
