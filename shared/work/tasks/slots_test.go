package tasks_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

// wakes records the task tokens the service completes; tokens in dead
// fail as a token of an execution that ended does.
type wakes struct {
	mu     sync.Mutex
	tokens []string
	output []any
	dead   map[string]bool
}

func (w *wakes) Succeed(_ context.Context, token string, output any) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.dead[token] {
		return errors.New("TaskTimedOut: the execution ended")
	}
	w.tokens, w.output = append(w.tokens, token), append(w.output, output)
	return nil
}

func (w *wakes) woken() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.tokens...)
}

// busy gives slug its five slots (executed tasks, queued: the fixture runs
// no executions) and returns them.
func (f *fixture) busy(tb testing.TB, slug string) []tasks.Task {
	tb.Helper()
	var out []tasks.Task
	for range tasks.MaxActivePerAgent {
		out = append(out, f.executed(tb, tasks.CreateInput{Assignee: slug, Title: "agent work"}))
	}
	return out
}

func (f *fixture) ticket(tb testing.TB, slug, key string) bool {
	tb.Helper()
	ok, err := f.svc.WaitForSlot(context.Background(), tasks.Ticket{TeamID: team, Agent: slug, Key: key, Token: "tok-" + key,
		Rank: tasks.PriorityRank("normal"), Expires: f.clock.Now().Add(10 * time.Minute)})
	require.NoError(tb, err)
	return ok
}

// The release of a slot hands it to the ticket first in line: the agent's
// counter does not move, a racing create is still refused, the waiting
// token is completed, and the stage's create on the granted ticket takes
// no second slot. The next release goes to the next ticket.
func TestAFreedSlotGoesToTheFirstTicketInLine(t *testing.T) {
	f := newFixture(t)
	w := &wakes{}
	f.svc.Callbacks = w
	ctx := context.Background()
	held := f.busy(t, "luke")
	require.True(t, f.ticket(t, "luke", "ses_a#1#work"))
	f.clock.Advance(time.Millisecond)
	require.True(t, f.ticket(t, "luke", "ses_b#1#work"))
	assert.Empty(t, w.woken())

	_, err := f.svc.Cancel(ctx, team, held[0].ID, "user:key_test", "make room")
	require.NoError(t, err)
	assert.Equal(t, []string{"tok-ses_a#1#work"}, w.woken(), "the first in line is woken")
	assert.Equal(t, tasks.MaxActivePerAgent, f.load(t, "luke"), "the slot was handed over, not released")
	_, err = f.svc.Create(ctx, team, user, tasks.CreateInput{Assignee: "luke", Title: "racing", Execute: ptr(true)}, false)
	requireAppErr(t, err, apperr.ELIMIT, tasks.ReasonConcurrency)

	tk, granted, err := f.svc.GrantedTicket(ctx, team, "ses_a#1#work")
	require.NoError(t, err)
	require.True(t, granted)
	assert.Equal(t, "luke", tk.Agent)
	stage := f.create(t, tasks.CreateInput{Assignee: "luke", Title: "stage", Ticket: "ses_a#1#work", Execute: ptr(true)})
	assert.Equal(t, tasks.MaxActivePerAgent, f.load(t, "luke"), "the stage's task runs on the handed slot")
	_, granted, err = f.svc.GrantedTicket(ctx, team, "ses_a#1#work")
	require.NoError(t, err)
	assert.False(t, granted, "a ticket is spent once")
	_, err = f.svc.Create(ctx, team, user, tasks.CreateInput{Assignee: "luke", Title: "again", Ticket: "ses_a#1#work", Execute: ptr(true)}, false)
	assert.Error(t, err, "a spent ticket gives no second slot")

	_, err = f.svc.Start(ctx, team, stage.ID, "session")
	require.NoError(t, err)
	_, err = f.svc.Complete(ctx, team, stage.ID, "agent:luke", "done", nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"tok-ses_a#1#work", "tok-ses_b#1#work"}, w.woken())
	_, err = f.svc.Cancel(ctx, team, held[1].ID, "user:key_test", "no one waits")
	require.NoError(t, err)
	assert.Equal(t, tasks.MaxActivePerAgent-1, f.load(t, "luke"), "with nobody in line the slot is released")
}

// A ticket is registered only while the agent is at its limit: with a
// free slot the stage runs now (nothing in line, nothing counted).
func TestNoTicketWhileASlotIsFree(t *testing.T) {
	f := newFixture(t)
	f.svc.Callbacks = &wakes{}
	f.busy(t, "luke")
	held := f.busy(t, "dana")
	_, err := f.svc.Cancel(context.Background(), team, held[0].ID, "u", "room")
	require.NoError(t, err)
	assert.False(t, f.ticket(t, "dana", "ses_a#1#work"), "dana has a free slot")
	_, granted, err := f.svc.GrantedTicket(context.Background(), team, "ses_a#1#work")
	require.NoError(t, err)
	assert.False(t, granted)
	assert.True(t, f.ticket(t, "luke", "ses_a#1#work"), "luke is full")
	assert.True(t, f.ticket(t, "luke", "ses_a#1#work"), "a retried registration is the same ticket")
}

