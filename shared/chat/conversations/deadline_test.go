package conversations_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/routing/cascade"
	"github.com/conclave-ai/conclave/shared/testkit/memstore"
)

// A turn that answers with an error is never stored: its commit is its
// last step and is not attempted without the commit reserve left before
// the context's deadline. These tests run on the in-memory store with
// deadlines nearly spent.

// assertNothingStored checks that conversation c is as created: no
// message, no version bump, no decision, no latency recorded.
func (f *fixture) assertNothingStored(t *testing.T, c conversations.Conversation) {
	t.Helper()
	got := f.get(t, c.ID)
	assert.Equal(t, c.Version, got.Version, "the conversation did not move on")
	assert.Zero(t, got.MessageCount)
	assert.Empty(t, f.messages(t, c.ID), "no message was stored")
	decisions, _, err := f.store.ListDecisions(context.Background(), team, cascade.DecisionFilter{ConversationID: c.ID}, paging.Page{Limit: 100})
	require.NoError(t, err)
	assert.Empty(t, decisions, "no routing decision was stored")
	loads, err := f.store.AgentLoads(context.Background(), team)
	require.NoError(t, err)
	for slug, l := range loads.All() {
		assert.Zero(t, l.LatencyMS, "no latency was recorded for %s", slug)
	}
}

func requireTooLate(t *testing.T, err error) {
	t.Helper()
	ae := requireAppErr(t, err, apperr.EUNAVAILABLE, "DeadlineTooClose")
	assert.Contains(t, ae.Message, "nothing was stored")
}

func TestATurnWithTheDeadlineNearlySpentStoresNothingAndAsksNoModel(t *testing.T) {
	// A bubble of synctest: the deadlines, sleeps and waits below run on
	// its fake clock, which jumps ahead whenever every goroutine waits.
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, collaborationOff)
		c := f.create(t, "kyra")
		ctx, cancel := context.WithTimeout(context.Background(), conversations.DefaultCommitReserve)
		defer cancel()
		_, err := f.svc.Post(ctx, team, c.ID, conversations.PostInput{Content: "hello"})
		requireTooLate(t, err)
		assert.Empty(t, f.model.requests, "no model was asked")
		f.assertNothingStored(t, c)
	})
}

// Exactly twice the commit reserve left is enough: the turn asks its
// model and is stored (on synctest's clock, no time passes while nothing
// waits).
func TestATurnWithExactlyTwiceTheReserveLeftIsStored(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, collaborationOff)
		c := f.create(t, "kyra")
		ctx, cancel := context.WithTimeout(context.Background(), 2*conversations.DefaultCommitReserve)
		defer cancel()
		_, err := f.svc.Post(ctx, team, c.ID, conversations.PostInput{Content: "hello"})
		require.NoError(t, err)
		assert.Len(t, f.messages(t, c.ID), 2, "the message and its reply")
	})
}

// slowModel answers after d whatever its context says, as a provider that
// does not honour cancellation would.
type slowModel struct {
	d     time.Duration
	inner models.Model
}

func (m slowModel) Converse(ctx context.Context, req models.Request) (models.Response, error) {
	time.Sleep(m.d)
	return m.inner.Converse(context.WithoutCancel(ctx), req)
}

func TestATurnWhoseModelsOverranTheDeadlineIsNotCommitted(t *testing.T) {
	// A bubble of synctest: the deadlines, sleeps and waits below run on
	// its fake clock, which jumps ahead whenever every goroutine waits.
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, collaborationOff)
		f.cfg.CommitReserve = 200 * time.Millisecond
		f.cfg.Model = slowModel{d: 600 * time.Millisecond, inner: f.model}
		f.rebuild()
		c := f.create(t, "kyra")
		ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
		defer cancel()
		_, err := f.svc.Post(ctx, team, c.ID, conversations.PostInput{Content: "hello"})
		requireTooLate(t, err)
		require.Len(t, f.model.requests, 1, "the agent answered, too late")
		f.assertNothingStored(t, c)
	})
}

// losingStore loses every commit to a concurrent turn after taking d, and
// writes nothing, as DynamoDB refuses a stale version.
type losingStore struct {
	*memstore.Store
	d        time.Duration
	attempts int
	// deadline is the turn's; left is what of it each attempt started with.
	deadline time.Time
	left     []time.Duration
}

func (s *losingStore) CommitTurn(ctx context.Context, _ string, _ conversations.Turn) error {
	s.attempts++
	if !s.deadline.IsZero() {
		s.left = append(s.left, time.Until(s.deadline))
	}
	time.Sleep(s.d)
	return apperr.Wrap(apperr.ECONFLICT, conversations.ErrChanged, "the conversation changed during the turn").WithReason("ConversationChanged")
}

// The retries of a turn that keeps losing the race for its conversation
// stop when the reserve is reached, and answer before the deadline.
func TestTheCommitRetriesRespectTheDeadline(t *testing.T) {
	// A bubble of synctest: the deadlines, sleeps and waits below run on
	// its fake clock, which jumps ahead whenever every goroutine waits.
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, collaborationOff)
		// The margins are wide (a reserve four times an attempt) so that a
		// loaded machine's scheduling delays cannot decide the outcome: the
		// test checks the rule, not a stopwatch.
		const reserve, attempt = 600 * time.Millisecond, 150 * time.Millisecond
		f.cfg.CommitReserve = reserve
		f.rebuild()
		c := f.create(t, "kyra")
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		dl, _ := ctx.Deadline()
		losing := &losingStore{Store: f.store, d: attempt, deadline: dl}
		f.cfg.Store = losing
		f.rebuild()
		_, err := f.svc.Post(ctx, team, c.ID, conversations.PostInput{Content: "hello"})
		requireTooLate(t, err)
		// No attempt started without most of the reserve ahead (the service
		// checks for all of it just before), so it gave up with time to answer,
		// not when the deadline hit.
		for i, left := range losing.left {
			assert.GreaterOrEqual(t, left, reserve/2, "attempt %d started with %s left", i+1, left)
		}
		assert.NoError(t, ctx.Err(), "answered before the deadline")
		assert.GreaterOrEqual(t, losing.attempts, 2, "it retried while there was time")
		assert.Less(t, losing.attempts, 12, "the deadline, not the attempt limit, stopped it")
		f.cfg.Store = f.store
		f.rebuild()
		f.assertNothingStored(t, c)
	})
}

