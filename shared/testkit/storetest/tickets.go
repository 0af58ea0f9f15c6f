package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

// ticketLine is the fixture of the slot-ticket cases: ann at her
// MaxActivePerAgent tasks, and tickets keyed under one session's prefix.
type ticketLine struct {
	*fixture
	busy   []tasks.Task // ann's tasks, each holding a slot
	prefix string
	since  time.Time
}

func (f *fixture) ticketLine(t *testing.T) *ticketLine {
	t.Helper()
	l := &ticketLine{fixture: f, prefix: ids.New("ses") + ":1:", since: time.Now().UTC().Truncate(time.Millisecond)}
	for range tasks.MaxActivePerAgent {
		l.busy = append(l.busy, f.queued(t, "ann"))
	}
	return l
}

// ticket is a waiting ticket of agent's, the n-th in time, of rank.
func (l *ticketLine) ticket(agent, key string, rank, n int) tasks.Ticket {
	return tasks.Ticket{TeamID: l.team, Agent: agent, Key: l.prefix + key, Rank: rank, Since: l.since.Add(time.Duration(n) * time.Millisecond),
		Token: "token-" + key, Status: tasks.TicketWaiting, Expires: l.since.Add(time.Hour)}
}

func ticketKeys(list []tasks.Ticket) []string {
	out := []string{}
	for _, t := range list {
		out = append(out, t.Key)
	}
	return out
}

// next is ann's line, best first.
func (l *ticketLine) next(t *testing.T, n int) []string {
	t.Helper()
	list, err := l.Tickets.NextTickets(context.Background(), l.team, "ann", n)
	require.NoError(t, err)
	return ticketKeys(list)
}

// complete ends one of ann's busy tasks, its slot going to handoff (nil:
// released, conditioned on no ticket waiting unless forced).
func (l *ticketLine) complete(t *testing.T, i int, handoff *tasks.Ticket) error {
	t.Helper()
	c := change(l.get(t, l.busy[i].ID), []tasks.Status{tasks.Queued}, func(a *tasks.Task) { a.Status = tasks.Completed })
	c.Handoff = handoff
	return l.Tasks.ApplyTask(context.Background(), c)
}

// ticketsWait: a ticket is registered only while its agent is at its
// limit (ItemSlotFree otherwise) and once per key (ItemTicket); the line
// is the agent's waiting tickets by rank, then time; a waiting ticket's
// token is refreshed and it is dropped once; a session's tickets are
// listed by their key's prefix; another agent's or team's line is its own.
func ticketsWait(t *testing.T, f *fixture) {
	ctx := context.Background()
	l := f.ticketLine(t)
	failedOn(t, f.Tickets.WaitForSlot(ctx, l.ticket("bob", "free", 0, 0)), tasks.ItemSlotFree)
	_, err := f.Tickets.GetTicket(ctx, f.team, l.prefix+"free")
	refused(t, err, apperr.ENOTFOUND, "")
	a, b, c := l.ticket("ann", "a", 1, 0), l.ticket("ann", "b", 0, 1), l.ticket("ann", "c", 1, 2)
	for _, tk := range []tasks.Ticket{a, b, c} {
		require.NoError(t, f.Tickets.WaitForSlot(ctx, tk))
	}
	again := a
	again.Token = "another"
	failedOn(t, f.Tickets.WaitForSlot(ctx, again), tasks.ItemTicket)
	other := tasks.Ticket{TeamID: f.team, Agent: "ann", Key: ids.New("ses") + ":1:z", Rank: 3, Since: l.since.Add(time.Second),
		Token: "token-z", Status: tasks.TicketWaiting, Expires: l.since.Add(time.Hour)}
	require.NoError(t, f.Tickets.WaitForSlot(ctx, other))

	assert.Equal(t, []string{b.Key, a.Key}, l.next(t, 2), "by rank, then time")
	assert.Equal(t, []string{b.Key, a.Key, c.Key, other.Key}, l.next(t, 10))
	got, err := f.Tickets.GetTicket(ctx, f.team, a.Key)
	require.NoError(t, err)
	assert.Equal(t, tasks.TicketWaiting, got.Status)
	assert.Equal(t, "token-a", got.Token, "the first registration's")
	assert.Equal(t, []any{f.team, "ann", 1}, []any{got.TeamID, got.Agent, got.Rank})
	assert.True(t, got.Since.Equal(a.Since) && got.Expires.Equal(a.Expires))

	a.Token = "token-a2"
	require.NoError(t, f.Tickets.RefreshToken(ctx, a))
	got, err = f.Tickets.GetTicket(ctx, f.team, a.Key)
	require.NoError(t, err)
	assert.Equal(t, "token-a2", got.Token)
	require.NoError(t, f.Tickets.DropTicket(ctx, c))
	failedOn(t, f.Tickets.DropTicket(ctx, c), tasks.ItemTicket)
	failedOn(t, f.Tickets.RefreshToken(ctx, c), tasks.ItemTicket)
	_, err = f.Tickets.GetTicket(ctx, f.team, c.Key)
	refused(t, err, apperr.ENOTFOUND, "")

	session, err := f.Tickets.TicketsOf(ctx, f.team, l.prefix)
	require.NoError(t, err)
	assert.Equal(t, []string{a.Key, b.Key}, ticketKeys(session), "the session's, by key")
	for _, agent := range []string{"bob", "nobody"} {
		list, err := f.Tickets.NextTickets(ctx, f.team, agent, 10)
		require.NoError(t, err)
		assert.Empty(t, list)
	}
	theirs, err := f.Tickets.NextTickets(ctx, f.otherTeam(), "ann", 10)
	require.NoError(t, err)
	assert.Empty(t, theirs)
	theirs, err = f.Tickets.TicketsOf(ctx, f.otherTeam(), l.prefix)
	require.NoError(t, err)
	assert.Empty(t, theirs)
	require.NoError(t, f.Tickets.DropTicket(ctx, other))
	assert.Equal(t, tasks.MaxActivePerAgent, f.load(t, "ann"), "waiting takes no slot")
}