// Line order: priority rank, then the oldest; an expired ticket is
// dropped, not granted; a waiter whose execution ended gives the slot
// straight back (here to the next in line).
func TestTheLineSkipsExpiredAndDeadWaiters(t *testing.T) {
	f := newFixture(t)
	w := &wakes{dead: map[string]bool{"tok-dead": true}}
	f.svc.Callbacks = w
	ctx := context.Background()
	held := f.busy(t, "luke")
	now := f.clock.Now()
	for _, tk := range []tasks.Ticket{
		{Key: "low", Rank: tasks.PriorityRank("low"), Expires: now.Add(time.Hour)},
		{Key: "expired", Rank: tasks.PriorityRank("urgent"), Expires: now.Add(time.Second)},
		{Key: "dead", Rank: tasks.PriorityRank("high"), Expires: now.Add(time.Hour)},
		{Key: "normal", Rank: tasks.PriorityRank("normal"), Expires: now.Add(time.Hour)},
	} {
		tk.TeamID, tk.Agent, tk.Token = team, "luke", "tok-"+tk.Key
		ok, err := f.svc.WaitForSlot(ctx, tk)
		require.NoError(t, err)
		require.True(t, ok)
	}
	f.clock.Advance(2 * time.Second)
	_, err := f.svc.Cancel(ctx, team, held[0].ID, "u", "room")
	require.NoError(t, err)
	assert.Equal(t, []string{"tok-normal"}, w.woken(), "urgent expired, high's execution is gone: normal, before low")
	for key, want := range map[string]bool{"normal": true, "dead": false, "expired": false, "low": false} {
		_, granted, err := f.svc.GrantedTicket(ctx, team, key)
		require.NoError(t, err)
		assert.Equal(t, want, granted, key)
	}
	assert.Equal(t, tasks.MaxActivePerAgent, f.load(t, "luke"), "one slot, handed once")

	// The session of "normal" ends before its stage ran: its granted
	// ticket gives the slot to low; then low's session ends too.
	n, err := f.svc.ReleaseTickets(ctx, team, "normal")
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.Equal(t, []string{"tok-normal", "tok-low"}, w.woken())
	n, err = f.svc.ReleaseTickets(ctx, team, "low")
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.Equal(t, tasks.MaxActivePerAgent-1, f.load(t, "luke"), "the last grant released: a free slot")
}

// Without callbacks to wake a waiter (a function not granted
// SendTaskSuccess) a release frees the slot as before and the ticket keeps
// its place for the next release.
func TestWithoutCallbacksAReleaseLeavesTheLine(t *testing.T) {
	f := newFixture(t)
	w := &wakes{}
	f.svc.Callbacks = w
	ctx := context.Background()
	held := f.busy(t, "luke")
	require.True(t, f.ticket(t, "luke", "ses_a#1#work"))
	f.svc.Callbacks = nil
	_, err := f.svc.Cancel(ctx, team, held[0].ID, "u", "room")
	require.NoError(t, err)
	assert.Equal(t, tasks.MaxActivePerAgent-1, f.load(t, "luke"))
	f.executed(t, tasks.CreateInput{Assignee: "luke", Title: "takes it"})
	f.svc.Callbacks = w
	_, err = f.svc.Cancel(ctx, team, held[1].ID, "u", "room")
	require.NoError(t, err)
	assert.Equal(t, []string{"tok-ses_a#1#work"}, w.woken())
}

// Concurrent releases each hand one slot to one ticket: eight tickets,
// five releases at once, five woken, each once.
func TestConcurrentReleasesGrantEachTicketOnce(t *testing.T) {
	f := newFixture(t)
	w := &wakes{}
	f.svc.Callbacks = w
	ctx := context.Background()
	held := f.busy(t, "luke")
	for i := range 8 {
		f.clock.Advance(time.Millisecond)
		require.True(t, f.ticket(t, "luke", string(rune('a'+i))))
	}
	var wg sync.WaitGroup
	for _, h := range held {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := f.svc.Cancel(ctx, team, h.ID, "u", "room")
			assert.NoError(t, err)
		}()
	}
	wg.Wait()
	got := w.woken()
	assert.ElementsMatch(t, []string{"tok-a", "tok-b", "tok-c", "tok-d", "tok-e"}, got, "the five first in line, each once")
	assert.Equal(t, tasks.MaxActivePerAgent, f.load(t, "luke"))
}

// A retried waiting state registers again with a new token: the ticket
// keeps its place and the grant wakes the new token.
func TestARetriedWaitWakesItsNewToken(t *testing.T) {
	f := newFixture(t)
	w := &wakes{}
	f.svc.Callbacks = w
	ctx := context.Background()
	held := f.busy(t, "luke")
	tk := tasks.Ticket{TeamID: team, Agent: "luke", Key: "ses_a#1#work", Token: "tok-old", Rank: tasks.PriorityRank("normal"), Expires: f.clock.Now().Add(time.Hour)}
	ok, err := f.svc.WaitForSlot(ctx, tk)
	require.NoError(t, err)
	require.True(t, ok)
	tk.Token = "tok-new"
	ok, err = f.svc.WaitForSlot(ctx, tk)
	require.NoError(t, err)
	require.True(t, ok)
	_, err = f.svc.Cancel(ctx, team, held[0].ID, "u", "room")
	require.NoError(t, err)
	assert.Equal(t, []string{"tok-new"}, w.woken())
}
