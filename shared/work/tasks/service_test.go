package tasks_test

import (
	"cmp"
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/testkit/demo"
	"github.com/conclave-ai/conclave/shared/testkit/memstore"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

// These tests drive the task service through its public methods against
// the in-memory store, which enforces the delegation limits the way the
// DynamoDB adapter's transactions do.

const team = demo.TeamID

var user = tasks.Creator{Type: "user", ID: "key_test"}

type fixture struct {
	store  *memstore.Store
	bus    *memstore.Publisher
	clock  *memstore.Clock
	svc    *tasks.Service
	agents *agents.Service
}

// newFixture is the demo team in a fresh in-memory store, a task service
// on a fake clock without a workflow runner, and a recording bus.
func newFixture(tb testing.TB) *fixture {
	tb.Helper()
	store := memstore.New()
	require.NoError(tb, demo.Seed(context.Background(), store))
	clk := memstore.NewClock(time.Date(2030, 1, 2, 9, 0, 0, 0, time.UTC))
	store.Now = clk.Now
	bus := &memstore.Publisher{}
	svc := tasks.NewService(store, nil, bus, slog.New(slog.NewTextHandler(io.Discard, nil)))
	svc.Now = clk.Now
	ag := agents.NewService(store)
	ag.Now = clk.Now
	return &fixture{store: store, bus: bus, clock: clk, svc: svc, agents: ag}
}

// create makes a task as in asks (a board task, a work item, unless it
// says execute or names a parent).
func (f *fixture) create(tb testing.TB, in tasks.CreateInput) tasks.Task {
	tb.Helper()
	t, err := f.svc.Create(context.Background(), team, user, in, false)
	require.NoError(tb, err)
	return t
}

// executed makes an executed task: it holds a slot and, started, has the
// deadline of its budget. The fixture has no workflow runner, so it stays
// queued until a verb moves it, as if its execution had not started yet.
func (f *fixture) executed(tb testing.TB, in tasks.CreateInput) tasks.Task {
	tb.Helper()
	in.Execute = ptr(true)
	return f.create(tb, in)
}

// running makes an executed task for assignee and starts it.
func (f *fixture) running(tb testing.TB, assignee string) tasks.Task {
	tb.Helper()
	t := f.executed(tb, tasks.CreateInput{Assignee: assignee, Title: "work for " + assignee})
	t, err := f.svc.Start(context.Background(), team, t.ID, "user:key_test")
	require.NoError(tb, err)
	return t
}

// blockable makes a delegated board task of assignee's (a child of a
// running task of kyra's, not executed): it holds a slot while queued or
// running, and its verbs include block, which an executed task refuses.
func (f *fixture) blockable(tb testing.TB, assignee string, in tasks.CreateInput) tasks.Task {
	tb.Helper()
	in.Assignee, in.ParentID = assignee, f.running(tb, "kyra").ID
	in.Title = cmp.Or(in.Title, "help from "+assignee)
	return f.create(tb, in)
}

// delegate has the parent's assignee delegate to another agent.
func (f *fixture) delegate(parent tasks.Task, to string) (tasks.Task, error) {
	return f.svc.Create(context.Background(), team, user, tasks.CreateInput{Assignee: to, ParentID: parent.ID, Title: "help from " + to}, false)
}

// mustDelegate delegates and starts the delegated task.
func (f *fixture) mustDelegate(tb testing.TB, parent tasks.Task, to string) tasks.Task {
	tb.Helper()
	t, err := f.delegate(parent, to)
	require.NoError(tb, err)
	t, err = f.svc.Start(context.Background(), team, t.ID, "agent:"+to)
	require.NoError(tb, err)
	return t
}

func (f *fixture) load(tb testing.TB, slug string) int {
	tb.Helper()
	n, err := f.svc.Load(context.Background(), team, slug)
	require.NoError(tb, err)
	return n.Active
}

// queueLen is how many queued work items the agent's queue counts.
func (f *fixture) queueLen(tb testing.TB, slug string) int {
	tb.Helper()
	return f.counters(tb, slug).Queued
}

func (f *fixture) counters(tb testing.TB, slug string) tasks.Load {
	tb.Helper()
	n, err := f.svc.Load(context.Background(), team, slug)
	require.NoError(tb, err)
	return n
}

func (f *fixture) get(tb testing.TB, id string) tasks.Task {
	tb.Helper()
	t, err := f.svc.Get(context.Background(), team, id)
	require.NoError(tb, err)
	return t
}

func (f *fixture) setStatus(tb testing.TB, slug, status string) {
	tb.Helper()
	_, err := f.agents.SetStatus(context.Background(), team, slug, status)
	require.NoError(tb, err)
}

// statusEvents are the published TaskStatusChanged details of one task.
func (f *fixture) statusEvents(id string) []tasks.TaskStatusChanged {
	var out []tasks.TaskStatusChanged
	for _, e := range memstore.Details[tasks.TaskStatusChanged](f.bus, "TaskStatusChanged") {
		if e.TaskID == id {
			out = append(out, e)
		}
	}
	return out
}

// requireAppErr checks err is an application error with code and reason.
func requireAppErr(tb testing.TB, err error, code, reason string) *apperr.Error {
	tb.Helper()
	require.Error(tb, err)
	ae, ok := apperr.As(err)
	require.True(tb, ok, "%v is not an *apperr.Error", err)
	require.Equal(tb, code, ae.Code, ae.Error())
	require.Equal(tb, reason, ae.Reason, ae.Error())
	return ae
}

func eventTypes(evs []tasks.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Type
	}
	return out
}

