package routing_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/team/agents"
)

// classifierTeam is a small team whose skills' descriptions share few
// words with how users ask (the examples do), and a generalist with none.
func classifierTeam() []agents.Agent {
	return []agents.Agent{
		{Slug: "kyra", Name: "Kyra", Status: agents.StatusActive, Version: 1, Skills: []agents.Skill{
			{Name: "general-questions", Description: "Small talk and general questions"}}},
		{Slug: "penny", Name: "Penny", Status: agents.StatusActive, Version: 1, Skills: []agents.Skill{
			{Name: "budgeting", Description: "Personal finance planning", Examples: []string{
				"how much should I put aside each month", "I keep overspending on food delivery", "help me plan my spending for next year",
				"is it smart to save half my salary", "my rent eats most of my paycheck", "how do I stop running out of money before payday"}},
			{Name: "taxes", Description: "Tax returns and deductions", Examples: []string{
				"can I deduct my home office", "when is the filing deadline", "do I owe anything on my side gig income",
				"what forms do I need for freelancing", "I got a letter from the IRS", "is my car mileage deductible"}}}},
		{Slug: "chef", Name: "Chef", Status: agents.StatusActive, Version: 1, Skills: []agents.Skill{
			{Name: "recipes", Description: "Cooking recipes", Examples: []string{
				"what can I make with leftover rice", "give me a quick weeknight dinner", "how long do I roast a chicken",
				"a vegetarian lasagna please", "what goes well with salmon", "I have eggs, spinach and cheese: ideas?"}}}},
	}
}

func fitted(t *testing.T, team []agents.Agent, opt routing.FitOptions) (*routing.Index, *routing.Classifier) {
	t.Helper()
	ix := semanticIndex(t, team)
	c, err := routing.FitClassifier(context.Background(), ix, mustModel(t), opt)
	require.NoError(t, err)
	require.True(t, ix.SetClassifier(c))
	return ix, c
}

func TestTheClassifierRoutesEverydayPhrasingToTheSkillItLearned(t *testing.T) {
	ix, c := fitted(t, classifierTeam(), routing.FitOptions{})
	assert.Len(t, c.Skills, 4)
	for _, tc := range []struct{ msg, agent, skill string }{
		{"I never have money left at the end of the month", "penny", "budgeting"},
		{"which expenses can I write off as a contractor", "penny", "taxes"},
		{"what should I cook tonight with some potatoes", "chef", "recipes"},
	} {
		r := ix.Rank(tc.msg, routing.Signals{QueryEmbedding: embedQuery(t, tc.msg)})
		top := r.Top(1)[0]
		assert.Equal(t, tc.agent, top.AgentSlug, tc.msg)
		require.NotEmpty(t, top.MatchingSkills, tc.msg)
		assert.Equal(t, tc.skill, top.MatchingSkills[0], tc.msg)
		assert.Greater(t, top.Confidence, 0.0, tc.msg)
	}
}

// An agent's confidence under the classifier is its skills' summed
// probability through the calibration (monotonic): the agent the
// classifier prefers is the most confident.
func TestClassifierConfidencesAreTheAgentsProbabilities(t *testing.T) {
	ix, _ := fitted(t, classifierTeam(), routing.FitOptions{})
	cal := routing.CalibrationFor(mustModel(t).ID())
	require.NotZero(t, cal.ClsScale, "the wordllama calibration reads the classifier through its fitted scale")
	msg := "help me with my taxes please"
	scores := ix.Rank(msg, routing.Signals{QueryEmbedding: embedQuery(t, msg)}).Scores(0)
	require.Len(t, scores, 4-1) // three agents
	best := scores[0]
	assert.Equal(t, "penny", best.AgentSlug)
	for _, s := range scores[1:] {
		assert.Less(t, s.Confidence, best.Confidence, s.AgentSlug)
	}
}

func TestAFitIsDeterministic(t *testing.T) {
	_, a := fitted(t, classifierTeam(), routing.FitOptions{})
	_, b := fitted(t, classifierTeam(), routing.FitOptions{})
	assert.Equal(t, a.Weights, b.Weights)
	assert.Equal(t, a.Bias, b.Bias)
	assert.Equal(t, a.Texts, b.Texts)
	_, c := fitted(t, classifierTeam(), routing.FitOptions{Seed: 2})
	assert.NotEqual(t, a.Weights, c.Weights, "the seed orders the samples")
}

