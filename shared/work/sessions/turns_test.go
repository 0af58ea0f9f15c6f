package sessions_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/work/sessions"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// call is one model call as the model saw it: the request, its context's
// deadline and the session's current stage at that moment.
type call struct {
	req      models.Request
	deadline time.Time
	stage    string
}

// watching wraps a model and keeps every call it answered.
type watching struct {
	models.Model
	f     *fixture
	id    string
	mu    sync.Mutex
	calls []call
}

func (w *watching) Converse(ctx context.Context, req models.Request) (models.Response, error) {
	c := call{req: req}
	c.deadline, _ = ctx.Deadline()
	if ses, err := w.f.store.GetSession(ctx, team, w.id); err == nil {
		c.stage = ses.CurrentStage
	}
	w.mu.Lock()
	w.calls = append(w.calls, c)
	w.mu.Unlock()
	return w.Model.Converse(ctx, req)
}

func (w *watching) prompts() []string {
	var out []string
	for _, c := range w.calls {
		out = append(out, c.req.Messages[0].Content)
	}
	return out
}

func watch(f *fixture, s sessions.Session) *watching {
	w := &watching{Model: f.svc.Model, f: f, id: s.ID}
	f.svc.Model = w
	return w
}

// The supervisor's plan gives each worker the sub-goal it was assigned,
// not the session's goal.
func TestEachWorkerGetsItsSubGoal(t *testing.T) {
	f := newFixture(t)
	s := f.create(t, sessions.CreateInput{Pattern: sessions.SupervisorWorker, Lead: "kyra", Goal: "Plan the launch", Participants: parts("worker", "luke", "archie")})
	_, err := f.step(s, workflow.SessionBegin, workflow.SessionItem{})
	require.NoError(t, err)
	out, err := f.step(s, workflow.SessionPlan, workflow.SessionItem{})
	require.NoError(t, err)
	require.Len(t, out.Items, 2)
	for _, it := range out.Items {
		assert.Contains(t, it.SubGoal, "cover the", it.Agent)
	}
}

// A supervisor's final output credits the workers, not the lead's plan.
func TestASupervisorsSynthesisCreditsTheWorkers(t *testing.T) {
	f := newFixture(t)
	s := f.drive(t, f.create(t, sessions.CreateInput{Pattern: sessions.SupervisorWorker, Lead: "kyra", Goal: "Plan the launch", Participants: parts("worker", "luke", "archie")}))
	require.Equal(t, sessions.Completed, s.Status)
	assert.True(t, strings.HasSuffix(s.FinalOutput, "Contributors: @luke, @archie."), s.FinalOutput)
}

// Only a second voting round is told of the first one's reasons.
func TestOnlyALaterVotingRoundHearsThePreviousReasons(t *testing.T) {
	f := newFixture(t)
	f.script(t, "archie", "approve-after:2")
	f.script(t, "sage", "approve-after:2")
	s := f.create(t, sessions.CreateInput{Pattern: sessions.Consensus, Lead: "kyra", Goal: "Ship on Friday?", Participants: parts("contributor", "luke", "archie", "sage", "wren")})
	w := watch(f, s)
	s = f.drive(t, s)
	require.Equal(t, 2, s.Rounds)
	p := w.prompts()
	require.Len(t, p, 9, "four votes, four votes, the decision")
	for i := range 4 {
		assert.NotContains(t, p[i], "previous round", "round 1")
		assert.Contains(t, p[4+i], "previous round", "round 2")
	}
	assert.Contains(t, p[8], "Write the decision of the consensus")
}

// A retried decision counts its round once and answers as the first did.
func TestARetriedDecisionCountsTheRoundOnce(t *testing.T) {
	f := newFixture(t)
	f.script(t, "archie", "never-approve")
	f.script(t, "sage", "never-approve")
	s := f.create(t, sessions.CreateInput{Pattern: sessions.Consensus, Lead: "kyra", Goal: "Ship on Friday?", Participants: parts("contributor", "luke", "archie", "sage", "wren")})
	out, err := f.step(s, workflow.SessionBegin, workflow.SessionItem{})
	require.NoError(t, err)
	require.NoError(t, f.each(s, out.Items))
	for range 2 {
		d, err := f.step(s, workflow.SessionDecide, workflow.SessionItem{Round: 1})
		require.NoError(t, err)
		assert.Equal(t, workflow.NextAgain, d.Next)
		assert.Equal(t, 2, d.Round)
	}
	got, err := f.svc.Get(context.Background(), team, s.ID)
	require.NoError(t, err)
	assert.Equal(t, 2, got.Rounds)
}