func TestCreateQueuesTheTaskTakesASlotAndAnnouncesIt(t *testing.T) {
	f := newFixture(t)
	tk := f.create(t, tasks.CreateInput{Assignee: "luke", Title: "  Review the PR  "})

	assert.Equal(t, tasks.Queued, tk.Status)
	assert.Equal(t, "Review the PR", tk.Title)
	assert.Equal(t, "Review the PR", tk.Instructions, "instructions default to the title")
	assert.Equal(t, tk.ID, tk.RootID)
	assert.Equal(t, 0, tk.Depth)
	assert.Equal(t, []string{"luke"}, tk.Chain)
	assert.Equal(t, 1, tk.Version)
	assert.Equal(t, f.clock.Now(), tk.CreatedAt)

	got := f.get(t, tk.ID)
	assert.Equal(t, tk.Title, got.Title)
	require.Len(t, got.Events, 1)
	assert.Equal(t, tasks.EvCreated, got.Events[0].Type)
	assert.Equal(t, 1, got.Events[0].Seq)
	assert.Equal(t, "user:key_test", got.Events[0].Actor)

	assert.Equal(t, 0, f.load(t, "luke"), "a work item takes no slot")
	assert.Equal(t, 1, f.queueLen(t, "luke"), "but a place in the queue")
	assert.Equal(t, 0, f.load(t, "dana"))
	assert.Equal(t, []tasks.TaskStatusChanged{{
		TeamID: team, TaskID: tk.ID, Assignee: "luke", Status: tasks.Queued, RootID: tk.ID,
	}}, f.statusEvents(tk.ID))

	ex := f.executed(t, tasks.CreateInput{Assignee: "luke", Title: "Run the checks"})
	assert.Equal(t, tasks.Queued, ex.Status)
	assert.Equal(t, 1, f.load(t, "luke"), "an executed task takes a slot")
	assert.Equal(t, 1, f.queueLen(t, "luke"), "and no place in the queue")
}

func TestCreateRejectsAnUnknownOrUnavailableAssignee(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()

	_, err := f.svc.Create(ctx, team, user, tasks.CreateInput{Assignee: "nobody", Title: "x"}, false)
	requireAppErr(t, err, apperr.ENOTFOUND, "")

	for _, status := range []string{agents.StatusPaused, agents.StatusArchived} {
		f.setStatus(t, "dana", status)
		for _, execute := range []bool{false, true} {
			_, err = f.svc.Create(ctx, team, user, tasks.CreateInput{Assignee: "dana", Title: "x", Execute: &execute}, false)
			ae := requireAppErr(t, err, apperr.ECONFLICT, tasks.ReasonUnavailable)
			assert.Equal(t, status, ae.Details["agent_status"])
			assert.Equal(t, tasks.Load{}, f.counters(t, "dana"), "a refused task takes no slot and no place in the queue")
		}
	}

	f.setStatus(t, "dana", agents.StatusActive)
	f.executed(t, tasks.CreateInput{Assignee: "dana", Title: "x"})
	assert.Equal(t, 1, f.load(t, "dana"))
	assert.Len(t, f.bus.OfType("TaskStatusChanged"), 1, "only the accepted task was announced")
}

func TestCreateByAnUnknownAgentIsNotFound(t *testing.T) {
	f := newFixture(t)
	_, err := f.svc.Create(context.Background(), team, user, tasks.CreateInput{Assignee: "luke", CreatedByAgent: "ghost", Title: "x"}, false)
	requireAppErr(t, err, apperr.ENOTFOUND, "")
	assert.Equal(t, 0, f.load(t, "luke"), "the slot taken in the same transaction is not kept")

	tk, err := f.svc.Create(context.Background(), team, user, tasks.CreateInput{Assignee: "luke", CreatedByAgent: "kyra", Title: "x"}, false)
	require.NoError(t, err)
	assert.Equal(t, tasks.Creator{Type: "agent", ID: "kyra"}, tk.CreatedBy)
	assert.Equal(t, 1, tk.Depth, "an agent's task is one delegation deep")
	assert.Equal(t, []string{"kyra", "luke"}, tk.Chain)
}

func TestAnAgentCannotDelegateToItself(t *testing.T) {
	f := newFixture(t)
	_, err := f.svc.Create(context.Background(), team, user, tasks.CreateInput{Assignee: "kyra", CreatedByAgent: "kyra", Title: "x"}, false)
	requireAppErr(t, err, apperr.EINVALID, tasks.ReasonSelf)

	parent := f.running(t, "kyra")
	_, err = f.delegate(parent, "kyra")
	requireAppErr(t, err, apperr.EINVALID, tasks.ReasonSelf)
	assert.Equal(t, 1, f.load(t, "kyra"), "only the parent holds a slot")
}

func TestDelegationStopsAtDepthThree(t *testing.T) {
	f := newFixture(t)
	root := f.running(t, "kyra") // depth 0: the user's task
	d1 := f.mustDelegate(t, root, "luke")
	d2 := f.mustDelegate(t, d1, "dana")
	d3 := f.mustDelegate(t, d2, "archie") // depth 3 is the deepest allowed
	assert.Equal(t, []int{1, 2, 3}, []int{d1.Depth, d2.Depth, d3.Depth})
	assert.Equal(t, []string{"kyra", "luke", "dana", "archie"}, d3.Chain)
	assert.Equal(t, root.ID, d3.RootID)
	assert.Equal(t, d2.ID, d3.ParentID)

	_, err := f.delegate(d3, "sage")
	ae := requireAppErr(t, err, apperr.EREJECTED, tasks.ReasonDepth)
	assert.Equal(t, 4, ae.Details["depth"])
	assert.Equal(t, tasks.MaxDepth, ae.Details["max_depth"])
	assert.Equal(t, 0, f.load(t, "sage"))
}

