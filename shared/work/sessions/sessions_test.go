package sessions_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/team/budget"
	"github.com/conclave-ai/conclave/shared/testkit/demo"
	"github.com/conclave-ai/conclave/shared/testkit/memstore"
	"github.com/conclave-ai/conclave/shared/wire/localmodelwiring"
	"github.com/conclave-ai/conclave/shared/work/sessions"
	"github.com/conclave-ai/conclave/shared/work/tasks"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

const team = demo.TeamID

type fixture struct {
	store *memstore.Store
	bus   *memstore.Publisher
	svc   *sessions.Service
	tasks *tasks.Service
}

func newFixture(tb testing.TB) *fixture {
	tb.Helper()
	store := memstore.New()
	require.NoError(tb, demo.Seed(context.Background(), store))
	bus := &memstore.Publisher{}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ts := tasks.NewService(store, nil, bus, log)
	svc := &sessions.Service{Store: store, Tasks: sessions.TaskModel{Svc: ts}, Model: localmodelwiring.New(store), Bus: bus, Enabled: true, Log: log}
	return &fixture{store: store, bus: bus, svc: svc, tasks: ts}
}

// script gives an agent a local model script (and a priced model id, so
// its calls cost something).
func (f *fixture) script(tb testing.TB, slug, script string) {
	tb.Helper()
	a, err := f.store.GetAgent(context.Background(), team, slug)
	require.NoError(tb, err)
	a.Model = &agents.Model{Provider: "local", ID: "anthropic.claude-3-5-sonnet-20240620-v1:0", Script: script}
	a.Version++
	require.NoError(tb, f.store.UpdateAgent(context.Background(), a))
}

func (f *fixture) create(tb testing.TB, in sessions.CreateInput) sessions.Session {
	tb.Helper()
	s, err := f.svc.Create(context.Background(), team, "key_test", in)
	require.NoError(tb, err)
	return s
}

// step runs one machine state.
func (f *fixture) step(s sessions.Session, action string, it workflow.SessionItem) (workflow.SessionStepOutput, error) {
	return f.svc.Step(context.Background(), workflow.SessionStepInput{Machine: string(s.Pattern), Action: action, TeamID: team,
		SessionID: s.ID, Run: 1, ExecutionARN: "arn:" + s.ID, Item: &it, Round: it.Round})
}

// drive plays the pattern's state machine: the ASL files' flow with the
// Catch path (fail) on the first error.
func (f *fixture) drive(tb testing.TB, s sessions.Session) sessions.Session {
	tb.Helper()
	err := f.flow(s)
	if err != nil {
		name := "Error"
		var be workflow.BudgetExhausted
		var pv workflow.ProtocolViolation
		switch {
		case errors.As(err, &be):
			name = "BudgetExhausted"
		case errors.As(err, &pv):
			name = "ProtocolViolation"
		case errors.Is(err, errMaxRounds):
			name = sessions.ReasonRounds
		}
		_, ferr := f.svc.Step(context.Background(), workflow.SessionStepInput{Action: workflow.SessionFail, TeamID: team, SessionID: s.ID, Run: 1,
			ExecutionARN: "arn:" + s.ID, Error: workflow.StepError{Error: name, Cause: err.Error()}})
		require.NoError(tb, ferr)
	}
	got, err := f.svc.Get(context.Background(), team, s.ID)
	require.NoError(tb, err)
	return got
}

var errMaxRounds = errors.New("max rounds")

func (f *fixture) flow(s sessions.Session) error {
	out, err := f.step(s, workflow.SessionBegin, workflow.SessionItem{})
	if err != nil {
		return err
	}
	switch s.Pattern {
	case sessions.SupervisorWorker:
		if out, err = f.step(s, workflow.SessionPlan, workflow.SessionItem{}); err != nil {
			return err
		}
		err = f.each(s, out.Items)
	case sessions.PeerReview, sessions.Consensus:
		err = f.loop(s, out)
	default:
		err = f.each(s, out.Items)
	}
	if err != nil {
		return err
	}
	if _, err := f.step(s, workflow.SessionSynthesize, workflow.SessionItem{}); err != nil {
		return err
	}
	_, err = f.step(s, workflow.SessionComplete, workflow.SessionItem{})
	return err
}

