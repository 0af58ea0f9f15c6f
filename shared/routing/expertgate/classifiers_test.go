package expertgate_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/routing/expertgate"
	"github.com/conclave-ai/conclave/shared/team/agents"
)

// classifiers is a ClassifierStore by team and embedder, with the store's
// condition: an older read never replaces a newer one.
type classifiers struct {
	mu   sync.Mutex
	m    map[string]*routing.Classifier
	gets int
}

func (s *classifiers) key(team, emb string) string { return team + "|" + emb }

func (s *classifiers) TeamClassifier(_ context.Context, team, emb string) (*routing.Classifier, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gets++
	c, ok := s.m[s.key(team, emb)]
	return c, ok, nil
}

func (s *classifiers) PutClassifier(_ context.Context, team string, c *routing.Classifier) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]*routing.Classifier{}
	}
	if old, ok := s.m[s.key(team, c.Embedder)]; ok && old.ReadAt.After(c.ReadAt) {
		return false, nil
	}
	s.m[s.key(team, c.Embedder)] = c
	return true, nil
}

func (s *classifiers) DeleteClassifier(_ context.Context, team, emb string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, s.key(team, emb))
	return nil
}

// moneyTeam: wren's examples are about money, luke's about anything else
// (moneyEmbedder's two axes), and the words tell them apart too.
func moneyTeam() []agents.Agent {
	list := team()
	list[0].Skills[0].Examples = []string{"look at my pull request", "is this loop right", "find the bug in this function", "why does it crash", "rename this variable"}
	list[1].Skills[0].Examples = []string{"where did my money go", "I need money for the trip", "how much money to save", "money for rent", "lend me money"}
	return list
}

func TestTheFitterFitsOnceForTheSameSkillsAndExamples(t *testing.T) {
	ctx := context.Background()
	src := &source{agents: moneyTeam()}
	store := &classifiers{}
	now := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	f := &expertgate.Fitter{Gate: &expertgate.Service{Source: src, Embedder: moneyEmbedder{}}, Store: store, Folds: 3, Now: func() time.Time { return now }}

	res, err := f.Fit(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, "fitted", res.Outcome)
	assert.Equal(t, 2, res.Skills)
	c, ok, _ := store.TeamClassifier(ctx, "t", "money")
	require.True(t, ok)
	assert.Equal(t, "luke:1,wren:1", c.Agents)
	assert.Equal(t, now, c.ReadAt)
	require.NotNil(t, c.Quality, "cross-validated")
	assert.Equal(t, 10, c.Quality.Examples)

	res, err = f.Fit(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, "current", res.Outcome, "the same agents")

	// A new version whose skills and examples read the same (a rename):
	// the same fit, not fitted again.
	src.agents = moneyTeam()
	src.agents[1].Version, src.agents[1].Name = 2, "Wren the writer"
	res, err = f.Fit(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, "current", res.Outcome)

	// New examples: fitted again.
	src.agents[1].Skills[0].Examples = append(src.agents[1].Skills[0].Examples, "my money is gone")
	now = now.Add(time.Minute)
	res, err = f.Fit(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, "fitted", res.Outcome)
	c2, _, _ := store.TeamClassifier(ctx, "t", "money")
	assert.Equal(t, "luke:1,wren:2", c2.Agents)

	// A fit of agents read earlier than the stored one's is not stored.
	now = now.Add(-time.Hour)
	src.agents[0].Skills[0].Examples = append(src.agents[0].Skills[0].Examples, "review this diff")
	src.agents[0].Version = 2
	res, err = f.Fit(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, "stale", res.Outcome)
	c3, _, _ := store.TeamClassifier(ctx, "t", "money")
	assert.Same(t, c2, c3)

	// A fit stored before the 4-grams (other features, another
	// calibration): fitted again though the agents read the same.
	src.agents = moneyTeam()
	src.agents[1].Version, src.agents[1].Name = 2, "Wren the writer"
	src.agents[1].Skills[0].Examples = append(src.agents[1].Skills[0].Examples, "my money is gone")
	now = now.Add(2 * time.Hour)
	res, err = f.Fit(ctx, "t")
	require.NoError(t, err)
	require.Equal(t, "current", res.Outcome, "the stored agents")
	c3.Grams = 0
	res, err = f.Fit(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, "fitted", res.Outcome, "a stale fit")
	c4, _, _ := store.TeamClassifier(ctx, "t", "money")
	assert.False(t, c4.Stale())
}