// ticketsGranted: a slot freed while tickets wait is refused (ItemWaiting)
// unless it goes to one (granted, out of the line, the agent's count
// unmoved) or the release is forced; a granted ticket is spent on its
// task's create (no second slot) or released once; a handoff to a ticket
// no longer waiting and a create on one not granted are ItemTicket; no
// refused write moves a counter.
func ticketsGranted(t *testing.T, f *fixture) {
	ctx := context.Background()
	l := f.ticketLine(t)
	a, b := l.ticket("ann", "a", 0, 0), l.ticket("ann", "b", 0, 1)
	require.NoError(t, f.Tickets.WaitForSlot(ctx, a))
	require.NoError(t, f.Tickets.WaitForSlot(ctx, b))
	failedOn(t, l.complete(t, 0, nil), tasks.ItemWaiting)
	assert.Equal(t, tasks.Queued, l.get(t, l.busy[0].ID).Status, "a refused release writes nothing")

	require.NoError(t, l.complete(t, 0, &a))
	assert.Equal(t, tasks.MaxActivePerAgent, f.load(t, "ann"), "the slot went to the ticket")
	got, err := f.Tickets.GetTicket(ctx, f.team, a.Key)
	require.NoError(t, err)
	assert.Equal(t, tasks.TicketGranted, got.Status)
	assert.Equal(t, []string{b.Key}, l.next(t, 10), "a granted ticket leaves the line")
	failedOn(t, l.complete(t, 1, &a), tasks.ItemTicket)
	assert.Equal(t, tasks.Queued, l.get(t, l.busy[1].ID).Status)

	onWaiting := another(l.busy[2])
	onWaiting.Ticket = b.Key
	failedOn(t, f.Tasks.CreateTask(ctx, onWaiting, nil, nil), tasks.ItemTicket)
	f.absent(t, onWaiting.ID)
	onGranted := another(l.busy[2])
	onGranted.Ticket = a.Key
	require.NoError(t, f.Tasks.CreateTask(ctx, onGranted, nil, nil))
	assert.Equal(t, tasks.MaxActivePerAgent, f.load(t, "ann"), "the ticket's slot, not another")
	_, err = f.Tickets.GetTicket(ctx, f.team, a.Key)
	refused(t, err, apperr.ENOTFOUND, "")

	require.NoError(t, l.complete(t, 1, &b))
	failedOn(t, f.Tickets.ReleaseTicket(ctx, a, nil, false), tasks.ItemTicket)
	c := l.ticket("ann", "c", 0, 2)
	require.NoError(t, f.Tickets.WaitForSlot(ctx, c))
	failedOn(t, f.Tickets.ReleaseTicket(ctx, c, nil, true), tasks.ItemTicket)
	failedOn(t, f.Tickets.ReleaseTicket(ctx, b, nil, false), tasks.ItemWaiting)
	require.NoError(t, f.Tickets.ReleaseTicket(ctx, b, nil, true), "forced past the waiting ticket")
	assert.Equal(t, tasks.MaxActivePerAgent-1, f.load(t, "ann"), "released")
	failedOn(t, f.Tickets.ReleaseTicket(ctx, b, nil, true), tasks.ItemTicket)
	require.NoError(t, f.Tickets.DropTicket(ctx, c))
	require.NoError(t, l.complete(t, 3, nil), "no ticket waits: a plain release")
	assert.Equal(t, tasks.MaxActivePerAgent-2, f.load(t, "ann"))
}