func (f *fixture) each(s sessions.Session, items []workflow.SessionItem) error {
	for _, it := range items {
		if _, err := f.step(s, workflow.SessionStage, it); err != nil {
			return err
		}
	}
	return nil
}

func (f *fixture) loop(s sessions.Session, out workflow.SessionStepOutput) error {
	if s.Pattern == sessions.PeerReview {
		if _, err := f.step(s, workflow.SessionStage, workflow.SessionItem{Kind: "proposal", Round: 1}); err != nil {
			return err
		}
	}
	for {
		if err := f.each(s, out.Items); err != nil {
			return err
		}
		d, err := f.step(s, workflow.SessionDecide, workflow.SessionItem{Round: out.Round})
		if err != nil {
			return err
		}
		switch d.Next {
		case workflow.NextDone:
			return nil
		case workflow.NextMaxRounds:
			return errMaxRounds
		}
		if s.Pattern == sessions.PeerReview {
			if _, err := f.step(s, workflow.SessionStage, workflow.SessionItem{Kind: "revision", Round: d.Round}); err != nil {
				return err
			}
		}
		out = d
	}
}

func parts(role string, slugs ...string) []sessions.ParticipantInput {
	var out []sessions.ParticipantInput
	for i, s := range slugs {
		p := sessions.ParticipantInput{Agent: s, Role: role}
		if role == "worker" && len(slugs) > 2 {
			p.Stage = i + 1
		}
		out = append(out, p)
	}
	return out
}

func TestCreateValidates(t *testing.T) {
	f := newFixture(t)
	dana, err := f.store.GetAgent(context.Background(), team, "dana")
	require.NoError(t, err)
	dana.Status, dana.Version = agents.StatusPaused, dana.Version+1
	require.NoError(t, f.store.UpdateAgent(context.Background(), dana))
	two := parts("contributor", "luke", "archie")
	cases := []struct {
		name  string
		in    sessions.CreateInput
		field string
	}{
		{"pattern", sessions.CreateInput{Pattern: "chaos", Lead: "kyra", Goal: "g", Participants: two}, "pattern"},
		{"goal", sessions.CreateInput{Pattern: "brainstorm", Lead: "kyra", Participants: two}, "goal"},
		{"one participant", sessions.CreateInput{Pattern: "brainstorm", Lead: "kyra", Goal: "g", Participants: two[:1]}, "participants"},
		{"lead twice", sessions.CreateInput{Pattern: "brainstorm", Lead: "luke", Goal: "g", Participants: two}, "participants[0].agent"},
		{"unknown agent", sessions.CreateInput{Pattern: "brainstorm", Lead: "kyra", Goal: "g", Participants: parts("contributor", "luke", "nobody")}, "participants[1].agent"},
		{"paused agent", sessions.CreateInput{Pattern: "brainstorm", Lead: "kyra", Goal: "g", Participants: parts("contributor", "luke", "dana")}, "participants[1].agent"},
		{"peer review needs one worker", sessions.CreateInput{Pattern: "peer_review", Lead: "kyra", Goal: "g", Participants: parts("reviewer", "luke", "archie")}, "participants"},
		{"pipeline gap", sessions.CreateInput{Pattern: "pipeline", Lead: "kyra", Goal: "g", Participants: []sessions.ParticipantInput{{Agent: "luke", Role: "worker", Stage: 1}, {Agent: "archie", Role: "worker", Stage: 3}}}, "participants"},
		{"cost", sessions.CreateInput{Pattern: "brainstorm", Lead: "kyra", Goal: "g", Participants: two, MaxCostUSD: ptr(0.51)}, "max_cost_usd"},
		{"duration", sessions.CreateInput{Pattern: "brainstorm", Lead: "kyra", Goal: "g", Participants: two, MaxDurationSeconds: ptr(601)}, "max_duration_seconds"},
		{"rounds", sessions.CreateInput{Pattern: "brainstorm", Lead: "kyra", Goal: "g", Participants: two, MaxRounds: ptr(6)}, "max_rounds"},
		{"approval", sessions.CreateInput{Pattern: "brainstorm", Lead: "kyra", Goal: "g", Participants: two, Approval: "maybe"}, "approval"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := f.svc.Create(context.Background(), team, "key_test", c.in)
			var ae *apperr.Error
			require.ErrorAs(t, err, &ae)
			assert.Equal(t, apperr.EINVALID, ae.Code)
			assert.Equal(t, c.field, ae.Field)
		})
	}
	s := f.create(t, sessions.CreateInput{Pattern: "brainstorm", Lead: "kyra", Goal: "g", Participants: two})
	assert.Equal(t, sessions.Planning, s.Status)
	assert.Equal(t, 600, s.MaxDurationSeconds)
	assert.InDelta(t, 0.5, s.MaxCostUSD, 1e-9)
	assert.Equal(t, 5, s.MaxRounds)

	_, err = f.svc.Get(context.Background(), "another-team", s.ID)
	assert.True(t, apperr.Is(err, apperr.ENOTFOUND), "another team does not see it")
	list, _, err := f.svc.List(context.Background(), team, sessions.Filter{Agent: "luke"}, paging.Page{})
	require.NoError(t, err)
	assert.Len(t, list, 1)
}