func TestDelegationRejectsAnAgentAlreadyInTheChain(t *testing.T) {
	f := newFixture(t)
	root := f.running(t, "kyra")
	d1 := f.mustDelegate(t, root, "luke")
	d2 := f.mustDelegate(t, d1, "dana")

	for _, back := range []string{"kyra", "luke"} {
		_, err := f.delegate(d2, back)
		ae := requireAppErr(t, err, apperr.EREJECTED, tasks.ReasonCycle)
		assert.Equal(t, []string{"kyra", "luke", "dana"}, ae.Details["chain"], back)
	}
	assert.Equal(t, 1, f.load(t, "kyra"))
	assert.Equal(t, 1, f.load(t, "luke"))

	_, err := f.delegate(d2, "wren")
	require.NoError(t, err, "an agent outside the chain can take it")
}

func TestDelegationNeedsARunningParentOfTheTeam(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	queued := f.create(t, tasks.CreateInput{Assignee: "kyra", Title: "not started"})
	_, err := f.delegate(queued, "luke")
	ae := requireAppErr(t, err, apperr.ECONFLICT, tasks.ReasonState)
	assert.Equal(t, "queued", ae.Details["status"])

	done := f.running(t, "dana")
	_, err = f.svc.Complete(ctx, team, done.ID, "agent:dana", "ok", nil)
	require.NoError(t, err)
	_, err = f.delegate(done, "luke")
	requireAppErr(t, err, apperr.ECONFLICT, tasks.ReasonState)
	assert.Equal(t, 0, f.load(t, "luke"))

	_, err = f.svc.Create(ctx, team, user, tasks.CreateInput{Assignee: "luke", ParentID: "task_missing", Title: "x"}, false)
	requireAppErr(t, err, apperr.ENOTFOUND, "")
	_, err = f.svc.Create(ctx, demo.OtherTeamID, user, tasks.CreateInput{Assignee: "luke", ParentID: queued.ID, Title: "x"}, false)
	requireAppErr(t, err, apperr.ENOTFOUND, "")

	running := f.running(t, "kyra")
	_, err = f.svc.Create(ctx, team, user, tasks.CreateInput{Assignee: "luke", ParentID: running.ID, CreatedByAgent: "dana", Title: "x"}, false)
	ae = requireAppErr(t, err, apperr.EINVALID, "")
	assert.Equal(t, "created_by_agent", ae.Field)
	capUSD := 0.1
	_, err = f.svc.Create(ctx, team, user, tasks.CreateInput{Assignee: "luke", ParentID: running.ID, CostCapUSD: &capUSD, Title: "x"}, false)
	ae = requireAppErr(t, err, apperr.EINVALID, "")
	assert.Equal(t, "cost_cap_usd", ae.Field)
}

func TestAnAgentHoldsAtMostFiveActiveTasks(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	var held []tasks.Task
	for i := range tasks.MaxActivePerAgent {
		held = append(held, f.executed(t, tasks.CreateInput{Assignee: "luke", Title: "task"}))
		assert.Equal(t, i+1, f.load(t, "luke"))
	}
	_, err := f.svc.Create(ctx, team, user, tasks.CreateInput{Assignee: "luke", Title: "one too many", Execute: ptr(true)}, false)
	ae := requireAppErr(t, err, apperr.ELIMIT, tasks.ReasonConcurrency)
	assert.Equal(t, tasks.MaxActivePerAgent, ae.Details["limit"])
	assert.Equal(t, 5, f.load(t, "luke"))

	// Running tasks count too; a finished one gives its slot back.
	_, err = f.svc.Start(ctx, team, held[0].ID, "agent:luke")
	require.NoError(t, err)
	_, err = f.svc.Create(ctx, team, user, tasks.CreateInput{Assignee: "luke", Title: "still too many", Execute: ptr(true)}, false)
	requireAppErr(t, err, apperr.ELIMIT, tasks.ReasonConcurrency)
	// A delegated task takes a slot as an executed one does.
	_, err = f.delegate(f.running(t, "kyra"), "luke")
	requireAppErr(t, err, apperr.ELIMIT, tasks.ReasonConcurrency)
	_, err = f.svc.Complete(ctx, team, held[0].ID, "agent:luke", "done", nil)
	require.NoError(t, err)
	assert.Equal(t, 4, f.load(t, "luke"))
	f.executed(t, tasks.CreateInput{Assignee: "luke", Title: "now it fits"})
	assert.Equal(t, 5, f.load(t, "luke"))

	// The limit is per agent.
	f.executed(t, tasks.CreateInput{Assignee: "dana", Title: "another agent"})
}

func TestABlockedTaskGivesItsSlotBackUntilItResumes(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	blocked := f.blockable(t, "luke", tasks.CreateInput{})
	_, err := f.svc.Start(ctx, team, blocked.ID, "agent:luke")
	require.NoError(t, err)
	_, err = f.svc.Block(ctx, team, blocked.ID, "agent:luke", "waiting for access")
	require.NoError(t, err)
	assert.Equal(t, 0, f.load(t, "luke"))
	for range tasks.MaxActivePerAgent {
		f.executed(t, tasks.CreateInput{Assignee: "luke", Title: "task"})
	}

	_, err = f.svc.Start(ctx, team, blocked.ID, "agent:luke")
	requireAppErr(t, err, apperr.ELIMIT, tasks.ReasonConcurrency)
	assert.Equal(t, tasks.Blocked, f.get(t, blocked.ID).Status)
	assert.Equal(t, 5, f.load(t, "luke"))
}

func TestConcurrentCreatesNeverBreakTheSlotLimit(t *testing.T) {
	f := newFixture(t)
	const n = 20
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, errs[i] = f.svc.Create(context.Background(), team, user, tasks.CreateInput{Assignee: "luke", Title: "race", Execute: ptr(true)}, false)
		}()
	}
	close(start)
	wg.Wait()

	ok, limited := 0, 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case apperr.Code(err) == apperr.ELIMIT:
			ae, _ := apperr.As(err)
			assert.Equal(t, tasks.ReasonConcurrency, ae.Reason)
			limited++
		default:
			t.Errorf("unexpected error %v", err)
		}
	}
	assert.Equal(t, tasks.MaxActivePerAgent, ok)
	assert.Equal(t, n-tasks.MaxActivePerAgent, limited)
	assert.Equal(t, tasks.MaxActivePerAgent, f.load(t, "luke"))
	list, _, err := f.svc.List(context.Background(), team, tasks.Filter{Assignee: "luke"}, paging.Page{Limit: 50})
	require.NoError(t, err)
	assert.Len(t, list, tasks.MaxActivePerAgent, "no task was stored without its slot")
}

