package agenttools_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/agenttools"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/wire/localmodelwiring"
	"github.com/conclave-ai/conclave/shared/work/tasks"
	"github.com/conclave-ai/conclave/shared/work/worker"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// scripted reads the team from the store, with the script given to one
// agent (the local model reads each agent's script through it).
type scripted struct {
	*fixture
	slug, script string
}

func (s scripted) GetAgent(ctx context.Context, teamID, slug string) (agents.Agent, error) {
	a, err := s.store.GetAgent(ctx, teamID, slug)
	if err == nil && slug == s.slug {
		a.Model = &agents.Model{Provider: "local", Script: s.script}
	}
	return a, err
}

// fanWorker is the worker as the task-worker function builds it, on the
// real task service and tools over the in-memory store, with the agent
// slug answering by script.
func (f *fixture) fanWorker(slug, script string) *worker.Worker {
	dir := scripted{fixture: f, slug: slug, script: script}
	return &worker.Worker{Agents: dir, Model: localmodelwiring.New(dir), Tools: f.tools, Tracker: agenttools.Tracker{Tasks: f.tasks}}
}

// children are the tasks delegated from parent, oldest first.
func (f *fixture) children(tb testing.TB, parent string) []tasks.Task {
	tb.Helper()
	list, _, err := f.tasks.List(context.Background(), team, tasks.Filter{Parent: parent}, paging.Page{Limit: 20})
	require.NoError(tb, err)
	for i, j := 0, len(list)-1; i < j; i, j = i+1, j-1 {
		list[i], list[j] = list[j], list[i]
	}
	return list
}

// A task whose model asks two colleagues at once creates both children,
// each in its own create transaction; the machine waits for each with a
// token of its own (the delegation machine's Map), and only when the last
// has ended is the parent's worker resumed, once, with each call answered
// by its own child's result.
func TestFanOutCreatesBothChildrenAndResumesOnceAfterTheLast(t *testing.T) {
	f := newFixture(t)
	cb := &callbacks{}
	f.tasks.Callbacks = cb
	ctx := context.Background()
	w := f.fanWorker("kyra", "delegate2:luke,dana")
	p := f.working(t, "kyra")
	p.Instructions = "Review the payment handler and its schema"

	first, err := w.Run(ctx, p)
	require.NoError(t, err)
	require.NotNil(t, first.Waiting)
	kids := f.children(t, p.TaskID)
	require.Len(t, kids, 2, "both children created")
	assert.Equal(t, []string{kids[0].ID, kids[1].ID}, first.Waiting.ChildTaskIDs)
	assert.Equal(t, []string{"luke", "dana"}, []string{kids[0].Assignee, kids[1].Assignee})
	for _, k := range kids {
		assert.Equal(t, tasks.Queued, k.Status)
		assert.Equal(t, 1, k.Depth)
		assert.Equal(t, tasks.Creator{Type: "agent", ID: "kyra"}, k.CreatedBy)
	}

	// The Map's iterations: one token per child.
	tokens := map[string]string{kids[0].ID: "token-luke", kids[1].ID: "token-dana"}
	for id, tok := range tokens {
		require.NoError(t, f.tasks.Await(ctx, team, p.TaskID, "", id, tok))
	}
	end := func(id, by, result string) {
		_, err := f.tasks.Start(ctx, team, id, "agent:"+by)
		require.NoError(t, err)
		_, err = f.tasks.Complete(ctx, team, id, "agent:"+by, result, nil)
		require.NoError(t, err)
	}
	// dana ends first: her token is sent, luke's is not, so the Map (and
	// the parent) keeps waiting.
	end(kids[1].ID, "dana", "the schema is fine")
	_, danaSent := cb.get("token-dana")
	_, lukeSent := cb.get("token-luke")
	require.True(t, danaSent)
	require.False(t, lukeSent, "the parent is not resumed before its last child ends")
	end(kids[0].ID, "luke", "two issues found")

	// The Map's output, in ChildTaskIDs' order, resumes the worker once.
	var outs []workflow.ChildOutcome
	for _, id := range first.Waiting.ChildTaskIDs {
		o, ok := cb.get(tokens[id])
		require.True(t, ok, "every child's end sent its token")
		outs = append(outs, o)
	}
	p.Resume = &workflow.Resume{State: first.Waiting.State, Children: outs}
	second, err := w.Run(ctx, p)
	require.NoError(t, err)
	require.Nil(t, second.Waiting)
	assert.Contains(t, second.Output, "task "+kids[0].ID+" by luke completed: two issues found")
	assert.Contains(t, second.Output, "task "+kids[1].ID+" by dana completed: the schema is fine")
	assert.Equal(t, 2, second.ToolCalls)
	assert.Len(t, f.children(t, p.TaskID), 2, "the resumed attempt delegates nothing again")

	parent, err := f.tasks.Get(ctx, team, p.TaskID)
	require.NoError(t, err)
	var results []string
	for _, ev := range parent.Events {
		if ev.Type == tasks.EvToolResult {
			results = append(results, ev.Payload["task_id"].(string))
		}
	}
	assert.Equal(t, first.Waiting.ChildTaskIDs, results, "each child's result recorded once, on the resumed attempt")
}