func ptr[T any](v T) *T { return &v }

func TestFlagOffNamesTheFlag(t *testing.T) {
	f := newFixture(t)
	f.svc.Enabled = false
	_, err := f.svc.Create(context.Background(), team, "k", sessions.CreateInput{})
	assert.ErrorContains(t, err, `"sessions"`)
}

func TestEveryPatternCompletes(t *testing.T) {
	for _, c := range []struct {
		pattern sessions.Pattern
		parts   []sessions.ParticipantInput
	}{
		{sessions.SupervisorWorker, parts("worker", "luke", "archie")},
		{sessions.Pipeline, parts("worker", "luke", "archie", "sage")},
		{sessions.Brainstorm, parts("contributor", "luke", "archie", "sage")},
		{sessions.Consensus, parts("contributor", "luke", "archie", "sage")},
		{sessions.PeerReview, append(parts("worker", "luke"), parts("reviewer", "archie")...)},
	} {
		t.Run(string(c.pattern), func(t *testing.T) {
			f := newFixture(t)
			s := f.drive(t, f.create(t, sessions.CreateInput{Pattern: c.pattern, Lead: "kyra", Goal: "Plan the launch", Participants: c.parts}))
			assert.Equal(t, sessions.Completed, s.Status, s.StatusReason+" "+s.Convergence)
			assert.NotEmpty(t, s.FinalOutput)
			assert.NotEmpty(t, s.StageOutputs)
			for _, p := range s.Participants {
				assert.Equal(t, sessions.PartCompleted, p.Status, p.Agent)
				assert.NotEmpty(t, p.TaskID)
			}
			tr, err := f.svc.Trace(context.Background(), team, s.ID)
			require.NoError(t, err)
			assert.Positive(t, tr.TotalTurns)
			assert.Zero(t, tr.Refused)
			load, err := f.tasks.Load(context.Background(), team, "luke")
			require.NoError(t, err)
			assert.Zero(t, load, "every stage task ended and gave its slot back")
		})
	}
}

func peerReview(f *fixture, tb testing.TB, rounds int) sessions.Session {
	return f.drive(tb, f.create(tb, sessions.CreateInput{Pattern: sessions.PeerReview, Lead: "kyra", Goal: "Write the API docs",
		Participants: append(parts("worker", "wren"), parts("reviewer", "luke")...), MaxRounds: &rounds}))
}

