package tasks_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/idempotency"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/work/tasks"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// Texts the complexity scorer puts in each tier (routing.ComplexityOf).
const (
	simpleAsk  = "Say hello to the team"
	mediumAsk  = "Explain why the payment service latency grew and compare two caching designs for the checkout API"
	complexAsk = "Design the migration plan for the payments database: compare a blue-green cutover versus dual writes, " +
		"analyze the tradeoffs, evaluate the risk of data loss, and propose a rollback strategy. It must finish within 2 hours, " +
		"under a budget of 500 dollars, with at most 5% error rate and 200ms p99 latency. Which approach should we prioritize? Why?"
)

// payloads records the input of every execution the task model starts.
type payloads struct {
	mu  sync.Mutex
	ins []workflow.TaskInput
}

func (p *payloads) Start(_ context.Context, machine, name string, in any) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ins = append(p.ins, in.(workflow.TaskInput))
	return p.ExecutionARN(machine, name), nil
}

func (p *payloads) Stop(context.Context, string, string) error { return nil }

func (p *payloads) ExecutionARN(machine, name string) string {
	return "arn:execution:" + machine + ":" + name
}

func (p *payloads) last() workflow.TaskInput {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ins[len(p.ins)-1]
}

// Each tier a client names is the task's, stored and handed to the
// worker, on a board task, an executed one and a delegation alike.
func TestEachModelTierIsStoredAndHandedToTheWorker(t *testing.T) {
	for _, tier := range []string{routing.Tier0, routing.Tier1, routing.Tier2} {
		t.Run(tier, func(t *testing.T) {
			f := newFixture(t)
			runs := &payloads{}
			f.svc.Workflows = runs
			// A simple ask: the tier given wins over the one its
			// complexity would pick.
			board := f.create(t, tasks.CreateInput{Assignee: "luke", Title: simpleAsk, ModelTier: tier})
			assert.Equal(t, tier, board.ModelTier)
			assert.Equal(t, tier, f.get(t, board.ID).ModelTier, "stored")

			run := f.executed(t, tasks.CreateInput{Assignee: "luke", Title: simpleAsk, ModelTier: tier})
			assert.Equal(t, tier, f.get(t, run.ID).ModelTier)
			assert.Equal(t, tier, runs.last().ModelTier, "the worker's payload carries it")

			parent := f.running(t, "kyra")
			child, err := f.svc.Create(context.Background(), team, user, tasks.CreateInput{Assignee: "dana", ParentID: parent.ID, Title: simpleAsk, ModelTier: tier}, true)
			require.NoError(t, err)
			assert.Equal(t, tier, f.get(t, child.ID).ModelTier, "a delegation takes one too")
			assert.Equal(t, tier, runs.last().ModelTier)
		})
	}
}

// auto, and no tier at all, is the tier the task's complexity picks, by
// the mapping a chat turn's tier comes from; the tier picked is stored,
// never "auto".
func TestAutoAndAbsentPickTheTierByComplexity(t *testing.T) {
	f := newFixture(t)
	for _, c := range []struct {
		in   tasks.CreateInput
		want string
	}{
		{tasks.CreateInput{Title: simpleAsk}, routing.Tier0},
		{tasks.CreateInput{Title: "Caching", Instructions: mediumAsk}, routing.Tier1},
		{tasks.CreateInput{Title: "Migration", Instructions: complexAsk}, routing.Tier2},
		{tasks.CreateInput{Title: "Migration", ExpectedOutput: complexAsk}, routing.Tier2},
		// The context is background, not the ask.
		{tasks.CreateInput{Title: simpleAsk, Context: complexAsk}, routing.Tier0},
	} {
		for _, tier := range []string{"", tasks.ModelTierAuto} {
			in := c.in
			in.Assignee, in.ModelTier = "luke", tier
			got := f.create(t, in)
			assert.Equal(t, c.want, got.ModelTier, "%q as %q", in.Title, tier)
			assert.Equal(t, c.want, f.get(t, got.ID).ModelTier, "stored")
			assert.Equal(t, c.want, tasks.AutoTier(got))
		}
	}
	// The chat's mapping, not a second one.
	assert.Equal(t, routing.TierFor(routing.ComplexityOf(mediumAsk, 1).Score),
		tasks.AutoTier(tasks.Task{Title: mediumAsk, Instructions: mediumAsk}))
}