// At the boundary of the assignee's limit: luke holds 4 tasks, so the
// fan-out's first child to him is the fifth (allowed) and the second the
// sixth (refused, ConcurrencyLimit): that call's tool error only, the
// other child is created and waited for.
func TestFanOutAtTheConcurrencyLimitRefusesOnlyTheSixth(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for range tasks.MaxActivePerAgent - 1 {
		f.working(t, "luke")
	}
	w := f.fanWorker("kyra", "delegate2:luke,luke")
	p := f.working(t, "kyra")
	p.Instructions = "Review the payment handler twice"

	first, err := w.Run(ctx, p)
	require.NoError(t, err)
	require.NotNil(t, first.Waiting)
	kids := f.children(t, p.TaskID)
	require.Len(t, kids, 1, "the fifth is created, the sixth refused")
	assert.Equal(t, []string{kids[0].ID}, first.Waiting.ChildTaskIDs)
	load, err := f.tasks.Load(ctx, team, "luke")
	require.NoError(t, err)
	assert.Equal(t, tasks.MaxActivePerAgent, load.Active)

	parent, err := f.tasks.Get(ctx, team, p.TaskID)
	require.NoError(t, err)
	var refusals []string
	for _, ev := range parent.Events {
		if ev.Type == tasks.EvToolResult {
			refusals = append(refusals, ev.Payload["output"].(string))
		}
	}
	require.Len(t, refusals, 1, "the refused call is answered at once")
	assert.Contains(t, refusals[0], "rejected (ConcurrencyLimit)")

	p.Resume = &workflow.Resume{State: first.Waiting.State, Children: []workflow.ChildOutcome{{TaskID: kids[0].ID, Status: "completed", Summary: "task " + kids[0].ID + " by luke completed: ok"}}}
	second, err := w.Run(ctx, p)
	require.NoError(t, err)
	assert.Contains(t, second.Output, "by luke completed: ok")
	assert.Contains(t, second.Output, "ConcurrencyLimit")
}

// Every child refused (the chain holds neither colleague, but the depth
// is at its limit): nothing to wait for; the model reads both refusals at
// once.
func TestFanOutAtMaxDepthRefusesEveryCall(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	p := f.working(t, "kyra")
	// kyra → luke → dana → archie: archie's task is at depth 3.
	for _, to := range []string{"luke", "dana", "archie"} {
		id := f.delegate(t, p, to)
		_, err := f.tasks.Start(ctx, team, id, "agent:"+to)
		require.NoError(t, err)
		p = workflow.TaskInput{TeamID: team, TaskID: id, Assignee: to, Title: "work", Instructions: "go deeper"}
	}
	w := f.fanWorker("archie", "delegate2:sage,wren")
	res, err := w.Run(ctx, p)
	require.NoError(t, err)
	assert.Nil(t, res.Waiting)
	assert.Empty(t, f.children(t, p.TaskID))
	assert.Contains(t, res.Output, "DelegationDepthExceeded")
}