func TestPeerReviewLoopsUntilApproval(t *testing.T) {
	f := newFixture(t)
	f.script(t, "luke", "approve-after:3")
	s := peerReview(f, t, 5)
	assert.Equal(t, sessions.Completed, s.Status)
	assert.Equal(t, 3, s.Rounds)
	assert.Equal(t, sessions.OutcomeConverged, s.Outcome)
	tr, err := f.svc.Trace(context.Background(), team, s.ID)
	require.NoError(t, err)
	var types []sessions.MessageType
	for _, m := range tr.Messages {
		types = append(types, m.Type)
	}
	assert.Equal(t, []sessions.MessageType{"proposal", "critique", "revision", "critique", "revision", "approval", "approval"}, types)
}

func TestPeerReviewFailsAtMaxRounds(t *testing.T) {
	f := newFixture(t)
	f.script(t, "luke", "never-approve")
	s := peerReview(f, t, 2)
	assert.Equal(t, sessions.Failed, s.Status)
	assert.Equal(t, sessions.OutcomeMaxRounds, s.Outcome)
	tr, err := f.svc.Trace(context.Background(), team, s.ID)
	require.NoError(t, err)
	assert.Equal(t, sessions.MsgRejection, tr.Messages[len(tr.Messages)-1].Type, "the last round's verdict is a rejection")
}

func TestProtocolViolationIsRefusedAndRecorded(t *testing.T) {
	f := newFixture(t)
	f.script(t, "luke", "violate:1")
	s := peerReview(f, t, 2)
	assert.Equal(t, sessions.Completed, s.Status)
	tr, err := f.svc.Trace(context.Background(), team, s.ID)
	require.NoError(t, err)
	assert.Equal(t, 1, tr.Refused)
	assert.Equal(t, sessions.MsgRefused, tr.Messages[1].Status)
	assert.Contains(t, tr.Messages[1].Violation, "rule 3")
}

func TestConsensusNeedsASecondRound(t *testing.T) {
	f := newFixture(t)
	f.script(t, "archie", "approve-after:2")
	f.script(t, "sage", "approve-after:2")
	s := f.drive(t, f.create(t, sessions.CreateInput{Pattern: sessions.Consensus, Lead: "kyra", Goal: "Ship on Friday?", Participants: parts("contributor", "luke", "archie", "sage", "wren")}))
	assert.Equal(t, sessions.Completed, s.Status)
	assert.Equal(t, 2, s.Rounds)
	assert.Contains(t, s.Convergence, "two-thirds")
}

// The team's monthly budget ends a session as its own cap does: the stage
// whose call it refuses fails with BudgetExhausted, and no call is made.
func TestTheTeamsBudgetEndsASessionWithBudgetExhausted(t *testing.T) {
	f := newFixture(t)
	f.svc.Model = &budget.Guard{Model: f.svc.Model, Store: f.store}
	require.NoError(t, f.store.PutBudget(context.Background(), team, budget.MonthOf(time.Now()), budget.Budget{Limit: 1, WarnAt: 0.8}))
	for _, a := range []string{"luke", "archie"} {
		f.script(t, a, "")
	}
	s := f.drive(t, f.create(t, sessions.CreateInput{Pattern: sessions.Brainstorm, Lead: "kyra", Goal: "Ideas", Participants: parts("contributor", "luke", "archie")}))
	assert.Equal(t, sessions.Failed, s.Status)
	assert.Equal(t, sessions.ReasonBudget, s.StatusReason)
	assert.Zero(t, s.TotalCostUSD, "the refused calls cost nothing")
}

func TestOverspendEndsWithBudgetExhausted(t *testing.T) {
	f := newFixture(t)
	for _, a := range []string{"luke", "archie", "sage"} {
		f.script(t, a, "overspend")
	}
	s := f.drive(t, f.create(t, sessions.CreateInput{Pattern: sessions.Brainstorm, Lead: "kyra", Goal: "Ideas", Participants: parts("contributor", "luke", "archie", "sage"), MaxCostUSD: ptr(0.1)}))
	assert.Equal(t, sessions.Failed, s.Status)
	assert.Equal(t, sessions.ReasonBudget, s.StatusReason)
	assert.True(t, s.BudgetExhausted)
	assert.LessOrEqual(t, s.TotalCostUSD, 0.1)
	calls := s.ModelCalls
	_, err := f.step(s, workflow.SessionStage, workflow.SessionItem{Agent: "sage", Kind: "contribution"})
	require.Error(t, err)
	s, _ = f.svc.Get(context.Background(), team, s.ID)
	assert.Equal(t, calls, s.ModelCalls, "no model call after the cap")
}

