package evaluations_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/routing/evaluations"
	"github.com/conclave-ai/conclave/shared/routing/expertgate"
	"github.com/conclave-ai/conclave/shared/team/agents"
)

// store keeps evaluations by team and id, finishing only running ones.
type store struct {
	mu sync.Mutex
	m  map[string]evaluations.Evaluation
}

func (s *store) CreateEvaluation(_ context.Context, e evaluations.Evaluation) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]evaluations.Evaluation{}
	}
	s.m[e.TeamID+"/"+e.ID] = e
	return nil
}

func (s *store) GetEvaluation(_ context.Context, team, id string) (evaluations.Evaluation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.m[team+"/"+id]
	if !ok {
		return e, apperr.NotFound("evaluation", id)
	}
	return e, nil
}

func (s *store) ListEvaluations(context.Context, string, paging.Page) ([]evaluations.Evaluation, string, error) {
	return nil, "", nil
}

func (s *store) FinishEvaluation(_ context.Context, e evaluations.Evaluation) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.m[e.TeamID+"/"+e.ID]
	if !ok {
		return apperr.NotFound("evaluation", e.ID)
	}
	if old.Status != evaluations.StatusRunning {
		return apperr.New(apperr.ECONFLICT, "not running")
	}
	s.m[e.TeamID+"/"+e.ID] = e
	return nil
}

type team struct{}

func (team) ActiveAgents(context.Context, string) ([]agents.Agent, error) {
	return []agents.Agent{{Slug: "kyra", Name: "Kyra"}, {Slug: "luke", Name: "Luke"}, {Slug: "dana", Name: "Dana"}}, nil
}
func (team) DefaultAgent(context.Context, string) (string, error) { return "kyra", nil }

// gate answers each message with the scores written in it:
// "agent:confidence:skill" pairs after a '|'.
type gate struct {
	fail  error
	calls int
	mu    sync.Mutex
}

func (g *gate) Score(_ context.Context, r expertgate.Request) (expertgate.Response, error) {
	g.mu.Lock()
	g.calls++
	g.mu.Unlock()
	if g.fail != nil {
		return expertgate.Response{}, g.fail
	}
	_, spec, _ := strings.Cut(r.Query, "|")
	var out []routing.ExpertScore
	for _, f := range strings.Fields(spec) {
		p := strings.Split(f, ":")
		var c float64
		for _, ch := range p[1] { // "85" → 0.85
			c = c*10 + float64(ch-'0')
		}
		c /= 100
		out = append(out, routing.ExpertScore{AgentSlug: p[0], Confidence: c, Overall: c, MatchingSkills: []string{p[2]}})
	}
	return expertgate.Response{Scores: out}, nil
}

type bus struct {
	events []evaluations.RequestedEvent
	fail   error
}

func (b *bus) Publish(_ context.Context, dt string, d any) error {
	if b.fail != nil {
		return b.fail
	}
	b.events = append(b.events, d.(evaluations.RequestedEvent))
	return nil
}

func ptr[T any](v T) *T { return &v }

func slug(s string) *evaluations.Slug { v := evaluations.Slug(s); return &v }