func TestTheCollaborationBudgetStopsFurtherDelegation(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	spend := func(tk tasks.Task, usd float64) {
		t.Helper()
		require.NoError(t, f.svc.RecordAttempt(ctx, team, tk.ID, tk.Assignee, tasks.Usage{Tokens: 100, CostUSD: usd}, nil))
	}
	root := f.running(t, "kyra")
	spend(root, 0.30)
	child := f.mustDelegate(t, root, "luke") // 0.30 of 0.50 spent: allowed
	spend(child, 0.25)                       // charged to the root: 0.55

	got := f.get(t, root.ID)
	assert.InDelta(t, 0.55, got.TreeCostUSD, 1e-9)
	assert.InDelta(t, 0.30, got.CostUSD, 1e-9)

	_, err := f.delegate(root, "dana") // the parent is the root
	ae := requireAppErr(t, err, apperr.EREJECTED, tasks.ReasonBudget)
	assert.Equal(t, tasks.DefaultCostCapUSD, ae.Details["cost_cap_usd"])
	_, err = f.delegate(child, "dana") // the root is checked through the tree
	requireAppErr(t, err, apperr.EREJECTED, tasks.ReasonBudget)
	assert.Equal(t, 0, f.load(t, "dana"))

	// Another collaboration has its own budget.
	other := f.running(t, "wren")
	_, err = f.delegate(other, "dana")
	require.NoError(t, err)
}

// The lifecycle: which verbs each state accepts and where they lead.
func TestLifecycleTransitions(t *testing.T) {
	ctx := context.Background()
	type verb func(f *fixture, id string) (tasks.Task, error)
	verbs := map[string]verb{
		"start":    func(f *fixture, id string) (tasks.Task, error) { return f.svc.Start(ctx, team, id, "u") },
		"complete": func(f *fixture, id string) (tasks.Task, error) { return f.svc.Complete(ctx, team, id, "u", "out", nil) },
		"fail":     func(f *fixture, id string) (tasks.Task, error) { return f.svc.Fail(ctx, team, id, "u", "broken") },
		"block":    func(f *fixture, id string) (tasks.Task, error) { return f.svc.Block(ctx, team, id, "u", "waiting") },
		"cancel":   func(f *fixture, id string) (tasks.Task, error) { return f.svc.Cancel(ctx, team, id, "u", "not needed") },
		"reassign": func(f *fixture, id string) (tasks.Task, error) { return f.svc.Reassign(ctx, team, id, "u", "dana") },
	}
	// paths bring a fresh task of luke's to each state.
	paths := map[tasks.Status][]string{
		tasks.Queued:    nil,
		tasks.Running:   {"start"},
		tasks.Blocked:   {"start", "block"},
		tasks.Completed: {"start", "complete"},
		tasks.Failed:    {"start", "fail"},
		tasks.Canceled:  {"cancel"},
		tasks.TimedOut:  {"start", "sweep"},
	}
	legal := map[tasks.Status]map[string]tasks.Status{
		tasks.Queued:  {"start": tasks.Running, "cancel": tasks.Canceled, "reassign": tasks.Queued},
		tasks.Running: {"complete": tasks.Completed, "fail": tasks.Failed, "block": tasks.Blocked, "cancel": tasks.Canceled, "reassign": tasks.Queued},
		tasks.Blocked: {"start": tasks.Running, "cancel": tasks.Canceled, "reassign": tasks.Queued},
	}
	for from, path := range paths {
		for name, do := range verbs {
			t.Run(string(from)+"/"+name, func(t *testing.T) {
				f := newFixture(t)
				tk := f.blockable(t, "luke", tasks.CreateInput{Title: "x", Budgets: &tasks.BudgetsInput{TimeoutSeconds: ptr(30)}})
				for _, step := range path {
					if step == "sweep" {
						f.clock.Advance(30*time.Second + tasks.SweepGrace + time.Second)
						n, err := f.svc.Sweep(ctx)
						require.NoError(t, err)
						require.Equal(t, 1, n)
						continue
					}
					_, err := verbs[step](f, tk.ID)
					require.NoError(t, err, step)
				}
				before := f.get(t, tk.ID)
				require.Equal(t, from, before.Status)

				after, err := do(f, tk.ID)
				if to, ok := legal[from][name]; ok {
					require.NoError(t, err)
					assert.Equal(t, to, after.Status)
					assert.Equal(t, before.Version+1, after.Version)
					assert.Equal(t, to, f.get(t, tk.ID).Status)
					return
				}
				ae := requireAppErr(t, err, apperr.ECONFLICT, tasks.ReasonState)
				assert.Equal(t, string(from), ae.Details["status"])
				unchanged := f.get(t, tk.ID)
				assert.Equal(t, before.Version, unchanged.Version, "a refused transition writes nothing")
				assert.Equal(t, before.Events, unchanged.Events)
			})
		}
	}
}

func ptr[T any](v T) *T { return &v }