// Synthesis marks the session synthesizing; the brainstorm's lead is asked
// to synthesize, and the session shows who is working at each call.
func TestSynthesisIsTheLeadsTurn(t *testing.T) {
	f := newFixture(t)
	s := f.create(t, sessions.CreateInput{Pattern: sessions.Brainstorm, Lead: "kyra", Goal: "Ideas", Participants: parts("contributor", "luke", "archie")})
	w := watch(f, s)
	out, err := f.step(s, workflow.SessionBegin, workflow.SessionItem{})
	require.NoError(t, err)
	require.NoError(t, f.each(s, out.Items))
	_, err = f.step(s, workflow.SessionSynthesize, workflow.SessionItem{})
	require.NoError(t, err)
	got, err := f.svc.Get(context.Background(), team, s.ID)
	require.NoError(t, err)
	assert.Equal(t, sessions.Synthesizing, got.Status)
	require.Len(t, w.calls, 3)
	assert.Equal(t, "contribution:luke", w.calls[0].stage)
	assert.Equal(t, "contribution:archie", w.calls[1].stage)
	assert.Equal(t, "synthesis:kyra", w.calls[2].stage)
	assert.Contains(t, w.calls[2].req.Messages[0].Content, "Synthesize the participants' outputs")
	for _, c := range w.calls {
		_, ok := c.req.Metadata[models.MetadataConversationID]
		assert.False(t, ok, "no conversation, no conversation id")
	}
	for _, m := range mustTrace(t, f, s.ID).Messages {
		assert.Equal(t, sessions.MsgAccepted, m.Status)
	}
}

// A stage's model calls end at the session's deadline when it comes before
// a task's budget.
func TestAStagesCallsEndAtTheSessionsDeadline(t *testing.T) {
	f := newFixture(t)
	s := brainstorm(f, t, func(in *sessions.CreateInput) { in.MaxDurationSeconds = ptr(60) })
	w := watch(f, s)
	out, err := f.step(s, workflow.SessionBegin, workflow.SessionItem{})
	require.NoError(t, err)
	_, err = f.step(s, workflow.SessionStage, out.Items[0])
	require.NoError(t, err)
	got, err := f.svc.Get(context.Background(), team, s.ID)
	require.NoError(t, err)
	require.Len(t, w.calls, 1)
	assert.WithinDuration(t, *got.Deadline, w.calls[0].deadline, time.Millisecond)
}

func mustTrace(tb testing.TB, f *fixture, id string) sessions.Trace {
	tb.Helper()
	tr, err := f.svc.Trace(context.Background(), team, id)
	require.NoError(tb, err)
	return tr
}

// textual answers a reviewer's first call with its verdict as JSON text,
// without the tool, labelled as a revision: a protocol violation.
type textual struct {
	models.Model
	once sync.Once
}

func (m *textual) Converse(ctx context.Context, req models.Request) (models.Response, error) {
	var first bool
	if req.Metadata[models.MetadataAgent] == "luke" {
		m.once.Do(func() { first = true })
	}
	if first {
		return models.Response{Text: `{"verdict":"request_changes","summary":"needs work","issues":["the tests"],"message_type":"revision"}`}, nil
	}
	return m.Model.Converse(ctx, req)
}

// A refused answer is recorded refused and the agent answers again, told
// the rule it broke, whether it answered with the tool or with text.
func TestARefusedAnswerIsAskedAgain(t *testing.T) {
	for _, text := range []bool{false, true} {
		f := newFixture(t)
		f.script(t, "luke", "violate:1")
		s := f.create(t, sessions.CreateInput{Pattern: sessions.PeerReview, Lead: "kyra", Goal: "Write the API docs",
			Participants: append(parts("worker", "wren"), parts("reviewer", "luke")...), MaxRounds: ptr(2)})
		if text {
			f.svc.Model = &textual{Model: f.svc.Model}
		}
		w := watch(f, s)
		s = f.drive(t, s)
		require.Equal(t, sessions.Completed, s.Status, "text %v", text)
		msgs := mustTrace(t, f, s.ID).Messages
		require.GreaterOrEqual(t, len(msgs), 3)
		assert.Equal(t, sessions.MsgRefused, msgs[1].Status)
		assert.Equal(t, "luke", msgs[2].Sender)
		assert.Equal(t, sessions.MsgAccepted, msgs[2].Status)
		var retried []models.Message
		for _, c := range w.calls {
			if c.req.Metadata[models.MetadataAgent] == "luke" && len(c.req.Messages) > 1 {
				retried = c.req.Messages
				break
			}
		}
		require.NotEmpty(t, retried, "text %v", text)
		roles := []string{}
		for _, m := range retried {
			roles = append(roles, m.Role)
		}
		if text {
			assert.Equal(t, []string{"user", "assistant", "user"}, roles)
		} else {
			assert.Equal(t, []string{"user", "assistant", "tool", "user"}, roles)
		}
	}
}