// hangingStore's commit takes until its context ends.
type hangingStore struct{ *memstore.Store }

func (s hangingStore) CommitTurn(ctx context.Context, _ string, _ conversations.Turn) error {
	<-ctx.Done()
	return fmt.Errorf("dynamodb TransactWriteItems failed: %w", ctx.Err())
}

// A commit cut off in flight may have been applied: the turn does not say
// "nothing was stored"; it answers a server fault, before the deadline.
func TestACommitCutOffInFlightIsAnUnknownOutcome(t *testing.T) {
	// A bubble of synctest: the deadlines, sleeps and waits below run on
	// its fake clock, which jumps ahead whenever every goroutine waits.
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, collaborationOff)
		// A 1 s reserve: the commit's context ends 100 ms before the turn's,
		// room enough on a loaded machine to answer before the deadline.
		f.cfg.CommitReserve = time.Second
		f.rebuild()
		c := f.create(t, "kyra")
		f.cfg.Store = hangingStore{f.store}
		f.rebuild()
		ctx, cancel := context.WithTimeout(context.Background(), 2500*time.Millisecond)
		defer cancel()
		_, err := f.svc.Post(ctx, team, c.ID, conversations.PostInput{Content: "hello"})
		requireAppErr(t, err, apperr.EINTERNAL, "")
		assert.NoError(t, ctx.Err(), "the commit's context ended before the turn's")
	})
}

func TestAHandoffWithTheDeadlineNearlySpentStoresNothing(t *testing.T) {
	// A bubble of synctest: the deadlines, sleeps and waits below run on
	// its fake clock, which jumps ahead whenever every goroutine waits.
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, collaborationOn)
		c := f.create(t, "kyra")
		ctx, cancel := context.WithTimeout(context.Background(), conversations.DefaultCommitReserve/2)
		defer cancel()
		_, err := f.svc.Handoff(ctx, team, c.ID, conversations.HandoffInput{To: "luke", Reason: "code"})
		ae := requireAppErr(t, err, apperr.EUNAVAILABLE, "DeadlineTooClose")
		assert.Contains(t, ae.Message, "handoff")
		got := f.get(t, c.ID)
		assert.Equal(t, "kyra", got.CurrentAgent)
		assert.Equal(t, c.Version, got.Version)
		hs, err := f.svc.Handoffs(context.Background(), team, c.ID)
		require.NoError(t, err)
		assert.Empty(t, hs)
		assert.Empty(t, handoffEvents(f))
	})
}

// With time enough, a turn is committed as before, its latency with it.
func TestATurnWithTimeEnoughIsCommittedWithItsLatency(t *testing.T) {
	// A bubble of synctest: the deadlines, sleeps and waits below run on
	// its fake clock, which jumps ahead whenever every goroutine waits.
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, collaborationOff)
		f.cfg.Model = slowModel{d: 20 * time.Millisecond, inner: f.model}
		f.rebuild()
		c := f.create(t, "kyra")
		ctx, cancel := context.WithTimeout(context.Background(), 29*time.Second)
		defer cancel()
		_, err := f.svc.Post(ctx, team, c.ID, conversations.PostInput{Content: "hello"})
		require.NoError(t, err)
		got := f.get(t, c.ID)
		assert.Equal(t, c.Version+1, got.Version)
		assert.Len(t, f.messages(t, c.ID), 2)
		loads, err := f.store.AgentLoads(context.Background(), team)
		require.NoError(t, err)
		assert.GreaterOrEqual(t, loads.Of("kyra").LatencyMS, 20.0, "kyra's reply latency was committed with the turn")
		assert.Equal(t, 1, loads.Of("kyra").ActiveConversations)
	})
}

// losingHandoffs loses every handoff commit to a concurrent change.
type losingHandoffs struct {
	*memstore.Store
	attempts int
}

func (s *losingHandoffs) CommitHandoff(context.Context, string, conversations.HandoffChange) error {
	s.attempts++
	return apperr.Wrap(apperr.ECONFLICT, conversations.ErrChanged, "the conversation changed during the handoff").WithReason("ConversationChanged")
}

// With time enough, a turn and a handoff that keep losing the race for
// their conversation try twelve times each, then answer the conflict.
func TestACommitThatKeepsLosingTriesTwelveTimes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, collaborationOn)
		c := f.create(t, "kyra")
		turns := &losingStore{Store: f.store}
		f.cfg.Store = turns
		f.rebuild()
		_, err := f.svc.Post(context.Background(), team, c.ID, conversations.PostInput{Content: "hello"})
		assert.Equal(t, apperr.ECONFLICT, apperr.Code(err))
		assert.Equal(t, 12, turns.attempts)

		handoffs := &losingHandoffs{Store: f.store}
		f.cfg.Store = handoffs
		f.rebuild()
		_, err = f.svc.Handoff(context.Background(), team, c.ID, conversations.HandoffInput{To: "luke", Reason: "code"})
		assert.Equal(t, apperr.ECONFLICT, apperr.Code(err))
		assert.Equal(t, 12, handoffs.attempts)
	})
}
