package tasks

import (
	"cmp"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/team/agents"
)

func TestLifecycleTable(t *testing.T) {
	for act, tr := range Transitions {
		for _, from := range tr.From {
			assert.False(t, from.Terminal(), "%s leaves terminal state %s", act, from)
		}
	}
	// Every status is reachable from queued.
	seen := map[Status]bool{Queued: true}
	for changed := true; changed; {
		changed = false
		for _, tr := range Transitions {
			for _, from := range tr.From {
				if seen[from] && !seen[tr.To] {
					seen[tr.To], changed = true, true
				}
			}
		}
	}
	for _, s := range Statuses {
		assert.True(t, seen[s], "%s is reachable", s)
	}
	assert.True(t, Allowed(ActCancel, Running), "running → canceled stops the work")
	assert.False(t, Allowed(ActComplete, Queued))
	assert.False(t, Allowed(ActAssign, Completed), "terminal tasks cannot be reassigned")
	assert.True(t, Queued.HoldsSlot() && Running.HoldsSlot() && !Blocked.HoldsSlot())
}

// fakeStore is the domain Store interface in memory; the failures it
// returns are the ones the DynamoDB store maps transactions to.
type fakeStore struct {
	tasks  map[string]Task
	agents map[string]agents.Agent
	fail   string // condition item every write fails on
}

func (f *fakeStore) CreateTask(_ context.Context, t Task, _ *Task, _ []Event) error {
	if f.fail != "" {
		return &ConditionFailed{Item: f.fail}
	}
	f.tasks[t.ID] = t
	return nil
}
func (f *fakeStore) ApplyTask(_ context.Context, c Change) error {
	if f.fail != "" {
		return &ConditionFailed{Item: f.fail}
	}
	f.tasks[c.After.ID] = c.After
	return nil
}
func (f *fakeStore) GetTask(_ context.Context, _, id string) (Task, error) {
	t, ok := f.tasks[id]
	if !ok {
		return Task{}, apperr.NotFound("task", id)
	}
	return t, nil
}
func (f *fakeStore) ListTasks(context.Context, string, Filter, paging.Page) ([]Task, string, error) {
	return nil, "", nil
}
func (f *fakeStore) QueuedWork(context.Context, string, string, paging.Page) ([]Task, string, error) {
	return nil, "", nil
}
func (f *fakeStore) ListTaskEvents(context.Context, string, string) ([]Event, error) { return nil, nil }
func (f *fakeStore) AgentLoad(context.Context, string, string) (Load, error)         { return Load{}, nil }
func (f *fakeStore) DueTasks(context.Context, time.Time, int) ([]Ref, error)         { return nil, nil }
func (f *fakeStore) ReleaseResult(_ context.Context, _, id string, _ time.Time) (Task, error) {
	return f.GetTask(context.Background(), "", id)
}
func (f *fakeStore) GetAgent(_ context.Context, _, slug string) (agents.Agent, error) {
	a, ok := f.agents[slug]
	if !ok {
		return agents.Agent{}, apperr.NotFound("agent", slug)
	}
	return a, nil
}

func newFake() (*Service, *fakeStore) {
	st := &fakeStore{tasks: map[string]Task{}, agents: map[string]agents.Agent{
		"luke": {Slug: "luke", Status: agents.StatusActive}, "dana": {Slug: "dana", Status: agents.StatusPaused},
	}}
	return NewService(st, nil, nil, slog.Default()), st
}

var user = Creator{Type: "user", ID: "key_1"}

func TestCreateValidatesAndNamesTheField(t *testing.T) {
	svc, st := newFake()
	big := make([]byte, maxTitle+1)
	for i := range big {
		big[i] = 'x'
	}
	n := func(v int) *int { return &v }
	for field, in := range map[string]CreateInput{
		"assignee":                {Title: "x"},
		"title":                   {Assignee: "luke"},
		"type":                    {Assignee: "luke", Title: "x", Type: "dance"},
		"priority":                {Assignee: "luke", Title: "x", Priority: "p0"},
		"budgets.max_tokens":      {Assignee: "luke", Title: "x", Budgets: &BudgetsInput{MaxTokens: n(4001)}},
		"budgets.max_tool_calls":  {Assignee: "luke", Title: "x", Budgets: &BudgetsInput{MaxToolCalls: n(11)}},
		"budgets.timeout_seconds": {Assignee: "luke", Title: "x", Budgets: &BudgetsInput{TimeoutSeconds: n(121)}},
		"cost_cap_usd":            {Assignee: "luke", Title: "x", CostCapUSD: func() *float64 { v := 0.51; return &v }()},
	} {
		_, err := svc.Create(context.Background(), "t", user, in, false)
		ae, ok := apperr.As(err)
		require.True(t, ok, field)
		assert.Equal(t, apperr.EINVALID, ae.Code, field)
		assert.Equal(t, field, ae.Field)
	}
	_, err := svc.Create(context.Background(), "t", user, CreateInput{Assignee: "luke", Title: string(big)}, false)
	assert.Equal(t, apperr.EINVALID, apperr.Code(err))
	assert.Empty(t, st.tasks, "invalid input writes nothing")
}