func TestBadEvaluationsAreRefusedNamingTheField(t *testing.T) {
	ok := evaluations.Message{Content: "hi", ExpectedAgent: slug("luke")}
	many := func(n int) []evaluations.Message {
		out := make([]evaluations.Message, n)
		for i := range out {
			out[i] = ok
		}
		return out
	}
	for _, tc := range []struct {
		in    evaluations.Input
		field string
	}{
		{evaluations.Input{}, "messages"},
		{evaluations.Input{Messages: many(evaluations.MaxMessages + 1)}, "messages"},
		{evaluations.Input{Messages: []evaluations.Message{{Content: "  "}}}, "messages[0].content"},
		{evaluations.Input{Messages: []evaluations.Message{ok, {Content: strings.Repeat("é", expertgate.MaxQuery+1)}}}, "messages[1].content"},
		{evaluations.Input{Messages: []evaluations.Message{{Content: "x", ExpectedAgent: slug("Not A Slug")}}}, "messages[0].expected_agent"},
		{evaluations.Input{Messages: []evaluations.Message{{Content: "x", ExpectedSkill: "code-review"}}}, "messages[0].expected_skill"},
		{evaluations.Input{Messages: many(1), ConfidenceThreshold: ptr(1.01)}, "confidence_threshold"},
		{evaluations.Input{Messages: many(1), ConfidenceThreshold: ptr(-0.01)}, "confidence_threshold"},
	} {
		st, b := &store{}, &bus{}
		svc := &evaluations.Service{Store: st, Bus: b}
		_, err := svc.Create(context.Background(), "t", tc.in)
		require.Error(t, err)
		var ae *apperr.Error
		require.ErrorAs(t, err, &ae)
		assert.Equal(t, tc.field, ae.Field)
		assert.Empty(t, st.m, "nothing stored")
		assert.Empty(t, b.events, "nothing announced")
	}
	// The boundaries themselves are taken.
	svc := &evaluations.Service{Store: &store{}, Bus: &bus{}}
	_, err := svc.Create(context.Background(), "t", evaluations.Input{Messages: many(evaluations.MaxMessages), ConfidenceThreshold: ptr(1.0)})
	require.NoError(t, err)
	_, err = svc.Create(context.Background(), "t", evaluations.Input{Messages: []evaluations.Message{{Content: strings.Repeat("é", expertgate.MaxQuery)}}, ConfidenceThreshold: ptr(0.0)})
	require.NoError(t, err)
}

func TestAnEvaluationIsRunOnceAndMeasured(t *testing.T) {
	ctx := context.Background()
	st, b, g := &store{}, &bus{}, &gate{}
	svc := &evaluations.Service{Store: st, Bus: b, Gate: g, Agents: team{}}
	e, err := svc.Create(ctx, "t", evaluations.Input{ConfidenceThreshold: ptr(0.5), Messages: []evaluations.Message{
		{Content: "review my code |luke:90:code-review dana:30:data", ExpectedAgent: slug("luke"), ExpectedSkill: "code-review"},
		{Content: "chart this |dana:55:data luke:20:code-review", ExpectedAgent: slug("dana"), ExpectedSkill: "data"},
		{Content: "hello there |luke:10:code-review", ExpectedAgent: nil},
		{Content: "which query is slow |luke:70:code-review dana:40:data", ExpectedAgent: slug("dana")},
		{Content: "@dana look at this |luke:95:code-review", ExpectedAgent: slug("dana")},
	}})
	require.NoError(t, err)
	assert.Equal(t, evaluations.StatusRunning, e.Status)
	require.Equal(t, []evaluations.RequestedEvent{{TeamID: "t", EvaluationID: e.ID}}, b.events)

	require.NoError(t, svc.Run(ctx, "t", e.ID))
	got, err := svc.Get(ctx, "t", e.ID)
	require.NoError(t, err)
	require.Equal(t, evaluations.StatusCompleted, got.Status)
	require.NotNil(t, got.CompletedAt)
	r := got.Result
	require.NotNil(t, r)
	assert.Equal(t, 4, r.InScope)
	assert.Equal(t, 1, r.OutOfScope)
	assert.Equal(t, 0.75, r.AgentTop1, "luke, dana, dana by @mention ranked first; the slow query did not")
	assert.Equal(t, 1.0, r.SkillTop1)
	// At 0.6: luke right, dana (0.55) declined, luke wrong on the slow
	// query, the mention right; hello declined.
	assert.Equal(t, evaluations.Outcome{Threshold: 0.6, Right: 0.5, FalselyDeclined: 0.25, Declined: 1}, r.AtDefault)
	// At 0.5 dana's 0.55 is enough.
	require.NotNil(t, r.AtGiven)
	assert.Equal(t, evaluations.Outcome{Threshold: 0.5, Right: 0.75, FalselyDeclined: 0, Declined: 1}, *r.AtGiven)
	assert.Equal(t, []evaluations.Cell{{Expected: "", Routed: "", Count: 1}, {Expected: "dana", Routed: "", Count: 1},
		{Expected: "dana", Routed: "dana", Count: 1}, {Expected: "dana", Routed: "luke", Count: 1}, {Expected: "luke", Routed: "luke", Count: 1}}, r.Confusion)
	require.Len(t, r.Misses, 2)
	assert.Equal(t, 1, r.Misses[0].Index)
	assert.True(t, r.Misses[0].Declined)
	assert.Equal(t, "kyra", r.Misses[0].Routed)
	assert.Equal(t, []evaluations.Score{{Agent: "dana", Confidence: 0.55, Skill: "data"}, {Agent: "luke", Confidence: 0.2, Skill: "code-review"}}, r.Misses[0].Scores)
	assert.Equal(t, 3, r.Misses[1].Index)
	assert.Equal(t, "luke", r.Misses[1].Routed)
	assert.Equal(t, 4, g.calls, "the mention needs no gate")

	// A redelivered request changes nothing and asks the gate nothing.
	require.NoError(t, svc.Run(ctx, "t", e.ID))
	assert.Equal(t, 4, g.calls)
	// Another team's id is not found, and is nothing to run.
	_, err = svc.Get(ctx, "u", e.ID)
	assert.True(t, apperr.Is(err, apperr.ENOTFOUND))
	require.NoError(t, svc.Run(ctx, "u", e.ID))
	_, err = svc.Get(ctx, "t", "not-an-id")
	assert.True(t, apperr.Is(err, apperr.ENOTFOUND))
}