func TestTheTimelineSlotsAndEventsFollowTheLifecycle(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	tk := f.blockable(t, "luke", tasks.CreateInput{Title: "Review", Budgets: &tasks.BudgetsInput{TimeoutSeconds: ptr(60)}})
	loads := []int{f.load(t, "luke")}

	f.clock.Advance(time.Second)
	started, err := f.svc.Start(ctx, team, tk.ID, "agent:luke")
	require.NoError(t, err)
	require.NotNil(t, started.StartedAt)
	assert.Equal(t, f.clock.Now(), *started.StartedAt)
	require.NotNil(t, started.Deadline)
	assert.Equal(t, f.clock.Now().Add(60*time.Second), *started.Deadline)
	loads = append(loads, f.load(t, "luke"))

	blocked, err := f.svc.Block(ctx, team, tk.ID, "agent:luke", "waiting for access")
	require.NoError(t, err)
	assert.Nil(t, blocked.Deadline, "only a running task has a deadline")
	loads = append(loads, f.load(t, "luke"))

	_, err = f.svc.Start(ctx, team, tk.ID, "agent:luke")
	require.NoError(t, err)
	loads = append(loads, f.load(t, "luke"))

	done, err := f.svc.Complete(ctx, team, tk.ID, "agent:luke", "Looks good", []string{"s3://review.md"})
	require.NoError(t, err)
	loads = append(loads, f.load(t, "luke"))

	assert.Equal(t, []int{1, 1, 0, 1, 0}, loads)
	assert.Equal(t, tasks.Completed, done.Status)
	assert.Equal(t, "Looks good", done.Result)
	assert.Equal(t, []string{"s3://review.md"}, done.ResultArtifacts)
	require.NotNil(t, done.CompletedAt)
	assert.Nil(t, done.Deadline)
	assert.Equal(t, *started.StartedAt, *done.StartedAt, "resuming keeps the first start")

	got := f.get(t, tk.ID)
	assert.Equal(t, []string{tasks.EvCreated, tasks.EvStarted, tasks.EvBlocked, tasks.EvResumed, tasks.EvCompleted}, eventTypes(got.Events))
	for i, e := range got.Events {
		assert.Equal(t, i+1, e.Seq)
	}
	assert.Equal(t, "agent:luke", got.Events[1].Actor)
	assert.Equal(t, "waiting for access", got.Events[2].Payload["reason"])

	var statuses, previous []tasks.Status
	for _, e := range f.statusEvents(tk.ID) {
		statuses, previous = append(statuses, e.Status), append(previous, e.PreviousStatus)
	}
	assert.Equal(t, []tasks.Status{tasks.Queued, tasks.Running, tasks.Blocked, tasks.Running, tasks.Completed}, statuses)
	assert.Equal(t, []tasks.Status{"", tasks.Queued, tasks.Running, tasks.Blocked, tasks.Running}, previous)
}

func TestCancelEndsAnUnfinishedTaskAndFreesItsSlot(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		prepare   []string
		loadAfter int
	}{
		{"queued", nil, 0},
		{"running", []string{"start"}, 0},
		{"blocked", []string{"start", "block"}, 0}, // had no slot: none is released twice
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			tk := f.blockable(t, "luke", tasks.CreateInput{Title: "x"})
			for _, step := range tc.prepare {
				var err error
				switch step {
				case "start":
					_, err = f.svc.Start(ctx, team, tk.ID, "u")
				case "block":
					_, err = f.svc.Block(ctx, team, tk.ID, "u", "wait")
				}
				require.NoError(t, err)
			}
			got, err := f.svc.Cancel(ctx, team, tk.ID, "user:key_test", "no longer needed")
			require.NoError(t, err)
			assert.Equal(t, tasks.Canceled, got.Status)
			assert.Equal(t, "no longer needed", got.Error)
			assert.Equal(t, tc.loadAfter, f.load(t, "luke"))
			evs := f.get(t, tk.ID).Events
			last := evs[len(evs)-1]
			assert.Equal(t, tasks.EvCanceled, last.Type)
			assert.Equal(t, tc.name, last.Payload["previous_status"])
			pub := f.statusEvents(tk.ID)
			assert.Equal(t, tasks.Canceled, pub[len(pub)-1].Status)
			assert.Equal(t, tasks.Status(tc.name), pub[len(pub)-1].PreviousStatus)

			_, err = f.svc.Cancel(ctx, team, tk.ID, "user:key_test", "again")
			requireAppErr(t, err, apperr.ECONFLICT, tasks.ReasonState)
		})
	}
	f := newFixture(t)
	_, err := f.svc.Cancel(ctx, team, "task_missing", "u", "x")
	requireAppErr(t, err, apperr.ENOTFOUND, "")
}

func TestReassignMovesTheTaskAndItsSlot(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	tk := f.running(t, "luke")
	got, err := f.svc.Reassign(ctx, team, tk.ID, "user:key_test", "dana")
	require.NoError(t, err)
	assert.Equal(t, "dana", got.Assignee)
	assert.Equal(t, tasks.Queued, got.Status, "a running task goes back to queued")
	assert.Equal(t, []string{"dana"}, got.Chain)
	assert.Zero(t, f.queueLen(t, "dana"), "an executed task runs again; it is in no queue")
	assert.Equal(t, 0, f.load(t, "luke"))
	assert.Equal(t, 1, f.load(t, "dana"))

	evs := f.get(t, tk.ID).Events
	last := evs[len(evs)-1]
	assert.Equal(t, tasks.EvAssigned, last.Type)
	assert.Equal(t, map[string]any{"from": "luke", "to": "dana", "previous_status": "running"}, last.Payload)
	pub := f.statusEvents(tk.ID)
	assert.Equal(t, tasks.TaskStatusChanged{TeamID: team, TaskID: tk.ID, Assignee: "dana", Status: tasks.Queued, PreviousStatus: tasks.Running, RootID: tk.ID},
		pub[len(pub)-1])
}