// Every budget a task may be given is accepted at both its bounds and
// refused one step outside them: 1 to 4,000 tokens, 0 to 10 tool calls,
// 1 to 120 seconds, a cost cap above $0 and at most $0.50.
func TestCreateBudgetsAtTheirBounds(t *testing.T) {
	n := func(v int) *int { return &v }
	usd := func(v float64) *float64 { return &v }
	for _, c := range []struct {
		name  string
		in    CreateInput
		field string // "" when accepted
	}{
		{"1 token", CreateInput{Budgets: &BudgetsInput{MaxTokens: n(1)}}, ""},
		{"0 tokens", CreateInput{Budgets: &BudgetsInput{MaxTokens: n(0)}}, "budgets.max_tokens"},
		{"4,000 tokens", CreateInput{Budgets: &BudgetsInput{MaxTokens: n(4000)}}, ""},
		{"4,001 tokens", CreateInput{Budgets: &BudgetsInput{MaxTokens: n(4001)}}, "budgets.max_tokens"},
		{"0 tool calls", CreateInput{Budgets: &BudgetsInput{MaxToolCalls: n(0)}}, ""},
		{"-1 tool calls", CreateInput{Budgets: &BudgetsInput{MaxToolCalls: n(-1)}}, "budgets.max_tool_calls"},
		{"10 tool calls", CreateInput{Budgets: &BudgetsInput{MaxToolCalls: n(10)}}, ""},
		{"11 tool calls", CreateInput{Budgets: &BudgetsInput{MaxToolCalls: n(11)}}, "budgets.max_tool_calls"},
		{"1 second", CreateInput{Budgets: &BudgetsInput{TimeoutSeconds: n(1)}}, ""},
		{"0 seconds", CreateInput{Budgets: &BudgetsInput{TimeoutSeconds: n(0)}}, "budgets.timeout_seconds"},
		{"120 seconds", CreateInput{Budgets: &BudgetsInput{TimeoutSeconds: n(120)}}, ""},
		{"121 seconds", CreateInput{Budgets: &BudgetsInput{TimeoutSeconds: n(121)}}, "budgets.timeout_seconds"},
		{"a cent", CreateInput{CostCapUSD: usd(0.01)}, ""},
		{"$0", CreateInput{CostCapUSD: usd(0)}, "cost_cap_usd"},
		{"$0.50", CreateInput{CostCapUSD: usd(0.50)}, ""},
		{"$0.51", CreateInput{CostCapUSD: usd(0.51)}, "cost_cap_usd"},
		{"50 input artifacts", CreateInput{InputArtifacts: make([]string, maxArtifacts)}, ""},
		{"51 input artifacts", CreateInput{InputArtifacts: make([]string, maxArtifacts+1)}, "input_artifacts"},
		{"a title of 500", CreateInput{Title: strings.Repeat("é", maxTitle)}, ""},
		{"a title of 501", CreateInput{Title: strings.Repeat("é", maxTitle+1)}, "title"},
	} {
		svc, _ := newFake()
		c.in.Assignee, c.in.Title = "luke", cmp.Or(c.in.Title, "x")
		tk, err := svc.Create(context.Background(), "t", user, c.in, false)
		if c.field == "" {
			require.NoError(t, err, c.name)
			if b := c.in.Budgets; b != nil && b.MaxTokens != nil {
				assert.Equal(t, *b.MaxTokens, tk.Budgets.MaxTokens, c.name)
			}
			if b := c.in.Budgets; b != nil && b.MaxToolCalls != nil {
				assert.Equal(t, *b.MaxToolCalls, tk.Budgets.MaxToolCalls, c.name)
			}
			if c.in.CostCapUSD != nil {
				assert.Equal(t, *c.in.CostCapUSD, tk.CostCapUSD, c.name)
			}
			continue
		}
		ae, ok := apperr.As(err)
		require.True(t, ok, c.name)
		assert.Equal(t, apperr.EINVALID, ae.Code, c.name)
		assert.Equal(t, c.field, ae.Field, c.name)
	}
}

func TestCreateDefaultsToTheProductLimits(t *testing.T) {
	svc, _ := newFake()
	tk, err := svc.Create(context.Background(), "t", user, CreateInput{Assignee: "luke", Title: "Summarize"}, false)
	require.NoError(t, err)
	assert.Equal(t, 4000, tk.Budgets.MaxTokens)
	assert.Equal(t, 10, tk.Budgets.MaxToolCalls)
	assert.Equal(t, 120, tk.Budgets.TimeoutSeconds)
	assert.Equal(t, 0.50, tk.CostCapUSD)
	assert.Equal(t, Queued, tk.Status)
	assert.Equal(t, tk.ID, tk.RootID)
	assert.Equal(t, 0, tk.Depth, "a user's task is the root at depth 0")
	assert.Equal(t, []string{"luke"}, tk.Chain)
}