func TestAFailingGateFailsTheEvaluationWithWhy(t *testing.T) {
	ctx := context.Background()
	st := &store{}
	svc := &evaluations.Service{Store: st, Bus: &bus{}, Gate: &gate{fail: errors.New("throttled")}, Agents: team{}}
	e, err := svc.Create(ctx, "t", evaluations.Input{Messages: []evaluations.Message{{Content: "x", ExpectedAgent: slug("luke")}}})
	require.NoError(t, err)
	require.NoError(t, svc.Run(ctx, "t", e.ID))
	got, _ := svc.Get(ctx, "t", e.ID)
	assert.Equal(t, evaluations.StatusFailed, got.Status)
	assert.Contains(t, got.Error, "throttled")
	assert.Nil(t, got.Result)
}

func TestAnEvaluationThatCannotBeAnnouncedIsRecordedFailed(t *testing.T) {
	st := &store{}
	svc := &evaluations.Service{Store: st, Bus: &bus{fail: errors.New("eventbridge down")}}
	_, err := svc.Create(context.Background(), "t", evaluations.Input{Messages: []evaluations.Message{{Content: "x", ExpectedAgent: nil}}})
	require.Error(t, err)
	require.Len(t, st.m, 1)
	for _, e := range st.m {
		assert.Equal(t, evaluations.StatusFailed, e.Status, "a client polling it sees it will not run")
	}
}

// A message labelled for the default agent that the default answers, by
// fallback, is right: it is what the user wanted.
func TestTheDefaultExpectedAndAnsweringIsRight(t *testing.T) {
	ctx := context.Background()
	svc := &evaluations.Service{Store: &store{}, Bus: &bus{}, Gate: &gate{}, Agents: team{}}
	e, err := svc.Create(ctx, "t", evaluations.Input{Messages: []evaluations.Message{
		{Content: "hello |luke:10:code-review", ExpectedAgent: slug("kyra")},
		{Content: "review it |luke:90:code-review", ExpectedAgent: slug("kyra")},
	}})
	require.NoError(t, err)
	require.NoError(t, svc.Run(ctx, "t", e.ID))
	got, _ := svc.Get(ctx, "t", e.ID)
	r := got.Result
	assert.Equal(t, 0.5, r.AtDefault.Right)
	assert.Zero(t, r.AtDefault.FalselyDeclined)
	assert.Contains(t, r.Confusion, evaluations.Cell{Expected: "kyra", Routed: "kyra", Count: 1})
	require.Len(t, r.Misses, 1)
	assert.Equal(t, 1, r.Misses[0].Index)
}
