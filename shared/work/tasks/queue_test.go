package tasks_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/testkit/demo"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

// queue lists the agent's queue with ?sort=priority, in pages of size.
func (f *fixture) queue(tb testing.TB, slug string, size int) []string {
	tb.Helper()
	var out []string
	token := ""
	for {
		list, next, err := f.svc.List(context.Background(), team, tasks.Filter{Assignee: slug, Status: tasks.Queued, Sort: tasks.SortPriority}, paging.Page{Limit: size, Token: token})
		require.NoError(tb, err)
		for _, t := range list {
			out = append(out, t.Title)
		}
		if next == "" {
			return out
		}
		token = next
	}
}

func TestQueueOrdersByPriorityThenAgeAcrossPages(t *testing.T) {
	f := newFixture(t)
	for _, in := range []struct{ title, priority string }{
		{"low", "low"}, {"normal, older", ""}, {"urgent", "urgent"}, {"normal, newer", "normal"}, {"high", "high"},
	} {
		f.create(t, tasks.CreateInput{Assignee: "luke", Title: in.title, Priority: in.priority})
		f.clock.Advance(time.Second)
	}
	want := []string{"urgent", "high", "normal, older", "normal, newer", "low"}
	for _, size := range []int{1, 2, 5, 25} {
		assert.Equal(t, want, f.queue(t, "luke", size), "page size %d", size)
	}
	assert.Empty(t, f.queue(t, "dana", 2))
}

func TestQueueBreaksTiesInTheSameInstantByCreation(t *testing.T) {
	f := newFixture(t) // the clock stands still: the ids order them
	for _, title := range []string{"first", "second", "third"} {
		f.create(t, tasks.CreateInput{Assignee: "luke", Title: title, Priority: "high"})
	}
	assert.Equal(t, []string{"first", "second", "third"}, f.queue(t, "luke", 2))
}

func TestQueueOrderComparesRankThenAgeThenID(t *testing.T) {
	at := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	a := tasks.Task{ID: "task_a", Priority: "low", CreatedAt: at}
	b := tasks.Task{ID: "task_b", Priority: "urgent", CreatedAt: at.Add(time.Hour)}
	c := tasks.Task{ID: "task_c", Priority: "urgent", CreatedAt: at.Add(time.Hour)}
	d := tasks.Task{ID: "task_d", Priority: "urgent", CreatedAt: at}
	assert.Positive(t, tasks.QueueOrder(a, b))
	assert.Negative(t, tasks.QueueOrder(b, c))
	assert.Negative(t, tasks.QueueOrder(d, b))
	assert.Equal(t, []int{0, 1, 2, 3}, []int{tasks.PriorityRank("urgent"), tasks.PriorityRank("high"), tasks.PriorityRank("normal"), tasks.PriorityRank("low")})
	assert.Equal(t, tasks.PriorityRank("normal"), tasks.PriorityRank("p0"), "an unknown priority (never stored) ranks as normal")
}

func TestAnInvalidPriorityIsNeverStored(t *testing.T) {
	f := newFixture(t)
	_, err := f.svc.Create(context.Background(), team, user, tasks.CreateInput{Assignee: "luke", Title: "x", Priority: "p0"}, false)
	require.Error(t, err)
	assert.Equal(t, "priority", fieldOf(t, err))
	list, _, err := f.svc.List(context.Background(), team, tasks.Filter{Assignee: "luke"}, paging.Page{Limit: 10})
	require.NoError(t, err)
	assert.Empty(t, list)
}

func TestSortPriorityNamesSortWithoutAnAgentsQueue(t *testing.T) {
	f := newFixture(t)
	for name, flt := range map[string]tasks.Filter{
		"no assignee":      {Status: tasks.Queued, Sort: tasks.SortPriority},
		"no status":        {Assignee: "luke", Sort: tasks.SortPriority},
		"another status":   {Assignee: "luke", Status: tasks.Running, Sort: tasks.SortPriority},
		"with agent":       {Assignee: "luke", Status: tasks.Queued, Agent: "luke", Sort: tasks.SortPriority},
		"with a parent":    {Assignee: "luke", Status: tasks.Queued, Parent: "task_x", Sort: tasks.SortPriority},
		"an unknown order": {Sort: "age"},
	} {
		_, _, err := f.svc.List(context.Background(), team, flt, paging.Page{Limit: 10})
		require.Error(t, err, name)
		assert.True(t, apperr.Is(err, apperr.EINVALID), name)
		assert.Equal(t, "sort", fieldOf(t, err), name)
	}
}