func TestProtocolRules(t *testing.T) {
	m := func(t sessions.MessageType) sessions.Message {
		return sessions.Message{Type: t, Status: sessions.MsgAccepted}
	}
	cases := []struct {
		history []sessions.MessageType
		next    sessions.MessageType
		rule    int
	}{
		{nil, "critique", 1},
		{nil, "request_info", 0},
		{[]sessions.MessageType{"delegation"}, "critique", 2},
		{[]sessions.MessageType{"proposal"}, "revision", 3},
		{[]sessions.MessageType{"proposal", "critique"}, "revision", 0},
		{[]sessions.MessageType{"proposal"}, "critique", 0},
	}
	for _, c := range cases {
		var h []sessions.Message
		for _, x := range c.history {
			h = append(h, m(x))
		}
		err := sessions.Check(h, m(c.next), 5)
		if c.rule == 0 {
			assert.NoError(t, err, "%v then %s", c.history, c.next)
			continue
		}
		var pe *sessions.ProtocolError
		require.ErrorAs(t, err, &pe, "%v then %s", c.history, c.next)
		assert.Equal(t, c.rule, pe.Rule)
	}
	conv := sessions.Message{Type: "approval", Status: sessions.MsgAccepted, Data: map[string]any{"converged": true}}
	err := sessions.Check([]sessions.Message{m("proposal"), conv}, m("revision"), 5)
	assert.ErrorContains(t, err, "rule 4")
}

func TestConcurrentStagesNeverCrossTheCap(t *testing.T) {
	f := newFixture(t)
	for _, a := range []string{"luke", "archie", "sage", "wren"} {
		f.script(t, a, "overspend")
	}
	s := f.create(t, sessions.CreateInput{Pattern: sessions.Brainstorm, Lead: "kyra", Goal: "Ideas", MaxCostUSD: ptr(0.2),
		Participants: parts("contributor", "luke", "archie", "sage", "wren")})
	out, err := f.step(s, workflow.SessionBegin, workflow.SessionItem{})
	require.NoError(t, err)
	var wg sync.WaitGroup
	for _, it := range out.Items {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = f.step(s, workflow.SessionStage, it)
		}()
	}
	wg.Wait()
	got, err := f.svc.Get(context.Background(), team, s.ID)
	require.NoError(t, err)
	assert.LessOrEqual(t, got.TotalCostUSD, 0.2)
	assert.True(t, got.BudgetExhausted)
	assert.Equal(t, 3, got.ModelCalls, "three calls of $0.0525 fit in $0.20, the fourth is refused")
}

func TestConsensusRecordsTheDissent(t *testing.T) {
	f := newFixture(t)
	f.script(t, "archie", "never-approve")
	s := f.drive(t, f.create(t, sessions.CreateInput{Pattern: sessions.Consensus, Lead: "kyra", Goal: "Ship on Friday?", Participants: parts("contributor", "luke", "archie", "sage", "wren")}))
	require.Equal(t, sessions.Completed, s.Status)
	assert.Equal(t, 1, s.Rounds, "three of four is two thirds")
	assert.Contains(t, s.FinalOutput, "Dissent: @archie (reject")
}

func TestSynthesisAttributesTheContributions(t *testing.T) {
	f := newFixture(t)
	s := f.drive(t, f.create(t, sessions.CreateInput{Pattern: sessions.Brainstorm, Lead: "kyra", Goal: "Ideas", Participants: parts("contributor", "luke", "archie")}))
	require.Equal(t, sessions.Completed, s.Status)
	assert.Contains(t, s.FinalOutput, "Contributors: @luke, @archie.")
}