// A tier outside the allowed set, one past it included, is 400 naming
// model_tier, and nothing is written: no task, no slot, no child.
func TestAnUnknownModelTierIsRefusedAndChangesNothing(t *testing.T) {
	f := newFixture(t)
	parent := f.running(t, "kyra")
	before := f.counters(t, "dana")
	for _, bad := range []string{"tier_3", "tier-1", "TIER_1", "Auto", " tier_1", "tier_", "default", "small"} {
		for _, in := range []tasks.CreateInput{
			{Assignee: "dana", Title: "board", ModelTier: bad},
			{Assignee: "dana", Title: "executed", ModelTier: bad, Execute: ptr(true)},
			{Assignee: "dana", Title: "delegated", ParentID: parent.ID, ModelTier: bad},
		} {
			_, err := f.svc.Create(context.Background(), team, user, in, false)
			require.Error(t, err, "%q (%s)", bad, in.Title)
			ae := appErr(t, err)
			assert.Equal(t, apperr.EINVALID, ae.Code)
			assert.Equal(t, "model_tier", ae.Field, "%q", bad)
		}
	}
	list, _, err := f.svc.List(context.Background(), team, tasks.Filter{Assignee: "dana"}, paging.Page{Limit: 10})
	require.NoError(t, err)
	assert.Empty(t, list)
	assert.Equal(t, before, f.counters(t, "dana"))
	assert.Equal(t, parent.Version, f.get(t, parent.ID).Version, "the parent is untouched")
}

// A create sent again under the Idempotency-Key of one whose answer was
// lost is that task, whatever the repeat says: another tier changes it no
// more than another title does (the HTTP layer refuses a different body
// under a key it has answered: tasksapi's test).
func TestARepeatedCreateUnderItsKeyKeepsTheFirstTier(t *testing.T) {
	f := newFixture(t)
	ctx := idempotency.Scope(idempotency.WithKey(context.Background(), "k-tier"), tasks.RefKind)
	first, err := f.svc.Create(ctx, team, user, tasks.CreateInput{Assignee: "luke", Title: "tiered", ModelTier: routing.Tier1}, false)
	require.NoError(t, err)
	for _, again := range []tasks.CreateInput{
		{Assignee: "luke", Title: "tiered", ModelTier: routing.Tier2},
		{Assignee: "luke", Title: "renamed", ModelTier: routing.Tier1},
	} {
		got, err := f.svc.Create(ctx, team, user, again, false)
		require.NoError(t, err)
		assert.Equal(t, first.ID, got.ID)
		assert.Equal(t, routing.Tier1, got.ModelTier)
		assert.Equal(t, "tiered", got.Title)
	}
	_, err = f.svc.Create(ctx, team, user, tasks.CreateInput{Assignee: "luke", Title: "tiered", ModelTier: "tier_3"}, false)
	assert.Equal(t, "model_tier", appErr(t, err).Field, "an invalid repeat is refused before the key is read")
	list, _, err := f.svc.List(context.Background(), team, tasks.Filter{Assignee: "luke"}, paging.Page{Limit: 10})
	require.NoError(t, err)
	assert.Len(t, list, 1, "one task")
}

// The execution's complete step stores the ids the worker collected as
// result_artifacts: in order, each once, at most MaxResultArtifacts.
func TestExecCompleteStoresTheResultArtifacts(t *testing.T) {
	f := newFixture(t)
	f.svc.Workflows = &payloads{}
	ctx := context.Background()
	run := func(arts []string) tasks.Task {
		t.Helper()
		tk := f.executed(t, tasks.CreateInput{Assignee: "luke", Title: "produce"})
		arn := "arn:execution:delegation:" + tk.ID
		_, err := f.svc.ExecStart(ctx, team, tk.ID, arn)
		require.NoError(t, err)
		done, err := f.svc.ExecComplete(ctx, team, tk.ID, arn, workflow.TaskResult{TaskID: tk.ID, Output: "done", ResultArtifacts: arts})
		require.NoError(t, err)
		assert.Equal(t, done.ResultArtifacts, f.get(t, tk.ID).ResultArtifacts, "stored")
		return done
	}
	assert.Equal(t, []string{"mem_1", "task_2", "amsg_3"}, run([]string{"mem_1", "task_2", "", "mem_1", "amsg_3"}).ResultArtifacts)
	assert.Equal(t, []string{}, run(nil).ResultArtifacts, "none made: an empty list, as created")
	many := make([]string, workflow.MaxResultArtifacts+5)
	for i := range many {
		many[i] = fmt.Sprintf("mem_%d", i)
	}
	assert.Equal(t, many[:workflow.MaxResultArtifacts], run(many).ResultArtifacts, "the first ones made")
}