func TestRejectionsMapToTheirCodes(t *testing.T) {
	svc, st := newFake()
	ctx := context.Background()
	st.fail = ItemSlot
	_, err := svc.Create(ctx, "t", user, CreateInput{Assignee: "luke", Title: "x"}, false)
	ae, _ := apperr.As(err)
	require.NotNil(t, ae)
	assert.Equal(t, apperr.ELIMIT, ae.Code)
	assert.Equal(t, ReasonConcurrency, ae.Reason)

	st.fail = ItemAssignee
	_, err = svc.Create(ctx, "t", user, CreateInput{Assignee: "dana", Title: "x"}, false)
	ae, _ = apperr.As(err)
	require.NotNil(t, ae)
	assert.Equal(t, ReasonUnavailable, ae.Reason)
	_, err = svc.Create(ctx, "t", user, CreateInput{Assignee: "nobody", Title: "x"}, false)
	assert.Equal(t, apperr.ENOTFOUND, apperr.Code(err))

	st.fail = ItemParent
	st.tasks["deep"] = Task{ID: "deep", RootID: "root", Status: Running, Depth: 3, Chain: []string{"a", "b", "c", "dana"}, Assignee: "dana"}
	_, err = svc.Create(ctx, "t", user, CreateInput{Assignee: "luke", ParentID: "deep", Title: "x"}, false)
	ae, _ = apperr.As(err)
	require.NotNil(t, ae)
	assert.Equal(t, apperr.EREJECTED, ae.Code)
	assert.Equal(t, ReasonDepth, ae.Reason)

	st.fail = ItemRoot
	st.tasks["mid"] = Task{ID: "mid", RootID: "root", Status: Running, Depth: 1, Chain: []string{"a", "dana"}, Assignee: "dana"}
	_, err = svc.Create(ctx, "t", user, CreateInput{Assignee: "luke", ParentID: "mid", Title: "x"}, false)
	ae, _ = apperr.As(err)
	require.NotNil(t, ae)
	assert.Equal(t, ReasonBudget, ae.Reason)
}

func TestInvalidTransitionNamesTheCurrentStatus(t *testing.T) {
	svc, st := newFake()
	st.tasks["done"] = Task{ID: "done", Status: Completed, Assignee: "luke", Chain: []string{"luke"}}
	_, err := svc.Cancel(context.Background(), "t", "done", "user:k", "x")
	ae, _ := apperr.As(err)
	require.NotNil(t, ae)
	assert.Equal(t, apperr.ECONFLICT, ae.Code)
	assert.Equal(t, "completed", ae.Details["status"])
	assert.Equal(t, Completed, st.tasks["done"].Status)
}

func TestCauseMessage(t *testing.T) {
	assert.Equal(t, "model error", causeMessage(`{"errorMessage":"model error","errorType":"ModelFailed"}`))
	assert.Equal(t, "plain cause", causeMessage("plain cause"))
}

func TestExecutionNames(t *testing.T) {
	assert.Equal(t, "task_1", executionName(Task{ID: "task_1", Runs: 1}))
	assert.Equal(t, "task_1-r2", executionName(Task{ID: "task_1", Runs: 2}))
}

func TestTaskAgentsAreTheAssigneeTheChainAndTheCreatingAgent(t *testing.T) {
	tk := Task{Assignee: "luke", Chain: []string{"kyra", "luke"}, CreatedBy: Creator{Type: "agent", ID: "kyra"}}
	assert.Equal(t, []string{"luke", "kyra", "luke", "kyra"}, tk.Agents())
	tk.CreatedBy = Creator{Type: "user", ID: "key_1"}
	assert.Equal(t, []string{"luke", "kyra", "luke"}, tk.Agents(), "a user is not an agent")
}

// A result, and a string output, may be exactly maxInstructions
// characters; a resolution's note exactly MaxNote.
func TestResultsAndNotesAtTheirBounds(t *testing.T) {
	svc, _ := newFake()
	ctx := context.Background()
	fieldOf := func(err error) string {
		if ae, ok := apperr.As(err); ok {
			return ae.Field
		}
		return ""
	}
	// The task does not exist: what matters is which check refuses.
	_, err := svc.CompleteWith(ctx, "t", "tsk_none", "agent:luke", CompleteInput{Result: strings.Repeat("é", maxInstructions)})
	assert.NotEqual(t, "result", fieldOf(err))
	_, err = svc.CompleteWith(ctx, "t", "tsk_none", "agent:luke", CompleteInput{Result: strings.Repeat("é", maxInstructions+1)})
	assert.Equal(t, "result", fieldOf(err))
	quoted := func(n int) json.RawMessage { return json.RawMessage(`"` + strings.Repeat("x", n) + `"`) }
	_, err = svc.CompleteWith(ctx, "t", "tsk_none", "agent:luke", CompleteInput{Output: quoted(maxInstructions)})
	assert.NotEqual(t, "output", fieldOf(err))
	_, err = svc.CompleteWith(ctx, "t", "tsk_none", "agent:luke", CompleteInput{Output: quoted(maxInstructions + 1)})
	assert.Equal(t, "output", fieldOf(err))

	assert.NoError(t, CheckResolution(strings.Repeat("é", MaxNote), ""))
	assert.Equal(t, "answer", fieldOf(CheckResolution(strings.Repeat("é", MaxNote+1), "")))
}