// Two of three voters are exactly two thirds: the consensus is decided in
// the first round, the dissent recorded.
func TestTwoOfThreeVotesAreAConsensus(t *testing.T) {
	f := newFixture(t)
	f.script(t, "archie", "never-approve")
	s := f.drive(t, f.create(t, sessions.CreateInput{Pattern: sessions.Consensus, Lead: "kyra", Goal: "Ship on Friday?", Participants: parts("contributor", "luke", "archie", "sage")}))
	require.Equal(t, sessions.Completed, s.Status)
	assert.Equal(t, 1, s.Rounds)
	assert.Contains(t, s.Convergence, "(2 of 3)")
}

// One of three is no majority either way: rounds go on until max_rounds.
func TestOneOfThreeVotesIsNoConsensus(t *testing.T) {
	f := newFixture(t)
	f.script(t, "archie", "never-approve")
	f.script(t, "sage", "never-approve")
	f.script(t, "luke", "approve-after:1")
	s := f.drive(t, f.create(t, sessions.CreateInput{Pattern: sessions.Consensus, Lead: "kyra", Goal: "Ship on Friday?", Participants: parts("contributor", "luke", "archie", "sage")}))
	assert.Contains(t, s.Convergence, "reject", "two of three reject: decided against")
}

// Pipeline stages run in the order of their stage numbers, whatever the
// order they were given in.
func TestPipelineStagesGivenOutOfOrderRunInStageOrder(t *testing.T) {
	f := newFixture(t)
	in := sessions.CreateInput{Pattern: sessions.Pipeline, Lead: "kyra", Goal: "Review", Participants: []sessions.ParticipantInput{
		{Agent: "sage", Role: "worker", Stage: 3}, {Agent: "luke", Role: "worker", Stage: 1}, {Agent: "archie", Role: "worker", Stage: 2}}}
	s := f.create(t, in)
	var order []string
	for _, p := range s.Participants {
		order = append(order, p.Agent)
	}
	assert.Equal(t, []string{"luke", "archie", "sage"}, order)
	done := f.drive(t, s)
	require.Equal(t, sessions.Completed, done.Status)
	var ran []string
	for _, o := range done.StageOutputs {
		ran = append(ran, o.Agent)
	}
	assert.Equal(t, []string{"luke", "archie", "sage"}, ran[:3])
}

