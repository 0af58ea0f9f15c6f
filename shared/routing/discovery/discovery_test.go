package discovery_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/routing/discovery"
	"github.com/conclave-ai/conclave/shared/routing/expertgate"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/testkit/demo"
	"github.com/conclave-ai/conclave/shared/testkit/memstore"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

const team = demo.TeamID

type fixture struct {
	store *memstore.Store
	svc   *discovery.Service
}

// newFixture is the demo team with discovery on the real ExpertGate, both
// reading the in-memory store.
func newFixture(tb testing.TB) *fixture {
	tb.Helper()
	store := memstore.New()
	require.NoError(tb, demo.Seed(context.Background(), store))
	return &fixture{store: store, svc: &discovery.Service{Dir: store, Gate: &expertgate.Service{Source: store}}}
}

// busy gives an agent n queued executed tasks (its load; work items
// would not count).
func (f *fixture) busy(tb testing.TB, slug string, n int) {
	tb.Helper()
	svc := tasks.NewService(f.store, nil, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	for range n {
		_, err := svc.Create(context.Background(), team, tasks.Creator{Type: "user", ID: "key_test"}, tasks.CreateInput{Assignee: slug, Title: "work"}, true)
		require.NoError(tb, err)
	}
}

func (f *fixture) setStatus(tb testing.TB, slug, status string) {
	tb.Helper()
	_, err := agents.NewService(f.store).SetStatus(context.Background(), team, slug, status)
	require.NoError(tb, err)
}

func TestAvailability(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.busy(t, "luke", tasks.MaxActivePerAgent)
	f.busy(t, "dana", tasks.MaxActivePerAgent-1)
	f.setStatus(t, "wren", agents.StatusPaused)

	for _, tc := range []struct {
		agent string
		want  discovery.Availability
	}{
		{"kyra", discovery.Availability{Agent: "kyra", Available: true, Status: agents.StatusActive}},
		{"dana", discovery.Availability{Agent: "dana", Available: true, Status: agents.StatusActive, ActiveTasks: 4}},
		{"luke", discovery.Availability{Agent: "luke", Available: false, Status: agents.StatusActive, ActiveTasks: 5,
			EstimatedWaitSeconds: discovery.AvgTaskSeconds, Reason: "at its limit of 5 concurrent tasks"}},
		{"wren", discovery.Availability{Agent: "wren", Available: false, Status: agents.StatusPaused, Reason: "agent is paused"}},
	} {
		got, err := f.svc.Availability(ctx, team, tc.agent)
		require.NoError(t, err, tc.agent)
		assert.Equal(t, tc.want, got, tc.agent)
	}

	for _, slug := range []string{"nobody", "Not A Slug"} {
		_, err := f.svc.Availability(ctx, team, slug)
		assert.Equal(t, apperr.ENOTFOUND, apperr.Code(err), slug)
	}
	_, err := f.svc.Availability(ctx, demo.OtherTeamID, "kyra")
	assert.Equal(t, apperr.ENOTFOUND, apperr.Code(err), "another team's agents are not found")
}

func slugs(list []discovery.Expert) []string {
	out := []string{}
	for _, e := range list {
		out = append(out, e.Slug)
	}
	return out
}

func TestFindExpertsMatchesSkillsDomainsKeywordsAndActions(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()

	got, err := f.svc.FindExperts(ctx, team, []string{" SECURITY ", "audit"}, nil)
	require.NoError(t, err)
	require.Equal(t, []string{"sage"}, slugs(got))
	assert.Equal(t, 1.0, got[0].SkillCoverage)
	assert.Equal(t, []string{"security", "audit"}, got[0].MatchedSkills)
	assert.Equal(t, []string{"security-review"}, got[0].EffectiveSkills)
	assert.True(t, got[0].Availability.Available)

	got, err = f.svc.FindExperts(ctx, team, []string{"review", "sql"}, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"dana", "luke", "sage"}, slugs(got), "equal coverage, equal load: by slug")
	for _, e := range got {
		assert.Equal(t, 0.5, e.SkillCoverage, e.Slug)
	}

	got, err = f.svc.FindExperts(ctx, team, []string{"review", "sql"}, []string{"luke"})
	require.NoError(t, err)
	assert.Equal(t, []string{"dana", "sage"}, slugs(got), "excluded agents are left out")

	got, err = f.svc.FindExperts(ctx, team, []string{"nothing-matches"}, nil)
	require.NoError(t, err)
	assert.Empty(t, got)
}

func TestFindExpertsRanksCoverageThenAvailabilityThenLoad(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.busy(t, "dana", 2)                       // available, but loaded
	f.busy(t, "luke", tasks.MaxActivePerAgent) // unavailable
	f.setStatus(t, "archie", agents.StatusArchived)

	got, err := f.svc.FindExperts(ctx, team, []string{"review", "sql", "security"}, nil)
	require.NoError(t, err)
	// sage covers two of three; the others one each.
	assert.Equal(t, []string{"sage", "dana", "luke"}, slugs(got))
	assert.InDelta(t, 0.667, got[0].SkillCoverage, 1e-9)
	assert.False(t, got[2].Availability.Available)

	got, err = f.svc.FindExperts(ctx, team, []string{"sql", "review"}, []string{"sage"})
	require.NoError(t, err)
	assert.Equal(t, []string{"dana", "luke"}, slugs(got), "available before unavailable")

	got, err = f.svc.FindExperts(ctx, team, []string{"design"}, nil)
	require.NoError(t, err)
	assert.Empty(t, got, "archived agents are never experts")
}