func TestNextTaskStartsTheBestQueuedWorkItem(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.create(t, tasks.CreateInput{Assignee: "luke", Title: "normal"})
	f.clock.Advance(time.Second)
	high := f.create(t, tasks.CreateInput{Assignee: "luke", Title: "high", Priority: "high"})
	f.clock.Advance(time.Second)
	f.create(t, tasks.CreateInput{Assignee: "luke", Title: "later high", Priority: "high"})
	// Not work items, so never picked: an executed task and a delegation.
	exec := true
	_, err := f.svc.Create(ctx, team, user, tasks.CreateInput{Assignee: "luke", Title: "executed", Priority: "urgent", Execute: &exec}, false)
	require.NoError(t, err)
	parent := f.running(t, "kyra")
	_, err = f.delegate(parent, "luke")
	require.NoError(t, err)

	got, ok, err := f.svc.NextTask(ctx, team, "luke", "agent:luke")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, high.ID, got.ID)
	assert.Equal(t, tasks.Running, got.Status)
	assert.Nil(t, got.Deadline, "a start like POST /start: a work item has no deadline")
	assert.Equal(t, f.clock.Now(), *got.StartedAt)
	stored := f.get(t, high.ID)
	assert.Equal(t, tasks.Running, stored.Status)
	assert.Equal(t, tasks.EvStarted, stored.Events[len(stored.Events)-1].Type)
	assert.Equal(t, "agent:luke", stored.Events[len(stored.Events)-1].Actor)
	assert.Equal(t, []tasks.Status{tasks.Queued, tasks.Running}, statuses(f.statusEvents(high.ID)))
	assert.Equal(t, []string{"later high", "normal"}, f.queue(t, "luke", 10))

	for _, want := range []string{"later high", "normal"} {
		got, ok, err = f.svc.NextTask(ctx, team, "luke", "agent:luke")
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, want, got.Title)
	}
	_, ok, err = f.svc.NextTask(ctx, team, "luke", "agent:luke")
	require.NoError(t, err)
	assert.False(t, ok, "only the executed task and the delegation are left: none is a work item")
}

func statuses(evs []tasks.TaskStatusChanged) []tasks.Status {
	var out []tasks.Status
	for _, e := range evs {
		out = append(out, e.Status)
	}
	return out
}

func TestNextTaskSkipsBlockedAndAnswersNoneOrNotFound(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	blocked := f.create(t, tasks.CreateInput{Assignee: "luke", Title: "a work item"})
	_, err := f.svc.Start(ctx, team, blocked.ID, "user:key_test")
	require.NoError(t, err)
	_, err = f.svc.Block(ctx, team, blocked.ID, "user:key_test", "waiting")
	require.NoError(t, err)

	_, ok, err := f.svc.NextTask(ctx, team, "luke", "agent:luke")
	require.NoError(t, err)
	assert.False(t, ok, "a blocked task is resumed with start, not picked")
	assert.Equal(t, tasks.Blocked, f.get(t, blocked.ID).Status)

	for name, c := range map[string]struct{ team, slug string }{
		"unknown agent":        {team, "nobody"},
		"malformed slug":       {team, "Not_A_Slug"},
		"another team's agent": {demo.OtherTeamID, "luke"},
	} {
		_, _, err := f.svc.NextTask(ctx, c.team, c.slug, "agent:x")
		assert.True(t, apperr.Is(err, apperr.ENOTFOUND), "%s: %v", name, err)
	}
}

func TestNextTaskRaceStartsEachTaskOnce(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	queued := map[string]bool{}
	for _, p := range []string{"low", "urgent", "normal"} {
		queued[f.create(t, tasks.CreateInput{Assignee: "luke", Title: p, Priority: p}).ID] = true
	}
	var (
		mu      sync.Mutex
		started = map[string]int{}
		none    int
		wg      sync.WaitGroup
	)
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, ok, err := f.svc.NextTask(ctx, team, "luke", "agent:luke")
			assert.NoError(t, err)
			mu.Lock()
			defer mu.Unlock()
			if ok {
				started[got.ID]++
			} else {
				none++
			}
		}()
	}
	wg.Wait()
	assert.Len(t, started, 3)
	for id, n := range started {
		assert.True(t, queued[id], id)
		assert.Equal(t, 1, n, "task %s started %d times", id, n)
		assert.Equal(t, tasks.Running, f.get(t, id).Status)
	}
	assert.Equal(t, 17, none)
	assert.Equal(t, tasks.Load{}, f.counters(t, "luke"), "each left the queue once; no slot was taken")
}