// Every limit of a session's request is accepted at its bounds and refused
// one step outside: a goal of 4,000 characters, a context of 20,000, 1 to
// 600 seconds, a cost cap above $0 and at most $0.50, 1 to 5 rounds, 10
// participants.
func TestCreateAcceptsEveryLimitAtItsBounds(t *testing.T) {
	usd := func(v float64) *float64 { return &v }
	crowd := func(n int) []sessions.ParticipantInput {
		var out []sessions.ParticipantInput
		for i := range n {
			out = append(out, sessions.ParticipantInput{Agent: fmt.Sprintf("agent-%02d", i), Role: "contributor"})
		}
		return out
	}
	for _, c := range []struct {
		name  string
		edit  func(*sessions.CreateInput)
		field string // "" when accepted
	}{
		{"goal of 4,000", func(in *sessions.CreateInput) { in.Goal = strings.Repeat("é", 4000) }, ""},
		{"goal of 4,001", func(in *sessions.CreateInput) { in.Goal = strings.Repeat("é", 4001) }, "goal"},
		{"context of 20,000", func(in *sessions.CreateInput) { in.Context = strings.Repeat("é", 20000) }, ""},
		{"context of 20,001", func(in *sessions.CreateInput) { in.Context = strings.Repeat("é", 20001) }, "context"},
		{"1 second", func(in *sessions.CreateInput) { in.MaxDurationSeconds = ptr(1) }, ""},
		{"0 seconds", func(in *sessions.CreateInput) { in.MaxDurationSeconds = ptr(0) }, "max_duration_seconds"},
		{"600 seconds", func(in *sessions.CreateInput) { in.MaxDurationSeconds = ptr(sessions.MaxDurationSeconds) }, ""},
		{"601 seconds", func(in *sessions.CreateInput) { in.MaxDurationSeconds = ptr(sessions.MaxDurationSeconds + 1) }, "max_duration_seconds"},
		{"a cent", func(in *sessions.CreateInput) { in.MaxCostUSD = usd(0.01) }, ""},
		{"$0", func(in *sessions.CreateInput) { in.MaxCostUSD = usd(0) }, "max_cost_usd"},
		{"$0.50", func(in *sessions.CreateInput) { in.MaxCostUSD = usd(sessions.MaxCostUSD) }, ""},
		{"$0.51", func(in *sessions.CreateInput) { in.MaxCostUSD = usd(0.51) }, "max_cost_usd"},
		{"1 round", func(in *sessions.CreateInput) { in.MaxRounds = ptr(1) }, ""},
		{"0 rounds", func(in *sessions.CreateInput) { in.MaxRounds = ptr(0) }, "max_rounds"},
		{"5 rounds", func(in *sessions.CreateInput) { in.MaxRounds = ptr(sessions.MaxRounds) }, ""},
		{"6 rounds", func(in *sessions.CreateInput) { in.MaxRounds = ptr(sessions.MaxRounds + 1) }, "max_rounds"},
		{"11 participants", func(in *sessions.CreateInput) { in.Participants = crowd(11) }, "participants"},
	} {
		f := newFixture(t)
		in := sessions.CreateInput{Pattern: sessions.Brainstorm, Lead: "kyra", Goal: "Ideas", Participants: parts("contributor", "luke", "archie")}
		c.edit(&in)
		_, err := f.svc.Create(context.Background(), team, "key_test", in)
		if c.field == "" {
			assert.NoError(t, err, c.name)
			continue
		}
		ae, ok := apperr.As(err)
		require.True(t, ok, "%s: %v", c.name, err)
		assert.Equal(t, apperr.EINVALID, ae.Code, c.name)
		assert.Equal(t, c.field, ae.Field, c.name)
	}
	// Ten participants pass the count (these agents are not on the team).
	_, err := newFixture(t).svc.Create(context.Background(), team, "key_test", sessions.CreateInput{Pattern: sessions.Brainstorm, Lead: "kyra", Goal: "Ideas", Participants: crowd(10)})
	ae, ok := apperr.As(err)
	require.True(t, ok, "%v", err)
	assert.NotEqual(t, "participants", ae.Field, ae.Message)
}

// A pipeline needs two stages at least: two are enough, one is not.
func TestAPipelineOfTwoStages(t *testing.T) {
	f := newFixture(t)
	two := []sessions.ParticipantInput{{Agent: "luke", Role: "worker", Stage: 1}, {Agent: "archie", Role: "worker", Stage: 2}}
	_, err := f.svc.Create(context.Background(), team, "key_test", sessions.CreateInput{Pattern: sessions.Pipeline, Lead: "kyra", Goal: "Review", Participants: two})
	assert.NoError(t, err)
	_, err = f.svc.Create(context.Background(), team, "key_test", sessions.CreateInput{Pattern: sessions.Pipeline, Lead: "kyra", Goal: "Review", Participants: two[:1]})
	assert.Equal(t, apperr.EINVALID, apperr.Code(err))
}

// A session asks for approval of its final output only when told to.
func TestApprovalIsNoneUnlessAsked(t *testing.T) {
	f := newFixture(t)
	in := sessions.CreateInput{Pattern: sessions.Brainstorm, Lead: "kyra", Goal: "Ideas", Participants: parts("contributor", "luke", "archie")}
	assert.Equal(t, sessions.ApprovalNone, f.create(t, in).Approval)
	in.Approval = sessions.ApprovalFinal
	assert.Equal(t, sessions.ApprovalFinal, f.create(t, in).Approval)
}