func TestATeamPastTheBoundsLosesItsClassifier(t *testing.T) {
	ctx := context.Background()
	store := &classifiers{}
	src := &source{agents: moneyTeam()}
	f := &expertgate.Fitter{Gate: &expertgate.Service{Source: src, Embedder: moneyEmbedder{}}, Store: store}
	_, err := f.Fit(ctx, "t")
	require.NoError(t, err)
	for a := 0; a*agents.MaxSkills <= routing.MaxClassifierSkills; a++ {
		ag := agents.Agent{Slug: fmt.Sprintf("bulk-%02d", a), Status: agents.StatusActive, Version: 1}
		for s := range agents.MaxSkills {
			ag.Skills = append(ag.Skills, agents.Skill{Name: fmt.Sprintf("s-%d", s), Description: "x", Examples: []string{"a", "b", "c", "d", "e"}})
		}
		src.agents = append(src.agents, ag)
	}
	res, err := f.Fit(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, "too_large", res.Outcome)
	_, ok, _ := store.TeamClassifier(ctx, "t", "money")
	assert.False(t, ok, "the old fit no longer describes the team")
}

// The gate never waits for a fit: before one is stored it scores by
// example similarity; once stored, a warm index takes it at its next
// recheck, and its scores come from the classifier from then on.
func TestTheGateTakesAFitWhenItLands(t *testing.T) {
	ctx := context.Background()
	store := &classifiers{}
	src := &source{agents: moneyTeam()}
	g := &expertgate.Service{Source: src, Embedder: moneyEmbedder{}, Classifiers: store, Recheck: time.Nanosecond}
	req := expertgate.Request{TeamID: "t", Query: "the money for rent"}
	before, err := g.Score(ctx, req)
	require.NoError(t, err)
	assert.Equal(t, "wren", before.Scores[0].AgentSlug)

	_, err = (&expertgate.Fitter{Gate: &expertgate.Service{Source: src, Embedder: moneyEmbedder{}}, Store: store}).Fit(ctx, "t")
	require.NoError(t, err)
	after, err := g.Score(ctx, req)
	require.NoError(t, err)
	assert.Equal(t, "wren", after.Scores[0].AgentSlug)
	assert.NotEqual(t, before.Scores[0].Confidence, after.Scores[0].Confidence, "scored by the classifier now")
	gets := store.gets
	_, err = g.Score(ctx, req)
	require.NoError(t, err)
	assert.Equal(t, gets, store.gets, "its own fit in hand, the index stops looking")

	// Another team's classifier is never read for this one.
	other := &expertgate.Service{Source: src, Embedder: moneyEmbedder{}, Classifiers: store}
	resp, err := other.Score(ctx, expertgate.Request{TeamID: "u", Query: "the money for rent"})
	require.NoError(t, err)
	assert.Equal(t, before.Scores[0].Confidence, resp.Scores[0].Confidence)
}

