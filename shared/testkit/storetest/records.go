package storetest

import (
	"context"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/idempotency"
	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/team/activity"
)

// idempotencyRecords: a request's key is claimed once (a second claim
// gets the record back and stores nothing) until the claim lapses, at the
// time it was given (to the second, as the TTL attribute); the response
// replaces the claim; a pending claim is released, a completed one is
// not; another team's key is its own.
func idempotencyRecords(t *testing.T, f *fixture) {
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Second)
	// claim claims key as a request at at whose claim lapses PendingTTL on.
	claim := func(team, key, hash string, at time.Time) (*idempotency.Record, error) {
		return f.Records.Begin(ctx, team, key, hash, at, at.Add(idempotency.PendingTTL))
	}
	k := ids.New("idem")
	rec, err := claim(f.team, k, "hash-1", now)
	require.NoError(t, err)
	assert.Nil(t, rec, "claimed")
	rec, err = claim(f.team, k, "hash-2", now)
	require.NoError(t, err)
	require.NotNil(t, rec, "a second claim gets the first back")
	assert.Equal(t, idempotency.Record{Key: k, RequestHash: "hash-1", State: idempotency.StatePending}, *rec)

	require.NoError(t, f.Records.Complete(ctx, f.team, idempotency.Record{Key: k, RequestHash: "hash-1", StatusCode: 201, Body: `{"id":"x"}`}, now))
	require.NoError(t, f.Records.Abandon(ctx, f.team, k), "a completed record is not released")
	rec, err = claim(f.team, k, "hash-1", now.Add(idempotency.PendingTTL+time.Minute))
	require.NoError(t, err)
	require.NotNil(t, rec)
	assert.Equal(t, idempotency.Record{Key: k, RequestHash: "hash-1", State: idempotency.StateDone, StatusCode: 201, Body: `{"id":"x"}`}, *rec,
		"the response, replayed long after the claim would have lapsed")
	theirs, err := claim(f.otherTeam(), k, "hash-9", now)
	require.NoError(t, err)
	assert.Nil(t, theirs, "another team's key is its own")

	released := ids.New("idem")
	_, err = claim(f.team, released, "hash-1", now)
	require.NoError(t, err)
	require.NoError(t, f.Records.Abandon(ctx, f.team, released))
	rec, err = claim(f.team, released, "hash-2", now)
	require.NoError(t, err)
	assert.Nil(t, rec, "a released claim is claimed again")

	stale := ids.New("idem")
	_, err = claim(f.team, stale, "hash-1", now)
	require.NoError(t, err)
	rec, err = claim(f.team, stale, "hash-1", now.Add(idempotency.PendingTTL))
	require.NoError(t, err)
	assert.NotNil(t, rec, "a claim lives to its lapse")
	rec, err = claim(f.team, stale, "hash-2", now.Add(idempotency.PendingTTL+time.Second))
	require.NoError(t, err)
	assert.Nil(t, rec, "a lapsed claim is claimed over")
	rec, err = claim(f.team, stale, "hash-3", now.Add(idempotency.PendingTTL+time.Second))
	require.NoError(t, err)
	require.NotNil(t, rec)
	assert.Equal(t, "hash-2", rec.RequestHash)

	// A claim given an earlier lapse (its invocation's deadline and
	// idempotency.ClaimGrace) holds to that second and not one past it.
	short := ids.New("idem")
	until := now.Add(12 * time.Second)
	_, err = f.Records.Begin(ctx, f.team, short, "hash-1", now, until)
	require.NoError(t, err)
	rec, err = claim(f.team, short, "hash-2", until)
	require.NoError(t, err)
	require.NotNil(t, rec, "held at its lapse")
	assert.Equal(t, "hash-1", rec.RequestHash)
	rec, err = claim(f.team, short, "hash-2", until.Add(time.Second))
	require.NoError(t, err)
	assert.Nil(t, rec, "claimed over a second after its lapse, long before PendingTTL")
}

// attemptsCounted: a message's failed deliveries on a queue are counted
// once each however many race; another message or queue counts from one.
func attemptsCounted(t *testing.T, f *fixture) {
	ctx := context.Background()
	queue, msg := "contract-"+f.team, ids.New("m")
	const n = 8
	got := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			c, err := f.Attempts.Failed(ctx, queue, msg)
			assert.NoError(t, err)
			got[i] = c
		})
	}
	wg.Wait()
	sort.Ints(got)
	assert.Equal(t, []int{1, 2, 3, 4, 5, 6, 7, 8}, got, "1 … n, each once")
	for _, c := range [][2]string{{queue, ids.New("m")}, {queue + "-other", msg}} {
		one, err := f.Attempts.Failed(ctx, c[0], c[1])
		require.NoError(t, err)
		assert.Equal(t, 1, one, "%s %s counts on its own", c[0], c[1])
	}
}

// activityLogged: an event is recorded once (a redelivery writes nothing);
// the team's log is listed newest first, a page at a time, each entry as
// recorded; another team reads none.
func activityLogged(t *testing.T, f *fixture) {
	ctx := context.Background()
	at := time.Now().UTC().Truncate(time.Millisecond)
	var made []activity.Entry
	for i, typ := range []string{"TaskCreated", "TaskStatusChanged", "MemoryShared"} {
		e := activity.Entry{TeamID: f.team, EventID: ids.New("ev"), DetailType: typ, Source: "conclave.tasks",
			Time: at.Add(time.Duration(i) * time.Second), Detail: []byte(`{"n":` + strconv.Itoa(i+1) + `}`)}
		require.NoError(t, f.Activity.Record(ctx, e))
		made = append(made, e)
	}
	again := made[0]
	again.Detail = []byte(`{"n":"delivered twice"}`)
	require.NoError(t, f.Activity.Record(ctx, again), "a redelivery is no error")

	list := func(team string) func(paging.Page) ([]activity.Entry, string, error) {
		return func(p paging.Page) ([]activity.Entry, string, error) { return f.Activity.List(ctx, team, p) }
	}
	key := func(e activity.Entry) string { return e.EventID }
	assert.Equal(t, []string{made[2].EventID, made[1].EventID, made[0].EventID}, pages(t, 1, list(f.team), key), "newest first")
	all, _, err := f.Activity.List(ctx, f.team, paging.Page{Limit: 10})
	require.NoError(t, err)
	require.Len(t, all, 3, "recorded once")
	first := all[2]
	assert.Equal(t, f.team, first.TeamID)
	assert.Equal(t, []string{"TaskCreated", "conclave.tasks"}, []string{first.DetailType, first.Source})
	assert.JSONEq(t, `{"n":1}`, string(first.Detail), "as first recorded")
	assert.True(t, first.Time.Equal(made[0].Time))
	assert.Empty(t, pages(t, 10, list(f.otherTeam()), key))
	boundToken(t, list(f.team), list(f.otherTeam()))
}