func TestReassignRejections(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		to       string
		prepare  func(tb testing.TB, f *fixture) tasks.Task // returns the task to reassign
		code     string
		reason   string
		newSlots int // the target's load afterwards
	}{
		{"same assignee", "luke", func(tb testing.TB, f *fixture) tasks.Task { return f.running(tb, "luke") }, apperr.EINVALID, "", 1},
		{"not a slug", "Not A Slug", func(tb testing.TB, f *fixture) tasks.Task { return f.running(tb, "luke") }, apperr.EINVALID, "", 0},
		{"unknown agent", "nobody", func(tb testing.TB, f *fixture) tasks.Task { return f.running(tb, "luke") }, apperr.ENOTFOUND, "", 0},
		{"paused agent", "dana", func(tb testing.TB, f *fixture) tasks.Task {
			f.setStatus(tb, "dana", agents.StatusPaused)
			return f.running(tb, "luke")
		}, apperr.ECONFLICT, tasks.ReasonUnavailable, 0},
		{"agent at its limit", "dana", func(tb testing.TB, f *fixture) tasks.Task {
			for range tasks.MaxActivePerAgent {
				f.executed(tb, tasks.CreateInput{Assignee: "dana", Title: "busy"})
			}
			return f.running(tb, "luke")
		}, apperr.ELIMIT, tasks.ReasonConcurrency, 5},
		{"the delegating agent", "luke", func(tb testing.TB, f *fixture) tasks.Task {
			d1 := f.mustDelegate(tb, f.running(tb, "kyra"), "luke")
			return f.mustDelegate(tb, d1, "dana")
		}, apperr.EINVALID, tasks.ReasonSelf, 1},
		{"an agent up the chain", "kyra", func(tb testing.TB, f *fixture) tasks.Task {
			d1 := f.mustDelegate(tb, f.running(tb, "kyra"), "luke")
			return f.mustDelegate(tb, d1, "dana")
		}, apperr.EREJECTED, tasks.ReasonCycle, 1},
		{"a finished task", "dana", func(tb testing.TB, f *fixture) tasks.Task {
			tk := f.running(tb, "luke")
			_, err := f.svc.Complete(ctx, team, tk.ID, "u", "done", nil)
			require.NoError(tb, err)
			return tk
		}, apperr.ECONFLICT, tasks.ReasonState, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			tk := tc.prepare(t, f)
			before := f.get(t, tk.ID)
			_, err := f.svc.Reassign(ctx, team, tk.ID, "user:key_test", tc.to)
			requireAppErr(t, err, tc.code, tc.reason)
			after := f.get(t, tk.ID)
			assert.Equal(t, before.Version, after.Version, "the task is unchanged")
			assert.Equal(t, before.Assignee, after.Assignee)
			if agents.ValidSlug(tc.to) && tc.to != "nobody" {
				assert.Equal(t, tc.newSlots, f.load(t, tc.to))
			}
		})
	}
}