func TestTheCalibrationReport(t *testing.T) {
	ctx := context.Background()
	store := &classifiers{}
	src := &source{agents: moneyTeam()}
	src.agents[0].Skills[0].Examples = src.agents[0].Skills[0].Examples[:4]
	cal := &expertgate.Calibrations{Source: src, Store: store, Embedder: "money"}
	rep, err := cal.Report(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, "pending", rep.Classifier.Status)
	assert.Equal(t, routing.DefaultThreshold, rep.Threshold)
	require.Len(t, rep.Skills, 2)
	assert.Equal(t, expertgate.SkillExamples{Agent: "luke", Skill: "code-review", Examples: 4}, rep.Skills[0], "the fewest first")
	require.Len(t, rep.Warnings, 2, "one skill under five examples, and no fit yet")
	assert.Contains(t, rep.Warnings[0], "luke's skill \"code-review\" has 4 examples")

	f := &expertgate.Fitter{Gate: &expertgate.Service{Source: src, Embedder: moneyEmbedder{}}, Store: store, Folds: 3}
	_, err = f.Fit(ctx, "t")
	require.NoError(t, err)
	rep, err = cal.Report(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, "current", rep.Classifier.Status)
	assert.NotNil(t, rep.Classifier.FittedAt)
	require.NotNil(t, rep.Classifier.CrossValidation)
	assert.Len(t, rep.Warnings, 1)

	src.agents[0].Skills[0].Examples = append(src.agents[0].Skills[0].Examples, "a", "b")
	rep, err = cal.Report(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, "pending", rep.Classifier.Status, "the examples changed since the fit")
	assert.Len(t, rep.Warnings, 1, "no skill under five; the fit is pending")

	// Half the skills under five examples: no classifier (exactly half
	// with five is enough: above).
	src.agents[1].Skills[0].Examples = src.agents[1].Skills[0].Examples[:4]
	src.agents[0].Skills[0].Examples = src.agents[0].Skills[0].Examples[:4]
	src.agents[0].Version, src.agents[1].Version = 2, 2
	rep, err = cal.Report(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, "few_examples", rep.Classifier.Status)
	res, err := f.Fit(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, "few_examples", res.Outcome)
	_, ok, _ := store.TeamClassifier(ctx, "t", "money")
	assert.False(t, ok, "the stored fit no longer describes the team")

	rep, err = (&expertgate.Calibrations{Source: src, Store: store}).Report(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, "off", rep.Classifier.Status)

	rep, err = (&expertgate.Calibrations{Source: &source{}, Store: store, Embedder: "money"}).Report(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, "none", rep.Classifier.Status)
	assert.Empty(t, rep.Skills)
}

// An index of some of the team's agents (a turn excluding one) scores
// with the team's fit and, that fit being of these very versions, stops
// looking; a deleted fit is dropped at the next look.
func TestASubsetIndexKeepsTheTeamsFit(t *testing.T) {
	ctx := context.Background()
	store := &classifiers{}
	src := &source{agents: append(moneyTeam(), agents.Agent{Slug: "extra", Status: agents.StatusActive, Version: 1,
		Skills: []agents.Skill{{Name: "misc", Description: "other things", Examples: []string{"a", "b", "c", "d", "e"}}}})}
	_, err := (&expertgate.Fitter{Gate: &expertgate.Service{Source: src, Embedder: moneyEmbedder{}}, Store: store}).Fit(ctx, "t")
	require.NoError(t, err)
	g := &expertgate.Service{Source: src, Embedder: moneyEmbedder{}, Classifiers: store, Recheck: time.Nanosecond}
	req := expertgate.Request{TeamID: "t", Query: "the money for rent", Exclude: []string{"extra"}}
	first, err := g.Score(ctx, req)
	require.NoError(t, err)
	gets := store.gets
	for range 3 {
		_, err = g.Score(ctx, req)
		require.NoError(t, err)
	}
	assert.Equal(t, gets, store.gets, "the team's fit of these versions: no more reads")

	// Deleted (the team outgrew it): the next index built drops it.
	require.NoError(t, store.DeleteClassifier(ctx, "t", "money"))
	src.agents[0].Version = 2
	after, err := g.Score(ctx, req)
	require.NoError(t, err)
	assert.NotEqual(t, first.Scores[0].Confidence, after.Scores[0].Confidence, "by example similarity again")
}