// A skill that requires a keyword the message lacks, or an editor the
// message has not, takes no share of the probability: the rest of the
// team shares it.
func TestTheClassifierKeepsTheEligibilityGates(t *testing.T) {
	team := classifierTeam()
	team[1].Skills[1].RequiresExplicitKeywords = true
	team[1].Skills[1].Keywords = []string{"irs"}
	ix, _ := fitted(t, team, routing.FitOptions{})
	msg := "can I deduct my home office"
	without := ix.Rank(msg, routing.Signals{QueryEmbedding: embedQuery(t, msg)}).Top(3)
	for _, s := range without {
		assert.NotContains(t, s.MatchingSkills, "taxes", "no keyword, no tax skill")
	}
	msg = "can I deduct my home office, the irs asks"
	with := ix.Rank(msg, routing.Signals{QueryEmbedding: embedQuery(t, msg)}).Top(1)[0]
	assert.Equal(t, "penny", with.AgentSlug)
	assert.Equal(t, "taxes", with.MatchingSkills[0])
}

// A classifier fitted to the team serves an index of some of its agents
// (a conversation without one), and an agent's next version while its
// skills keep their names; a skill it never saw (renamed, new) leaves the
// index on example similarity.
func TestAClassifierFitsSubsetsAndRenamesDoNot(t *testing.T) {
	team := classifierTeam()
	_, c := fitted(t, team, routing.FitOptions{})
	subset := semanticIndex(t, team[1:])
	assert.True(t, subset.SetClassifier(c))
	assert.Same(t, c, subset.Classifier())

	next := classifierTeam()
	next[2].Version = 2
	next[2].Skills[0].Examples = next[2].Skills[0].Examples[:3]
	same := semanticIndex(t, next)
	assert.True(t, same.SetClassifier(c), "same names: the previous fit serves until the next")
	assert.NotEqual(t, c.Texts, same.TrainingHash(), "yet it is not that version's own fit")

	renamed := classifierTeam()
	renamed[2].Skills[0].Name = "cooking"
	ix := semanticIndex(t, renamed)
	assert.False(t, ix.SetClassifier(c))
	assert.Nil(t, ix.Classifier())

	words := routing.BuildIndex(team) // no embeddings: no classifier
	assert.False(t, words.SetClassifier(c))
}

// The bounds: a team of exactly MaxClassifierSkills skills is fitted, one
// more is ErrTooLarge (and so is one past MaxClassifierSamples).
func TestTheClassifierBounds(t *testing.T) {
	teamOf := func(skills, examples int) []agents.Agent {
		var team []agents.Agent
		for a := 0; skills > 0; a++ {
			ag := agents.Agent{Slug: fmt.Sprintf("agent-%03d", a), Status: agents.StatusActive, Version: 1}
			for s := 0; s < agents.MaxSkills && skills > 0; s++ {
				sk := agents.Skill{Name: fmt.Sprintf("skill-%d", s), Description: fmt.Sprintf("topic %d of agent %d", s, a)}
				for e := 0; e < examples; e++ {
					sk.Examples = append(sk.Examples, fmt.Sprintf("question %d about topic %d of %d", e, s, a))
				}
				ag.Skills = append(ag.Skills, sk)
				skills--
			}
			team = append(team, ag)
		}
		return team
	}
	fit := func(team []agents.Agent) error {
		ix := routing.BuildIndex(team)
		vecs := make([][]float64, len(ix.SkillTexts()))
		for i := range vecs {
			vecs[i] = []float64{float64(i%7) + 1, float64(i%5) + 1, 1}
		}
		require.NoError(t, ix.SetEmbeddings(vecs, routing.Calibration{}))
		_, err := routing.FitClassifier(context.Background(), ix, threeDims{}, routing.FitOptions{Epochs: 1})
		return err
	}
	require.NoError(t, fit(teamOf(routing.MaxClassifierSkills, routing.ClassifierExamples)))
	assert.ErrorIs(t, fit(teamOf(routing.MaxClassifierSkills+1, routing.ClassifierExamples)), routing.ErrTooLarge)
	// Samples: each skill's text and its examples.
	per := routing.MaxClassifierSamples/100 - 1 // 100 skills
	require.NoError(t, fit(teamOf(100, per)))
	assert.ErrorIs(t, fit(teamOf(100, per+1)), routing.ErrTooLarge)
}

