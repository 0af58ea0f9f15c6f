package plans_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/events"
	"github.com/conclave-ai/conclave/shared/platform/streams"
	"github.com/conclave-ai/conclave/shared/work/plans"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// streamIsTheBus checks that the plan's stream is numbered 1 … n, valid,
// and exactly what its service published on the bus, detail for detail.
// It returns the stream's events.
func (f *fixture) streamIsTheBus(t *testing.T, planID string) []streams.Event {
	t.Helper()
	evs, err := f.store.StreamEvents(context.Background(), team, streams.Plan(planID), 0, 100)
	require.NoError(t, err)
	var announced []streams.Event
	for _, ev := range f.bus.Events() {
		if d, ok := ev.Detail.(plans.Event); ok && d.PlanID == planID {
			raw, err := json.Marshal(d)
			require.NoError(t, err)
			announced = append(announced, streams.Event{Type: ev.DetailType, Detail: raw})
		}
	}
	require.Len(t, evs, len(announced))
	for i, ev := range evs {
		assert.Equal(t, int64(i+1), ev.Seq)
		assert.NoError(t, events.Validate(ev.Type, ev.Detail), "%s %s", ev.Type, ev.Detail)
		assert.Equal(t, announced[i].Type, ev.Type, "event %d", i+1)
		assert.JSONEq(t, string(announced[i].Detail), string(ev.Detail), "event %d", i+1)
	}
	return evs
}

func typesOf(evs []streams.Event) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, ev.Type)
	}
	return out
}

func synthesisOf(t *testing.T, ev streams.Event) string {
	t.Helper()
	var d plans.Event
	require.NoError(t, json.Unmarshal(ev.Detail, &d))
	return d.Synthesis
}

// A plan that ends partial: its stream is its start, each step's end
// (the skipped one is not announced) and its end, as the bus got them; a
// retried end of a step adds nothing.
func TestAPlansStreamIsWhatItAnnounces(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	p, err := f.svc.Start(ctx, team, "conv_1", "kyra", "x", "t", threeSteps())
	require.NoError(t, err)
	f.step(t, workflow.PlanStepInput{Action: workflow.PlanBegin, PlanID: p.ID, ExecutionARN: "arn:plan:" + p.ID})
	for id, failure := range map[int]string{1: "", 2: "the agent gave up"} {
		st := f.step(t, workflow.PlanStepInput{Action: workflow.PlanStartStep, PlanID: p.ID, StepID: id})
		f.finish(t, st.TaskID, "fine", failure)
		f.step(t, workflow.PlanStepInput{Action: workflow.PlanEndStep, PlanID: p.ID, StepID: id})
		f.step(t, workflow.PlanStepInput{Action: workflow.PlanEndStep, PlanID: p.ID, StepID: id})
	}
	f.step(t, workflow.PlanStepInput{Action: workflow.PlanSynthesize, PlanID: p.ID})
	f.step(t, workflow.PlanStepInput{Action: workflow.PlanComplete, PlanID: p.ID})

	evs := f.streamIsTheBus(t, p.ID)
	assert.Equal(t, []string{plans.EventStarted, plans.EventStepCompleted, plans.EventStepCompleted, plans.EventCompleted}, typesOf(evs))
	got, err := f.svc.Get(ctx, team, p.ID)
	require.NoError(t, err)
	assert.Equal(t, plans.Partial, got.Status)
	assert.Equal(t, got.Synthesis, synthesisOf(t, evs[3]))
	assert.Equal(t, int64(4), got.EventSeq)
}

// A cancelled plan's PlanCompleted says who cancelled it, and a plan
// whose machine was lost says why it failed, on the stream as on the bus.
func TestAnEndedPlansStreamSaysWhy(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	p, err := f.svc.Start(ctx, team, "", "kyra", "x", "t", threeSteps())
	require.NoError(t, err)
	cancelled, err := f.svc.Cancel(ctx, team, p.ID, "ana")
	require.NoError(t, err)
	assert.Empty(t, cancelled.Synthesis, "the answer is the event's, not the plan's")
	evs := f.streamIsTheBus(t, p.ID)
	require.Equal(t, []string{plans.EventStarted, plans.EventCompleted}, typesOf(evs))
	assert.Equal(t, "The plan was cancelled by ana.", synthesisOf(t, evs[1]))

	lost, err := f.svc.Start(ctx, team, "", "kyra", "x", "t", threeSteps())
	require.NoError(t, err)
	f.step(t, workflow.PlanStepInput{Action: workflow.PlanBegin, PlanID: lost.ID, ExecutionARN: "arn:plan:" + lost.ID})
	f.clock.Advance(workflow.PlanMaxSeconds*time.Second + plans.SweepGrace + time.Second)
	n, err := f.svc.Sweep(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	evs = f.streamIsTheBus(t, lost.ID)
	require.Equal(t, []string{plans.EventStarted, plans.EventCompleted}, typesOf(evs))
	assert.Contains(t, synthesisOf(t, evs[1]), "The plan failed: PlanTimedOut")
}