func TestSweepTimesOutTasksPastTheirDeadlineAndGrace(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	short := f.executed(t, tasks.CreateInput{Assignee: "luke", Title: "short", Budgets: &tasks.BudgetsInput{TimeoutSeconds: ptr(60)}})
	long := f.executed(t, tasks.CreateInput{Assignee: "dana", Title: "long", Budgets: &tasks.BudgetsInput{TimeoutSeconds: ptr(120)}})
	queued := f.executed(t, tasks.CreateInput{Assignee: "wren", Title: "never started", Budgets: &tasks.BudgetsInput{TimeoutSeconds: ptr(1)}})
	board := f.create(t, tasks.CreateInput{Assignee: "wren", Title: "a work item", Budgets: &tasks.BudgetsInput{TimeoutSeconds: ptr(1)}})
	_, err := f.svc.Start(ctx, team, board.ID, "u")
	require.NoError(t, err)
	for _, tk := range []tasks.Task{short, long} {
		_, err := f.svc.Start(ctx, team, tk.ID, "u")
		require.NoError(t, err)
	}

	f.clock.Advance(60*time.Second + tasks.SweepGrace) // exactly at the grace: not yet
	n, err := f.svc.Sweep(ctx)
	require.NoError(t, err)
	assert.Equal(t, 0, n)
	assert.Equal(t, tasks.Running, f.get(t, short.ID).Status)

	f.clock.Advance(time.Second)
	n, err = f.svc.Sweep(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	got := f.get(t, short.ID)
	assert.Equal(t, tasks.TimedOut, got.Status)
	assert.Contains(t, got.Error, "TaskTimedOut")
	last := got.Events[len(got.Events)-1]
	assert.Equal(t, tasks.EvTimedOut, last.Type)
	assert.Equal(t, true, last.Payload["swept"])
	assert.Equal(t, "sweeper", last.Actor)
	assert.Equal(t, 0, f.load(t, "luke"))
	pub := f.statusEvents(short.ID)
	assert.Equal(t, tasks.TimedOut, pub[len(pub)-1].Status)
	assert.Equal(t, tasks.Running, f.get(t, long.ID).Status)
	assert.Equal(t, tasks.Queued, f.get(t, queued.ID).Status, "only running tasks have a deadline")

	n, err = f.svc.Sweep(ctx)
	require.NoError(t, err)
	assert.Equal(t, 0, n, "a swept task is not swept again")

	f.clock.Advance(time.Minute)
	n, err = f.svc.Sweep(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.Equal(t, tasks.TimedOut, f.get(t, long.ID).Status)
	assert.Equal(t, 0, f.load(t, "dana"))

	f.clock.Advance(24 * time.Hour)
	n, err = f.svc.Sweep(ctx)
	require.NoError(t, err)
	assert.Zero(t, n)
	got = f.get(t, board.ID)
	assert.Equal(t, tasks.Running, got.Status, "a work item is never swept: it has no deadline")
	assert.Nil(t, got.Deadline)
}

// A work item (a board task: no parent, not executed) holds no slot: ten
// of them for an agent already at its five executed tasks are all
// accepted, and working one through its lifecycle moves no slot. Started,
// it has no deadline, however long it runs or stays blocked.
func TestWorkItemsHoldNoSlotAndHaveNoDeadline(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for range tasks.MaxActivePerAgent {
		f.executed(t, tasks.CreateInput{Assignee: "luke", Title: "agent work"})
	}
	var items []tasks.Task
	for i := range 10 {
		tk := f.create(t, tasks.CreateInput{Assignee: "luke", Title: "board work"})
		assert.True(t, tk.WorkItem())
		items = append(items, tk)
		assert.Equal(t, i+1, f.queueLen(t, "luke"))
	}
	assert.Equal(t, tasks.MaxActivePerAgent, f.load(t, "luke"), "work items are left out of the agent's active load")

	started, err := f.svc.Start(ctx, team, items[0].ID, "agent:luke")
	require.NoError(t, err)
	assert.Nil(t, started.Deadline, "a work item's due_at says when it is late, not a 120 s deadline")
	assert.Equal(t, 9, f.queueLen(t, "luke"), "started: it left the queue")
	assert.Equal(t, tasks.MaxActivePerAgent, f.load(t, "luke"))
	_, err = f.svc.Block(ctx, team, items[0].ID, "agent:luke", "waiting for a person")
	require.NoError(t, err)
	_, err = f.svc.Start(ctx, team, items[0].ID, "agent:luke")
	require.NoError(t, err, "resuming needs no slot, even for an agent at its limit")
	f.setStatus(t, "dana", agents.StatusPaused)
	_, err = f.svc.Reassign(ctx, team, items[1].ID, "user:key_test", "dana")
	requireAppErr(t, err, apperr.ECONFLICT, tasks.ReasonUnavailable)
	assert.Equal(t, "luke", f.get(t, items[1].ID).Assignee, "a paused agent takes no work item")
	_, err = f.svc.Reassign(ctx, team, items[1].ID, "user:key_test", "wren")
	require.NoError(t, err)
	assert.Equal(t, 8, f.queueLen(t, "luke"))
	assert.Equal(t, 1, f.queueLen(t, "wren"))
	assert.Zero(t, f.load(t, "wren"))

	f.clock.Advance(time.Hour)
	n, err := f.svc.Sweep(ctx)
	require.NoError(t, err)
	assert.Zero(t, n)
	_, err = f.svc.Complete(ctx, team, items[0].ID, "agent:luke", "done an hour later", nil)
	require.NoError(t, err)
	assert.Equal(t, tasks.MaxActivePerAgent, f.load(t, "luke"), "ending a work item releases nothing")
	_, err = f.svc.Cancel(ctx, team, items[2].ID, "user:key_test", "not needed")
	require.NoError(t, err)
	assert.Equal(t, 7, f.queueLen(t, "luke"))
}

// An agent's queue of work items is bounded: MaxQueuedPerAgent are
// accepted, one more is refused with QueueFull (429) and stores nothing,
// and starting one makes room for exactly one.
func TestTheQueueOfWorkItemsIsBoundedPerAgent(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	var first tasks.Task
	for i := range tasks.MaxQueuedPerAgent {
		tk := f.create(t, tasks.CreateInput{Assignee: "wren", Title: "backlog"})
		if i == 0 {
			first = tk
		}
	}
	assert.Equal(t, tasks.MaxQueuedPerAgent, f.queueLen(t, "wren"))
	_, err := f.svc.Create(ctx, team, user, tasks.CreateInput{Assignee: "wren", Title: "one too many"}, false)
	ae := requireAppErr(t, err, apperr.ELIMIT, tasks.ReasonQueueFull)
	assert.Equal(t, tasks.MaxQueuedPerAgent, ae.Details["limit"])
	assert.Equal(t, tasks.MaxQueuedPerAgent, f.queueLen(t, "wren"))
	// The five-task limit is apart: an executed task still fits.
	f.executed(t, tasks.CreateInput{Assignee: "wren", Title: "agent work"})

	_, err = f.svc.Start(ctx, team, first.ID, "agent:wren")
	require.NoError(t, err)
	f.create(t, tasks.CreateInput{Assignee: "wren", Title: "fits again"})
	_, err = f.svc.Create(ctx, team, user, tasks.CreateInput{Assignee: "wren", Title: "full again"}, false)
	requireAppErr(t, err, apperr.ELIMIT, tasks.ReasonQueueFull)
	// Moving a work item into a full queue is refused the same way.
	other := f.create(t, tasks.CreateInput{Assignee: "luke", Title: "luke's"})
	_, err = f.svc.Reassign(ctx, team, other.ID, "user:key_test", "wren")
	requireAppErr(t, err, apperr.ELIMIT, tasks.ReasonQueueFull)
	assert.Equal(t, "luke", f.get(t, other.ID).Assignee)
}

func TestListFiltersTasks(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	root := f.running(t, "kyra")
	child := f.mustDelegate(t, root, "luke")
	other := f.create(t, tasks.CreateInput{Assignee: "luke", Title: "board"})
	f.create(t, tasks.CreateInput{Assignee: "dana", Title: "unrelated"})

	page := paging.Page{Limit: 10}
	list := func(fl tasks.Filter) []string {
		t.Helper()
		got, _, err := f.svc.List(ctx, team, fl, page)
		require.NoError(t, err)
		out := []string{}
		for _, tk := range got {
			out = append(out, tk.ID)
		}
		return out
	}
	assert.Equal(t, []string{other.ID, child.ID}, list(tasks.Filter{Assignee: "luke"}), "newest first")
	assert.Equal(t, []string{child.ID}, list(tasks.Filter{Parent: root.ID}))
	assert.Equal(t, []string{child.ID, root.ID}, list(tasks.Filter{Agent: "kyra"}), "as creator or assignee")
	assert.Equal(t, []string{other.ID}, list(tasks.Filter{Assignee: "luke", Status: tasks.Queued}))
	assert.Len(t, list(tasks.Filter{}), 4)

	_, _, err := f.svc.List(ctx, team, tasks.Filter{Status: "done"}, page)
	assert.Equal(t, apperr.EINVALID, apperr.Code(err))
	_, _, err = f.svc.List(ctx, team, tasks.Filter{Assignee: "Not A Slug"}, page)
	assert.Equal(t, apperr.EINVALID, apperr.Code(err))
	none, _, err := f.svc.List(ctx, demo.OtherTeamID, tasks.Filter{}, page)
	require.NoError(t, err)
	assert.Empty(t, none, "another team sees none of them")
}

// A work item stored running with a deadline (before work items lost
// theirs) is not timed out by the sweeper: the sweep drops its deadline
// and leaves it running, with nothing on its timeline.
func TestTheSweeperLeavesAWorkItemStoredWithADeadlineRunning(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	tk := f.create(t, tasks.CreateInput{Assignee: "luke", Title: "stored long ago"})
	started, err := f.svc.Start(ctx, team, tk.ID, "agent:luke")
	require.NoError(t, err)
	old := started
	d := f.clock.Now().Add(time.Minute)
	old.Deadline, old.Version = &d, started.Version+1
	require.NoError(t, f.store.ApplyTask(ctx, tasks.Change{Before: started, After: old, From: []tasks.Status{tasks.Running}}))

	f.clock.Advance(time.Hour)
	n, err := f.svc.Sweep(ctx)
	require.NoError(t, err)
	assert.Zero(t, n)
	got := f.get(t, tk.ID)
	assert.Equal(t, tasks.Running, got.Status)
	assert.Nil(t, got.Deadline)
	assert.Equal(t, []string{tasks.EvCreated, tasks.EvStarted}, eventTypes(got.Events))
	refs, err := f.store.DueTasks(ctx, f.clock.Now().Add(time.Hour), 100)
	require.NoError(t, err)
	assert.Empty(t, refs, "out of the sweeper's index")
}

// alwaysStale is a store whose every change finds the task changed under
// it (another writer won each time).
type alwaysStale struct {
	tasks.Store
	reads, writes int
}

func (s *alwaysStale) GetTask(ctx context.Context, teamID, id string) (tasks.Task, error) {
	s.reads++
	return s.Store.GetTask(ctx, teamID, id)
}

func (s *alwaysStale) ApplyTask(context.Context, tasks.Change) error {
	s.writes++
	return &tasks.ConditionFailed{Item: tasks.ItemTask}
}

// A change that keeps losing to other writers reads and tries again at
// most maxStaleRetries (10) times, then answers 409 Contention.
func TestAChangeGivesUpAfterTenStaleReads(t *testing.T) {
	f := newFixture(t)
	task := f.create(t, tasks.CreateInput{Assignee: "luke", Title: "contended"})
	stale := &alwaysStale{Store: f.store}
	f.svc.Store = stale
	_, err := f.svc.Start(context.Background(), team, task.ID, "agent:luke")
	assert.Equal(t, apperr.ECONFLICT, apperr.Code(err))
	assert.Equal(t, "Contention", appErr(t, err).Reason)
	assert.Equal(t, 10, stale.writes, "ten tries")
	assert.Equal(t, 10, stale.reads, "each after a fresh read")
}

// A task keeps the input artifacts it was given (only absent ones become
// the empty list).
func TestATaskKeepsItsInputArtifacts(t *testing.T) {
	f := newFixture(t)
	got := f.create(t, tasks.CreateInput{Assignee: "luke", Title: "read these", InputArtifacts: []string{"art_1", "art_2"}})
	assert.Equal(t, []string{"art_1", "art_2"}, got.InputArtifacts)
	stored, err := f.svc.Get(context.Background(), team, got.ID)
	require.NoError(t, err)
	assert.Equal(t, []string{"art_1", "art_2"}, stored.InputArtifacts)
	none := f.create(t, tasks.CreateInput{Assignee: "luke", Title: "nothing to read"})
	assert.Equal(t, []string{}, none.InputArtifacts)
}

// A failure's event says how large its output was, and only when there is
// one.
func TestAFailuresEventSizesItsOutput(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for _, c := range []struct {
		output []byte
		size   any
	}{{[]byte(`{"partial":true}`), 16}, {nil, nil}} {
		tk := f.create(t, tasks.CreateInput{Assignee: "luke", Title: "try"})
		_, err := f.svc.Start(ctx, team, tk.ID, "agent:luke")
		require.NoError(t, err)
		_, err = f.svc.FailWith(ctx, team, tk.ID, "agent:luke", "could not", c.output)
		require.NoError(t, err)
		got, err := f.svc.Get(ctx, team, tk.ID)
		require.NoError(t, err)
		last := got.Events[len(got.Events)-1]
		require.Equal(t, tasks.EvFailed, last.Type)
		size, ok := last.Payload["output_bytes"]
		if c.size == nil {
			assert.False(t, ok, "no output, no size")
			continue
		}
		assert.EqualValues(t, c.size, size)
	}
}

// Reassigning to an agent the team does not have names the agent; a task
// the team does not have names the task.
func TestReassignNamesWhatIsMissing(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	tk := f.create(t, tasks.CreateInput{Assignee: "luke", Title: "move me"})
	_, err := f.svc.Reassign(ctx, team, tk.ID, "user:ana", "nobody")
	require.Equal(t, apperr.ENOTFOUND, apperr.Code(err))
	assert.Contains(t, appErr(t, err).Message, `agent "nobody"`)
	_, err = f.svc.Reassign(ctx, team, "task_missing", "user:ana", "sage")
	require.Equal(t, apperr.ENOTFOUND, apperr.Code(err))
	assert.Contains(t, appErr(t, err).Message, `"task_missing"`)
	assert.NotContains(t, appErr(t, err).Message, "agent")
}