func TestFindExpertsValidatesTheSkills(t *testing.T) {
	f := newFixture(t)
	many := strings.Split(strings.Repeat("x,", discovery.MaxSkills+1), ",")[:discovery.MaxSkills+1]
	for _, required := range [][]string{nil, {"", "  "}, many} {
		_, err := f.svc.FindExperts(context.Background(), team, required, nil)
		ae, ok := apperr.As(err)
		require.True(t, ok, "%v", err)
		assert.Equal(t, apperr.EINVALID, ae.Code)
		assert.Equal(t, "skills", ae.Field)
	}
}

func TestRecommendReturnsTheGatesTopThreeWithTheirProfiles(t *testing.T) {
	f := newFixture(t)
	res, err := f.svc.Recommend(context.Background(), team, "Can you review this Go function for bugs before I merge the pull request?", routing.DefaultThreshold)
	require.NoError(t, err)
	got := res.Items
	require.Len(t, got, discovery.Recommendations)
	assert.Equal(t, "luke", got[0].Slug)
	assert.Equal(t, "Luke", got[0].Name)
	assert.Equal(t, []string{"code-review"}, got[0].MatchingSkills)
	assert.Equal(t, "code-review", got[0].Skill)
	assert.Equal(t, "Code reviewer with an eye for bugs and readability", got[0].Tagline)
	assert.NotEmpty(t, got[0].Explanation)
	assert.Greater(t, got[0].Confidence, routing.DefaultThreshold, "the calibrated confidence")
	assert.NotEqual(t, got[0].Overall, got[0].Confidence, "overall and confidence are two numbers")
	for i, r := range got {
		assert.LessOrEqual(t, utf8.RuneCountInString(r.PersonalityPreview), discovery.PreviewLength)
		assert.NotEmpty(t, r.PersonalityPreview)
		if i > 0 {
			assert.GreaterOrEqual(t, got[i-1].Overall, r.Overall, "best first, by overall")
		}
	}
	assert.Equal(t, "luke", res.RoutedTo)
	assert.False(t, res.Declined)
	assert.Equal(t, routing.DefaultThreshold, res.Threshold)
}

// Recommend says whom a new conversation would get at the threshold: the
// first confident agent, or, with none at or above it, the team's
// default agent (declined); at the boundary, the confidence itself routes
// and one thousandth above it declines.
func TestRecommendTellsTheDecisionAtTheThreshold(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	q := "Can you review this Go function for bugs before I merge the pull request?"
	res, err := f.svc.Recommend(ctx, team, q, routing.DefaultThreshold)
	require.NoError(t, err)
	c := res.Items[0].Confidence
	at, err := f.svc.Recommend(ctx, team, q, c)
	require.NoError(t, err)
	assert.Equal(t, "luke", at.RoutedTo)
	assert.False(t, at.Declined)
	above, err := f.svc.Recommend(ctx, team, q, c+0.001)
	require.NoError(t, err)
	assert.Equal(t, "kyra", above.RoutedTo, "the team's default agent")
	assert.True(t, above.Declined)
	assert.Equal(t, res.Items, above.Items, "the threshold changes the decision, not the ranking")
	for _, bad := range []float64{-0.001, 1.001, math.NaN()} {
		_, err := f.svc.Recommend(ctx, team, q, bad)
		ae, ok := apperr.As(err)
		require.True(t, ok, "%v", err)
		assert.Equal(t, "confidence_threshold", ae.Field)
	}
	for _, ok := range []float64{0, 1} {
		_, err := f.svc.Recommend(ctx, team, q, ok)
		assert.NoError(t, err)
	}
}

func TestRecommendSkipsAgentsThatAreNotActive(t *testing.T) {
	f := newFixture(t)
	f.setStatus(t, "luke", agents.StatusPaused)
	res, err := f.svc.Recommend(context.Background(), team, "Can you review this Go function for bugs before I merge the pull request?", routing.DefaultThreshold)
	require.NoError(t, err)
	for _, r := range res.Items {
		assert.NotEqual(t, "luke", r.Slug)
	}
	assert.NotEqual(t, "luke", res.RoutedTo)
}

type failingGate struct{ err error }

func (g failingGate) Score(context.Context, expertgate.Request) (expertgate.Response, error) {
	return expertgate.Response{}, g.err
}

func TestRecommendValidatesAndReportsGateFailures(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for _, q := range []string{"", "   ", strings.Repeat("x", expertgate.MaxQuery+1)} {
		_, err := f.svc.Recommend(ctx, team, q, routing.DefaultThreshold)
		ae, ok := apperr.As(err)
		require.True(t, ok, "%v", err)
		assert.Equal(t, "query", ae.Field)
	}
	boom := errors.New("gate down")
	f.svc.Gate = failingGate{boom}
	_, err := f.svc.Recommend(ctx, team, "review my code", routing.DefaultThreshold)
	assert.ErrorIs(t, err, boom)
}
