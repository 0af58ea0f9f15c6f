package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/routing/evaluations"
)

// evaluation is a running evaluation of the team, of two labelled
// messages (the second for nobody), created at.
func (f *fixture) evaluation(at time.Time) evaluations.Evaluation {
	ann, given := evaluations.Slug("ann"), 0.55
	return evaluations.Evaluation{ID: ids.New("reval"), TeamID: f.team, Status: evaluations.StatusRunning,
		Messages: []evaluations.Message{{Content: "how many days of leave <do I> have left & when?", ExpectedAgent: &ann, ExpectedSkill: "work"},
			{Content: "tell me a joke", ExpectedAgent: nil}},
		Count: 2, Threshold: 0.7, Given: &given, CreatedAt: at}
}

// evaluationResult is a result with every part set.
func evaluationResult(right float64) *evaluations.Result {
	return &evaluations.Result{InScope: 1, OutOfScope: 1, AgentTop1: 1, SkillTop1: 0.5,
		AtDefault: evaluations.Outcome{Threshold: 0.7, Right: right, Declined: 1},
		AtGiven:   &evaluations.Outcome{Threshold: 0.55, Right: 1, FalselyDeclined: 0.25},
		Confusion: []evaluations.Cell{{Expected: "ann", Routed: "ann", Count: 1}, {Expected: "", Routed: "", Count: 1}},
		Misses: []evaluations.Miss{{Index: 1, Content: "tell me a joke", ExpectedAgent: "", Routed: "bob", Skill: "work", Confidence: 0.625,
			Scores: []evaluations.Score{{Agent: "bob", Confidence: 0.625, Skill: "work"}, {Agent: "ann", Confidence: 0.125, Skill: "work"}}}}}
}

// evaluationsStored: an evaluation reads back whole by its team (a
// message nobody should take keeps its null agent), and is created once;
// another team reads none; the team's list newest first, without messages
// or results, a page at a time; a running evaluation finishes once (its
// outcome stored, its messages kept), a second finish is ECONFLICT and
// changes nothing, a finish of an unknown id is ENOTFOUND.
func evaluationsStored(t *testing.T, f *fixture) {
	ctx := context.Background()
	s := f.Evaluations
	at := time.Now().UTC().Truncate(time.Millisecond)
	e1, e2, e3 := f.evaluation(at), f.evaluation(at.Add(time.Second)), f.evaluation(at.Add(2*time.Second))
	for _, e := range []evaluations.Evaluation{e1, e2, e3} {
		require.NoError(t, s.CreateEvaluation(ctx, e))
	}
	refused(t, s.CreateEvaluation(ctx, e1), apperr.ECONFLICT, "")

	got, err := s.GetEvaluation(ctx, f.team, e2.ID)
	require.NoError(t, err)
	assert.Equal(t, e2, got, "read back whole")
	assert.Nil(t, got.Messages[1].ExpectedAgent, "nobody should take it")
	got.Messages[0].Content, *got.Given = "changed", 0.9
	got, _ = s.GetEvaluation(ctx, f.team, e2.ID)
	assert.Equal(t, e2, got, "copied out: changing it changes nothing stored")
	for _, miss := range []struct{ team, id string }{{f.otherTeam(), e2.ID}, {f.team, ids.New("reval")}} {
		_, err := s.GetEvaluation(ctx, miss.team, miss.id)
		refused(t, err, apperr.ENOTFOUND, "")
	}

	list := func(team string) func(paging.Page) ([]evaluations.Evaluation, string, error) {
		return func(p paging.Page) ([]evaluations.Evaluation, string, error) { return s.ListEvaluations(ctx, team, p) }
	}
	page, next, err := list(f.team)(paging.Page{Limit: 2})
	require.NoError(t, err)
	require.Len(t, page, 2)
	require.NotEmpty(t, next, "a third follows")
	summary := func(e evaluations.Evaluation) evaluations.Evaluation {
		e.Messages, e.Result = nil, nil
		return e
	}
	assert.Equal(t, []evaluations.Evaluation{summary(e3), summary(e2)}, page, "newest first, without messages or results")
	page, next, err = list(f.team)(paging.Page{Limit: 2, Token: next})
	require.NoError(t, err)
	assert.Equal(t, []evaluations.Evaluation{summary(e1)}, page)
	assert.Empty(t, next)
	assert.Equal(t, []string{e3.ID, e2.ID, e1.ID}, pages(t, 1, list(f.team), func(e evaluations.Evaluation) string { return e.ID }))
	boundToken(t, list(f.team), list(f.otherTeam()))
	none, _, err := s.ListEvaluations(ctx, f.otherTeam(), paging.Page{Limit: 10})
	require.NoError(t, err)
	assert.Empty(t, none, "another team lists none")

	// Finished with the outcome alone: the messages stay as stored.
	done := at.Add(time.Minute)
	fin := evaluations.Evaluation{ID: e2.ID, TeamID: f.team, Status: evaluations.StatusCompleted, CompletedAt: &done, Result: evaluationResult(0.5)}
	require.NoError(t, s.FinishEvaluation(ctx, fin))
	want := e2
	want.Status, want.CompletedAt, want.Result = evaluations.StatusCompleted, &done, evaluationResult(0.5)
	got, err = s.GetEvaluation(ctx, f.team, e2.ID)
	require.NoError(t, err)
	assert.Equal(t, want, got, "the outcome stored, the rest kept")
	page, _, err = list(f.team)(paging.Page{Limit: 10})
	require.NoError(t, err)
	require.Len(t, page, 3)
	assert.Equal(t, summary(want), page[1], "listed finished, without its result")

	again := fin
	again.Status, again.Error, again.Result = evaluations.StatusFailed, "a redelivery", evaluationResult(1)
	refused(t, s.FinishEvaluation(ctx, again), apperr.ECONFLICT, "")
	got, _ = s.GetEvaluation(ctx, f.team, e2.ID)
	assert.Equal(t, want, got, "a second finish changes nothing")

	failed := evaluations.Evaluation{ID: e3.ID, TeamID: f.team, Status: evaluations.StatusFailed, CompletedAt: &done, Error: "the expert gate failed"}
	require.NoError(t, s.FinishEvaluation(ctx, failed))
	got, _ = s.GetEvaluation(ctx, f.team, e3.ID)
	assert.Equal(t, []any{evaluations.StatusFailed, "the expert gate failed", (*evaluations.Result)(nil), e3.Messages},
		[]any{got.Status, got.Error, got.Result, got.Messages})

	for _, miss := range []struct{ team, id string }{{f.team, ids.New("reval")}, {f.otherTeam(), e1.ID}} {
		unknown := fin
		unknown.TeamID, unknown.ID = miss.team, miss.id
		refused(t, s.FinishEvaluation(ctx, unknown), apperr.ENOTFOUND, "")
	}
	got, _ = s.GetEvaluation(ctx, f.team, e1.ID)
	assert.Equal(t, e1, got, "another team's finish reached nothing")
}