// A team gets a classifier when at least half its skills have
// ClassifierExamples examples: exactly half is enough, a skill one short
// does not count.
func TestAClassifierNeedsExamples(t *testing.T) {
	fit := func(counts ...int) error {
		var team []agents.Agent
		for i, n := range counts {
			sk := agents.Skill{Name: fmt.Sprintf("s-%d", i), Description: fmt.Sprintf("topic %d", i)}
			for e := range n {
				sk.Examples = append(sk.Examples, fmt.Sprintf("question %d on %d", e, i))
			}
			team = append(team, agents.Agent{Slug: fmt.Sprintf("a-%d", i), Status: agents.StatusActive, Version: 1, Skills: []agents.Skill{sk}})
		}
		ix := semanticIndex(t, team)
		_, err := routing.FitClassifier(context.Background(), ix, mustModel(t), routing.FitOptions{Epochs: 1})
		return err
	}
	n := routing.ClassifierExamples
	require.NoError(t, fit(n, 0))
	require.NoError(t, fit(n, n, 0, n-1))
	assert.ErrorIs(t, fit(n, 0, n-1), routing.ErrFewExamples)
	assert.ErrorIs(t, fit(n-1, n-1), routing.ErrFewExamples)
	assert.ErrorIs(t, fit(0), routing.ErrFewExamples, "descriptions only")
}

func TestAFitStopsWithItsContext(t *testing.T) {
	ix := semanticIndex(t, classifierTeam())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := routing.FitClassifier(ctx, ix, mustModel(t), routing.FitOptions{})
	assert.ErrorIs(t, err, context.Canceled)
}

// The cross-validation routes every example held out of the fit: on this
// team most land on their agent, and the curve routes fewer as the
// threshold rises.
func TestCrossValidationMeasuresTheTeamsOwnExamples(t *testing.T) {
	_, c := fitted(t, classifierTeam(), routing.FitOptions{Folds: 3})
	q := c.Quality
	require.NotNil(t, q)
	assert.Equal(t, 3, q.Folds)
	assert.Equal(t, 18, q.Examples)
	assert.GreaterOrEqual(t, q.AgentTop1, 0.7)
	assert.GreaterOrEqual(t, q.AgentTop1, q.SkillTop1)
	require.Len(t, q.Curve, len(routing.CurveThresholds))
	for i := 1; i < len(q.Curve); i++ {
		assert.LessOrEqual(t, q.Curve[i].Routed, q.Curve[i-1].Routed)
		assert.LessOrEqual(t, q.Curve[i].Right, q.Curve[i].Routed)
	}
	_, none := fitted(t, classifierTeam(), routing.FitOptions{})
	assert.Nil(t, none.Quality)
}

// threeDims embeds every text as one three-dimensional vector.
type threeDims struct{}

func (threeDims) ID() string { return "three" }

func (threeDims) Embed(_ context.Context, texts []string) ([][]float64, error) {
	out := make([][]float64, len(texts))
	for i := range out {
		out[i] = []float64{1, 2, 3}
	}
	return out, nil
}

// A stored classifier whose weights do not add up never scores (it would
// read past them), and a cleared index scores by similarity again.
func TestAClassifierThatDoesNotAddUpIsRefused(t *testing.T) {
	ix, c := fitted(t, classifierTeam(), routing.FitOptions{})
	short := *c
	short.Weights = c.Weights[:len(c.Weights)-1]
	assert.False(t, ix.SetClassifier(&short))
	bias := *c
	bias.Bias = c.Bias[:len(c.Bias)-1]
	assert.False(t, ix.SetClassifier(&bias))
	require.NotNil(t, ix.Classifier())
	ix.ClearClassifier()
	assert.Nil(t, ix.Classifier())
}

// The words' 4-grams are hashed into buckets past the terms; a classifier
// stored before them (Grams 0, no weights for them) still scores, and one
// whose Grams do not match its weights is refused.
func TestTheGramBucketsFollowTheTerms(t *testing.T) {
	ix, c := fitted(t, classifierTeam(), routing.FitOptions{})
	require.Positive(t, c.Grams)
	nc := len(c.Bias)
	assert.Len(t, c.Weights, (c.Dim+len(c.Terms)+c.Grams)*nc)
	old := *c
	old.Grams, old.Weights = 0, c.Weights[:(c.Dim+len(c.Terms))*nc]
	assert.True(t, ix.SetClassifier(&old), "a classifier fitted before the grams")
	msg := "which expenses can I write off as a contractor"
	top := ix.Rank(msg, routing.Signals{QueryEmbedding: embedQuery(t, msg)}).Top(1)[0]
	assert.Equal(t, "penny", top.AgentSlug)
	more := *c
	more.Grams++
	assert.False(t, ix.SetClassifier(&more))
}
