package consultations_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/routing/expertgate"
	"github.com/conclave-ai/conclave/shared/testkit/fakesecret"
	"github.com/conclave-ai/conclave/shared/wire/localmodelwiring"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/team/memory"
	"github.com/conclave-ai/conclave/shared/team/teams"
	ct "github.com/conclave-ai/conclave/shared/testkit/consultationstest"
	"github.com/conclave-ai/conclave/shared/testkit/memstore"
	"github.com/conclave-ai/conclave/shared/work/consultations"
)

const team = "team_c"

func agent(teamID, slug, name string, status string, skill agents.Skill) agents.Agent {
	return agents.Agent{TeamID: teamID, Slug: slug, Name: name, Status: status, Skills: []agents.Skill{skill}, Version: 1}
}

// seedTeam creates teamID in store with a frontend developer who asks, a
// backend developer (APIs, models), a security expert (auth, tokens) and
// a paused devops engineer.
func seedTeam(t *testing.T, store *memstore.Store, teamID string) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, store.CreateTeam(ctx, teams.Team{ID: teamID, Name: teamID}, teams.APIKey{ID: "key_" + teamID, TeamID: teamID, Status: "active"}, "hash-"+teamID))
	for _, a := range []agents.Agent{
		agent(teamID, "frontend", "Fran", agents.StatusActive, agents.Skill{Name: "ui", Description: "user interfaces", Keywords: []string{"ui", "react", "css"}}),
		agent(teamID, "backend", "Ben", agents.StatusActive, agents.Skill{Name: "api-design", Description: "APIs, database schema, models", Keywords: []string{"api", "model", "database", "schema", "endpoint", "fields"}}),
		agent(teamID, "security", "Sec", agents.StatusActive, agents.Skill{Name: "security-review", Description: "authentication, vulnerabilities", Keywords: []string{"auth", "authentication", "security", "vulnerability", "token", "jwt"}}),
		agent(teamID, "devops", "Dev", agents.StatusPaused, agents.Skill{Name: "deploy", Description: "deployment", Keywords: []string{"docker", "deploy"}}),
	} {
		require.NoError(t, store.CreateAgent(ctx, a))
	}
}

// fixture is the service over an in-memory store holding team (seedTeam).
func fixture(t *testing.T) (*consultations.Service, *memstore.Store, *memstore.Publisher) {
	t.Helper()
	store := memstore.New()
	seedTeam(t, store, team)
	bus := &memstore.Publisher{}
	svc := consultations.New(store, nil, localmodelwiring.New(store), bus, nil, nil)
	return svc, store, bus
}

func ask(from, q string) consultations.RequestInput {
	return consultations.RequestInput{RequestingAgent: from, Question: q}
}

func TestTheGateChoosesAndTheSuggestionIsASignal(t *testing.T) {
	svc, _, _ := fixture(t)
	ctx := context.Background()

	// A clear API question: the backend developer, though security was
	// suggested: overridden, and the decision says why.
	in := ask("frontend", "What fields does the User model API endpoint return from the database schema?")
	in.SuggestedAgent = "security"
	c, err := svc.Request(ctx, team, in)
	require.NoError(t, err)
	assert.Equal(t, "backend", c.ConsultedAgent)
	assert.False(t, c.Decision.SuggestionTaken)
	assert.Contains(t, c.Decision.Reason, "overridden")
	assert.Equal(t, consultations.Completed, c.Status)
	require.NotNil(t, c.Response)
	assert.NotEmpty(t, c.Response.Answer)
	require.Len(t, c.Exchanges, 1)
	assert.Equal(t, "question", c.Exchanges[0].Type)
	assert.Positive(t, c.Exchanges[0].TokensUsed)

	// The suggestion is taken when it is the best.
	in = ask("frontend", "Is this JWT authentication token handling secure against vulnerabilities?")
	in.SuggestedAgent = "security"
	c, err = svc.Request(ctx, team, in)
	require.NoError(t, err)
	assert.Equal(t, "security", c.ConsultedAgent)
	assert.True(t, c.Decision.SuggestionTaken)

	// Never the requester, never a paused agent, whatever is suggested.
	in = ask("backend", "How do I deploy this with docker?")
	in.SuggestedAgent = "devops"
	c, err = svc.Request(ctx, team, in)
	require.NoError(t, err)
	assert.NotEqual(t, "backend", c.ConsultedAgent)
	assert.NotEqual(t, "devops", c.ConsultedAgent)
	assert.Contains(t, c.Decision.Reason, "not an active agent")
}

// In a team larger than the gate answers in full, a suggested agent that
// ranks below the best is still weighed (the gate is asked for it): the
// decision says it was overridden, not that it is no active agent.
func TestASuggestionRankedBelowTheBestIsStillWeighed(t *testing.T) {
	svc, store, _ := fixture(t)
	ctx := context.Background()
	for i := range 2 * routing.ExplainedScores {
		require.NoError(t, store.CreateAgent(ctx, agent(team, fmt.Sprintf("api-%02d", i), "Api", agents.StatusActive,
			agents.Skill{Name: "api-help", Description: "APIs", Keywords: []string{"api", "model", "fields"}})))
	}
	in := ask("frontend", "What fields does the User model API endpoint return from the database schema?")
	in.SuggestedAgent = "security"
	c, err := svc.Request(ctx, team, in)
	require.NoError(t, err)
	assert.Equal(t, "backend", c.ConsultedAgent)
	assert.False(t, c.Decision.SuggestionTaken)
	assert.Contains(t, c.Decision.Reason, "suggestion security overridden")
}

func TestBadRequestsWriteNothing(t *testing.T) {
	svc, _, _ := fixture(t)
	ctx := context.Background()
	long := strings.Repeat("x", consultations.MaxQuestion+1)
	for field, in := range map[string]consultations.RequestInput{
		"requesting_agent":             {Question: "q"},
		"question":                     {RequestingAgent: "frontend", Question: "  "},
		"urgency":                      {RequestingAgent: "frontend", Question: "q", Urgency: "now"},
		"context.attempted_approaches": {RequestingAgent: "frontend", Question: "q", Context: consultations.RequestContext{AttemptedApproaches: make([]string, 11)}},
		"suggested_agent":              {RequestingAgent: "frontend", Question: "q", SuggestedAgent: "Not A Slug"},
	} {
		_, err := svc.Request(ctx, team, in)
		ae, ok := apperr.As(err)
		require.True(t, ok, field)
		assert.Equal(t, apperr.EINVALID, ae.Code, field)
		assert.Equal(t, field, ae.Field)
	}
	_, err := svc.Request(ctx, team, ask("frontend", long))
	assert.True(t, apperr.Is(err, apperr.EINVALID))
	// A paused or unknown requester is not an active agent of the team.
	for _, who := range []string{"devops", "nobody"} {
		_, err = svc.Request(ctx, team, ask(who, "a question"))
		ae, _ := apperr.As(err)
		require.NotNil(t, ae)
		assert.Equal(t, "requesting_agent", ae.Field)
	}
	list, _, err := svc.List(ctx, team, consultations.Filter{}, paging.Page{})
	require.NoError(t, err)
	assert.Empty(t, list)
}

func TestSecretsAreRedactedBeforeAnyAgentSeesThem(t *testing.T) {
	svc, _, _ := fixture(t)
	seen := &recorder{}
	svc.Model = seen
	fake := fakesecret.New("redact")
	in := ask("frontend", "Why does the API reject me? I send "+fake.AuthHeader()+" and "+fake.PasswordClause())
	in.Context = consultations.RequestContext{
		CurrentTask:   "connect to " + fake.ConnectionString(),
		ErrorMessages: []string{fake.AccessKeyID + " rejected", fake.PrivateKeyBlock()},
	}
	c, err := svc.Request(context.Background(), team, in)
	require.NoError(t, err)
	for _, secret := range fake.Values() {
		assert.NotContains(t, seen.all(), secret)
		assert.NotContains(t, c.Question+c.Context.CurrentTask+strings.Join(c.Context.ErrorMessages, " "), secret)
	}
	for _, kind := range []string{"bearer_token", "credential", "connection_string", "aws_access_key", "private_key"} {
		assert.Positive(t, c.ContextPackage.Redactions[kind], kind)
	}
}

func TestTheContextPackageHoldsSimilarResolutionsAndRelevantMemories(t *testing.T) {
	svc, store, _ := fixture(t)
	ctx := context.Background()
	first, err := svc.Request(ctx, team, ask("frontend", "Which fields does the User model API return for the profile page?"))
	require.NoError(t, err)
	_, err = svc.RecordOutcome(ctx, team, first.ID, consultations.OutcomeInput{Rating: 5, LessonsLearned: "The User model API returns preferences as JSON; parse it on the client"})
	require.NoError(t, err)
	require.NoError(t, store.PutMemory(ctx, memory.Memory{ID: "mem_unrelated", TeamID: team, Author: "backend", Type: "fact", Visibility: memory.Shared, Content: "Lunch is at noon", CreatedAt: time.Now()}))

	c, err := svc.Request(ctx, team, ask("security", "What fields does the User model API return for the profile?"))
	require.NoError(t, err)
	require.Len(t, c.ContextPackage.SimilarPast, 1)
	assert.Equal(t, first.ID, c.ContextPackage.SimilarPast[0].ConsultationID)
	assert.Contains(t, c.ContextPackage.SimilarPast[0].Resolution, "preferences as JSON")
	// The lesson became a shared memory that the package draws on; the
	// unrelated memory is left out.
	require.NotEmpty(t, c.ContextPackage.Memories)
	assert.Contains(t, c.ContextPackage.Memories[0].Content, "preferences as JSON")
	for _, m := range c.ContextPackage.Memories {
		assert.NotEqual(t, "mem_unrelated", m.MemoryID)
	}
	assert.NotEmpty(t, c.ContextPackage.Included)
}

// What the package draws on is redacted too (a past answer, a shared
// memory), and it draws only on the team's shared knowledge: not a
// private memory, however relevant, and not another team's consultation.
func TestTheContextPackageRedactsAndKeepsToTheTeamsSharedKnowledge(t *testing.T) {
	svc, store, _ := fixture(t)
	ctx := context.Background()
	seedTeam(t, store, "team_d")
	q := "Which fields does the User model API return for the profile page?"

	// Another team's resolved consultation of the same question.
	theirs, err := svc.Request(ctx, "team_d", ask("frontend", q))
	require.NoError(t, err)
	_, err = svc.RecordOutcome(ctx, "team_d", theirs.ID, consultations.OutcomeInput{Rating: 5, LessonsLearned: "team d profile fields lesson"})
	require.NoError(t, err)

	// The team's own, whose answer carried a secret.
	past, shared := fakesecret.New("pastanswer"), fakesecret.New("sharedmemory")
	svc.Model = answering(`{"answer":"The User model API returns id and email; the fixture user logs in with ` + past.PasswordClause() + `"}`)
	ours, err := svc.Request(ctx, team, ask("frontend", q))
	require.NoError(t, err)
	_, err = svc.RecordOutcome(ctx, team, ours.ID, consultations.OutcomeInput{Rating: 5})
	require.NoError(t, err)
	now := time.Now()
	require.NoError(t, store.PutMemory(ctx, memory.Memory{ID: "mem_shared_secret", TeamID: team, Author: "backend", Type: "fact", Visibility: memory.Shared,
		Content: "The User model API profile fields need the header " + shared.AuthHeader(), CreatedAt: now}))
	require.NoError(t, store.PutMemory(ctx, memory.Memory{ID: "mem_private", TeamID: team, Author: "backend", Type: "fact", Visibility: memory.Private,
		Content: "The User model API profile page fields: my private notes", CreatedAt: now}))

	seen := &recorder{}
	svc.Model = seen
	c, err := svc.Request(ctx, team, ask("security", "What fields does the User model API return for the profile page?"))
	require.NoError(t, err)
	pkg := c.ContextPackage
	require.Len(t, pkg.SimilarPast, 1, "the team's own past consultation, not team_d's")
	assert.Equal(t, ours.ID, pkg.SimilarPast[0].ConsultationID)
	assert.NotContains(t, pkg.SimilarPast[0].Resolution, past.Password)
	assert.Contains(t, pkg.SimilarPast[0].Resolution, "[REDACTED:credential]")
	var memIDs []string
	for _, m := range pkg.Memories {
		memIDs = append(memIDs, m.MemoryID)
		assert.NotContains(t, m.Content, shared.BearerToken)
		assert.NotContains(t, m.Content, "team d")
	}
	assert.Contains(t, memIDs, "mem_shared_secret")
	assert.NotContains(t, memIDs, "mem_private")
	assert.Positive(t, pkg.Redactions["credential"])
	assert.Positive(t, pkg.Redactions["bearer_token"])
	// What the specialist was sent holds none of it either.
	for _, leak := range []string{past.Password, shared.BearerToken, "my private notes", "team d profile fields lesson", theirs.ID} {
		assert.NotContains(t, seen.all(), leak)
	}
}

func TestIdenticalQuestionsEscalateTheThirdTime(t *testing.T) {
	svc, _, bus := fixture(t)
	ctx := context.Background()
	q := "What fields does the User model API return?"
	var ids []string
	for i := range 2 {
		c, err := svc.Request(ctx, team, ask("frontend", q))
		require.NoError(t, err)
		require.Equal(t, consultations.Completed, c.Status, i)
		ids = append(ids, c.ID)
	}
	calls := &recorder{}
	svc.Model = calls
	c, err := svc.Request(ctx, team, ask("frontend", "what FIELDS does the user model API return"))
	require.NoError(t, err)
	assert.Equal(t, consultations.Escalated, c.Status)
	require.NotNil(t, c.Loop)
	assert.Equal(t, consultations.LoopIdentical, c.Loop.Type)
	assert.ElementsMatch(t, ids, c.Loop.Evidence["previous"])
	assert.Zero(t, calls.count(), "nothing is sent to agents")
	assert.NotEmpty(t, c.EscalationID)
	evs := bus.Events()
	require.NotEmpty(t, evs)
	assert.Equal(t, consultations.DetailType, evs[len(evs)-1].DetailType)
}

func withClock(svc *consultations.Service) (*memstore.Clock, time.Time) {
	t0 := time.Date(2025, 11, 1, 9, 0, 0, 0, time.UTC)
	c := memstore.NewClock(t0)
	svc.Now = c.Now
	return c, t0
}

// Only the same requester's near-identical questions within the hour
// count: older ones, another requester's, and a merely similar question
// do not.
func TestIdenticalQuestionsCountOnlyTheSameRequesterWithinTheHour(t *testing.T) {
	q := "What fields does the User model API return?"
	twice := func(t *testing.T) (*consultations.Service, *memstore.Clock, time.Time) {
		t.Helper()
		svc, _, _ := fixture(t)
		clk, t0 := withClock(svc)
		for range 2 {
			c, err := svc.Request(context.Background(), team, ask("frontend", q))
			require.NoError(t, err)
			require.Equal(t, consultations.Completed, c.Status)
		}
		return svc, clk, t0
	}
	third := func(t *testing.T, svc *consultations.Service, from, question string) consultations.Consultation {
		t.Helper()
		c, err := svc.Request(context.Background(), team, ask(from, question))
		require.NoError(t, err)
		return c
	}

	t.Run("within the hour", func(t *testing.T) {
		svc, clk, t0 := twice(t)
		clk.Set(t0.Add(59 * time.Minute))
		c := third(t, svc, "frontend", q)
		assert.Equal(t, consultations.Escalated, c.Status)
		require.NotNil(t, c.Loop)
		assert.Equal(t, consultations.LoopIdentical, c.Loop.Type)
	})
	t.Run("exactly an hour old", func(t *testing.T) {
		svc, clk, t0 := twice(t)
		clk.Set(t0.Add(consultations.IdenticalWindow))
		c := third(t, svc, "frontend", q)
		assert.Equal(t, consultations.Escalated, c.Status, "the hour includes its last instant")
	})
	t.Run("older than the hour", func(t *testing.T) {
		svc, clk, t0 := twice(t)
		clk.Set(t0.Add(61 * time.Minute))
		c := third(t, svc, "frontend", q)
		assert.Equal(t, consultations.Completed, c.Status)
		assert.Nil(t, c.Loop)
	})
	t.Run("similar but not near-identical", func(t *testing.T) {
		svc, _, _ := twice(t)
		similar := "What fields does the User model API return today?"
		sim := consultations.Similarity(q, similar)
		require.Greater(t, sim, 0.85, "close to the threshold")
		require.LessOrEqual(t, sim, consultations.IdenticalThreshold)
		c := third(t, svc, "frontend", similar)
		assert.Equal(t, consultations.Completed, c.Status)
		assert.Nil(t, c.Loop)
	})
	t.Run("another requester", func(t *testing.T) {
		svc, _, _ := twice(t)
		c := third(t, svc, "security", q)
		assert.Equal(t, consultations.Completed, c.Status)
		assert.Nil(t, c.Loop)
	})
}

// A question the requester already asked as a clarification of another
// consultation counts toward the three, as do the follow-ups of the same
// consultation.
func TestIdenticalQuestionsCountClarificationsAndFollowUps(t *testing.T) {
	ctx := context.Background()
	again := "Is the created_at field of the User model in UTC?"
	t.Run("a clarification of another consultation", func(t *testing.T) {
		svc, _, _ := fixture(t)
		first, err := svc.Request(ctx, team, ask("frontend", "What fields does the User model API return?"))
		require.NoError(t, err)
		_, err = svc.Exchange(ctx, team, first.ID, consultations.ExchangeInput{Message: again})
		require.NoError(t, err)
		second, err := svc.Request(ctx, team, ask("frontend", again))
		require.NoError(t, err)
		require.Equal(t, consultations.Completed, second.Status, "twice is not a loop")
		third, err := svc.Request(ctx, team, ask("frontend", again))
		require.NoError(t, err)
		assert.Equal(t, consultations.Escalated, third.Status)
		require.NotNil(t, third.Loop)
		assert.ElementsMatch(t, []string{first.ID, second.ID}, third.Loop.Evidence["previous"])
	})
	t.Run("follow-ups of the same consultation", func(t *testing.T) {
		svc, _, _ := fixture(t)
		c, err := svc.Request(ctx, team, ask("frontend", "What fields does the User model API return?"))
		require.NoError(t, err)
		for range 2 {
			c, err = svc.Exchange(ctx, team, c.ID, consultations.ExchangeInput{Message: again})
			require.NoError(t, err)
			require.Equal(t, consultations.Completed, c.Status)
		}
		c, err = svc.Exchange(ctx, team, c.ID, consultations.ExchangeInput{Message: again})
		require.NoError(t, err)
		assert.Equal(t, consultations.Escalated, c.Status, "the third time the same follow-up")
		require.NotNil(t, c.Loop)
		assert.Equal(t, consultations.LoopIdentical, c.Loop.Type)
	})
}

func TestCircularWaitEscalates(t *testing.T) {
	svc, _, _ := fixture(t)
	ctx := context.Background()
	h := ct.NewSpecialist()
	svc.Model = h
	asking := ct.Background(func() (consultations.Consultation, error) {
		return svc.Request(ctx, team, ask("frontend", ct.Hold+" What fields does the User model API endpoint return?"))
	})
	h.Held(t, 1)
	// backend, asked by frontend and still answering, now asks frontend:
	// they would wait on each other.
	b, err := svc.Request(ctx, team, ask("backend", "Which react ui css component shows the profile?"))
	require.NoError(t, err)
	assert.Equal(t, "frontend", b.ConsultedAgent)
	assert.Equal(t, consultations.Escalated, b.Status)
	require.NotNil(t, b.Loop)
	assert.Equal(t, consultations.LoopCircular, b.Loop.Type)
	h.LetGo()
	a := <-asking
	require.NoError(t, a.Err)
	require.Equal(t, "backend", a.Consultation.ConsultedAgent)
	assert.Equal(t, a.Consultation.ID, b.Loop.Evidence["open_consultation"])
}

func TestFiveExchangesWithoutResolutionIsAStall(t *testing.T) {
	svc, _, _ := fixture(t)
	ctx := context.Background()
	c, err := svc.Request(ctx, team, ask("frontend", "What fields does the User model API return?"))
	require.NoError(t, err)
	follow := []string{"And the avatar URL format?", "Is created_at UTC?", "Are preferences versioned?", "Who may change the email?"}
	for _, f := range follow {
		c, err = svc.Exchange(ctx, team, c.ID, consultations.ExchangeInput{Message: f})
		require.NoError(t, err)
		require.Equal(t, consultations.Completed, c.Status)
	}
	require.Len(t, c.Exchanges, consultations.MaxExchanges)
	c, err = svc.Exchange(ctx, team, c.ID, consultations.ExchangeInput{Message: "What about the deleted_at field?"})
	require.NoError(t, err)
	assert.Equal(t, consultations.Escalated, c.Status)
	assert.Equal(t, consultations.LoopStall, c.Loop.Type)
	assert.Len(t, c.Exchanges, consultations.MaxExchanges, "the sixth message is not sent")
	_, err = svc.Exchange(ctx, team, c.ID, consultations.ExchangeInput{Message: "hello?"})
	assert.Equal(t, "NotOpen", ct.Reason(err))
}

// Concurrent requests of one agent while their answers are being
// written: three get a slot, the rest escalate as too_many_concurrent.
func TestAtMostThreeActiveConsultationsUnderConcurrency(t *testing.T) {
	svc, store, _ := fixture(t)
	ctx := context.Background()
	h := ct.NewSpecialist()
	svc.Model = h
	questions := []string{"api model fields", "jwt auth token", "database schema", "endpoint errors", "security review", "css layout", "api pagination", "auth session"}
	results := make(chan ct.Outcome, len(questions))
	for _, q := range questions {
		go func() {
			c, err := svc.Request(ctx, team, ask("frontend", ct.Hold+" "+q))
			results <- ct.Outcome{Consultation: c, Err: err}
		}()
	}
	// The answers being written return only when let go: the first to
	// return are the ones refused a slot.
	for range len(questions) - consultations.MaxActivePerAgent {
		o := <-results
		require.NoError(t, o.Err)
		assert.Equal(t, consultations.Escalated, o.Consultation.Status)
		if assert.NotNil(t, o.Consultation.Loop) {
			assert.Equal(t, consultations.LoopTooManyActive, o.Consultation.Loop.Type)
		}
	}
	h.Held(t, consultations.MaxActivePerAgent)
	ids, err := store.ActiveConsultations(ctx, team, "frontend")
	require.NoError(t, err)
	assert.Len(t, ids, consultations.MaxActivePerAgent)
	h.LetGo()
	for range consultations.MaxActivePerAgent {
		o := <-results
		require.NoError(t, o.Err)
		assert.Equal(t, consultations.Completed, o.Consultation.Status)
	}
	assert.Equal(t, consultations.MaxActivePerAgent, freeSlots(t, store, team, "frontend"))
}

func TestAHumanResolvesAnEscalation(t *testing.T) {
	svc, store, _ := fixture(t)
	ctx := context.Background()
	svc.Model = failing{}
	c, err := svc.Request(ctx, team, ask("frontend", "What fields does the User model API return?"))
	require.NoError(t, err)
	require.Equal(t, consultations.Escalated, c.Status)
	assert.Equal(t, consultations.EscalSpecialistError, c.Loop.Type)

	open, _, err := svc.Escalations(ctx, team, "", paging.Page{})
	require.NoError(t, err)
	require.Len(t, open, 1)
	e, err := svc.Resolve(ctx, team, open[0].ID, consultations.ResolveInput{Answer: "id, username, email, preferences"})
	require.NoError(t, err)
	assert.Equal(t, consultations.EscalationResolved, e.Status)
	got, err := svc.Get(ctx, team, c.ID)
	require.NoError(t, err)
	assert.Equal(t, consultations.Completed, got.Status)
	assert.Equal(t, "human", got.ResolvedBy)
	inbox, _, err := store.ListInbox(ctx, team, "frontend", true, paging.Page{Limit: 10})
	require.NoError(t, err)
	require.Len(t, inbox, 1)
	assert.Contains(t, inbox[0].Content, "id, username, email, preferences")
	_, err = svc.Resolve(ctx, team, e.ID, consultations.ResolveInput{Answer: "again"})
	assert.True(t, apperr.Is(err, apperr.ECONFLICT))
	// The human's answer is rated like the specialist's; a follow-up goes
	// to a new question.
	_, err = svc.Exchange(ctx, team, c.ID, consultations.ExchangeInput{Message: "And the avatar URL?"})
	assert.Equal(t, "NotOpen", ct.Reason(err))
	_, err = svc.RecordOutcome(ctx, team, c.ID, consultations.OutcomeInput{Rating: 4})
	require.NoError(t, err)
}

func TestMetricsAddUp(t *testing.T) {
	svc, store, _ := fixture(t)
	ctx := context.Background()
	// The backend developer also runs migrations: a second reason within
	// one pair.
	ben, err := store.GetAgent(ctx, team, "backend")
	require.NoError(t, err)
	ben.Skills = append(ben.Skills, agents.Skill{Name: "data-migration", Description: "migrations, backfills", Keywords: []string{"migration", "backfill"}})
	ben.Version++
	require.NoError(t, store.UpdateAgent(ctx, ben))
	svc.Model = priced{}
	request := func(from, q string, rating int) consultations.Consultation {
		t.Helper()
		c, err := svc.Request(ctx, team, ask(from, q))
		require.NoError(t, err)
		if rating > 0 {
			require.Equal(t, consultations.Completed, c.Status, q)
			c, err = svc.RecordOutcome(ctx, team, c.ID, consultations.OutcomeInput{Rating: rating})
			require.NoError(t, err)
		}
		return c
	}
	q := "What fields does the User model API return?"
	assert.Equal(t, "api-design", request("frontend", q, 5).ConsultationReason)
	request("frontend", q, 2)
	loop := request("frontend", q, 0)
	require.Equal(t, consultations.Escalated, loop.Status, "the third time is a loop")
	mig := request("frontend", "How do I run the backfill migration safely?", 4)
	require.Equal(t, "backend", mig.ConsultedAgent)
	assert.Equal(t, "data-migration", mig.ConsultationReason)
	request("frontend", "Is the JWT auth token secure?", 1)
	request("security", "Which database schema fields hold the API?", 0)

	m, err := svc.Metrics(ctx, team)
	require.NoError(t, err)
	assert.Equal(t, 6, m.Total)
	pairs := map[string]consultations.PairMetrics{}
	sum := 0
	for _, p := range m.Pairs {
		pairs[p.RequestingAgent+">"+p.ConsultedAgent] = p
		sum += p.Count
		states := p.ByOutcome["successful"] + p.ByOutcome["unsuccessful"] + p.ByOutcome["answered"] + p.ByOutcome["human_resolved"] + p.ByOutcome["abandoned"] + p.ByOutcome["open"]
		assert.Equal(t, p.Count, states)
	}
	assert.Equal(t, m.Total, sum)
	require.Len(t, pairs, 3)
	var order []string
	for _, p := range m.Pairs {
		order = append(order, p.RequestingAgent+">"+p.ConsultedAgent)
	}
	assert.Equal(t, []string{"frontend>backend", "frontend>security", "security>backend"}, order, "the busiest pair first, then by name")

	// One call of the priced model costs $0.006 (1000 input tokens at $3
	// and 200 output tokens at $15 per million); the loop called none.
	fb := pairs["frontend>backend"]
	assert.Equal(t, 4, fb.Count)
	assert.Equal(t, map[string]int{"successful": 2, "unsuccessful": 1, "open": 1, "loop:" + consultations.LoopIdentical: 1}, fb.ByOutcome)
	assert.InDelta(t, 0.667, fb.SuccessRate, 1e-9, "ratings 5 and 4 of 5, 2, 4")
	assert.InDelta(t, 3.667, fb.AvgRating, 1e-9)
	assert.InDelta(t, 0.25, fb.LoopRate, 1e-9)
	assert.InDelta(t, 0.75, fb.AvgExchanges, 1e-9)
	assert.InDelta(t, 0.018, fb.CostUSD, 1e-9)
	assert.Equal(t, 3*1200, fb.TokensUsed)
	assert.Equal(t, map[string]int{"api-design": 3, "data-migration": 1}, fb.ByReason)
	assert.Equal(t, map[string]float64{"api-design": 0.5, "data-migration": 1}, fb.SuccessRateByReason)

	fs := pairs["frontend>security"]
	assert.Equal(t, 1, fs.Count)
	assert.Zero(t, fs.SuccessRate)
	assert.InDelta(t, 1.0, fs.AvgRating, 1e-9)
	assert.Zero(t, fs.LoopRate)
	assert.InDelta(t, 0.006, fs.CostUSD, 1e-9)
	assert.Equal(t, map[string]float64{"security-review": 0}, fs.SuccessRateByReason)

	// Unrated: no success rate for its reason, rather than a 0.
	sb := pairs["security>backend"]
	assert.Equal(t, map[string]int{"answered": 1}, sb.ByOutcome)
	assert.Zero(t, sb.AvgRating)
	assert.Empty(t, sb.SuccessRateByReason)

	raw, err := json.Marshal(m)
	require.NoError(t, err)
	var doc struct {
		Pairs []map[string]any `json:"pairs"`
	}
	require.NoError(t, json.Unmarshal(raw, &doc))
	for _, p := range doc.Pairs {
		ms, ok := p["avg_response_ms"].(float64)
		assert.True(t, ok, "avg_response_ms is in every pair: %v", p)
		assert.GreaterOrEqual(t, ms, 0.0)
		assert.Contains(t, p, "success_rate_by_reason")
	}
}

func TestLexicalSimilarity(t *testing.T) {
	assert.InDelta(t, 1.0, consultations.Similarity("What fields does the User model have?", "the user MODEL: what fields does it have"), 0.001)
	assert.Less(t, consultations.Similarity("deploy with docker volumes", "user model fields"), 0.1)
	assert.Zero(t, consultations.Similarity("", "x y"))
}

// recorder is a model that records what it is sent.
type recorder struct {
	mu   sync.Mutex
	seen []string
}

func (r *recorder) Converse(_ context.Context, req models.Request) (models.Response, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, req.System)
	for _, m := range req.Messages {
		r.seen = append(r.seen, m.Content)
	}
	return models.Response{Text: `{"answer":"use the fields","suggested_next_steps":["try it"]}`, InputTokens: 10, OutputTokens: 5, ModelID: "local-deterministic"}, nil
}

func (r *recorder) all() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.seen, "\n")
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.seen)
}

// priced answers as a priced model would: 1000 input and 200 output
// tokens of a model with a known price.
type priced struct{}

func (priced) Converse(context.Context, models.Request) (models.Response, error) {
	return models.Response{Text: `{"answer":"here it is"}`, InputTokens: 1000, OutputTokens: 200, ModelID: "anthropic.claude-3-5-sonnet-20240620-v1:0"}, nil
}

// answering answers every question with text.
type answering string

func (a answering) Converse(context.Context, models.Request) (models.Response, error) {
	return models.Response{Text: string(a), InputTokens: 10, OutputTokens: 5, ModelID: "local-deterministic"}, nil
}

type failing struct{}

func (failing) Converse(context.Context, models.Request) (models.Response, error) {
	return models.Response{}, models.ErrModel
}

// An active consultation is stale only once idle for longer than
// IdleLimit: at exactly the limit it is still being answered.
func TestStaleIsPastTheIdleLimit(t *testing.T) {
	t0 := time.Date(2025, 11, 1, 9, 0, 0, 0, time.UTC)
	c := consultations.Consultation{Status: consultations.InProgress, UpdatedAt: t0}
	assert.False(t, c.Stale(t0.Add(consultations.IdleLimit)), "at the limit")
	assert.True(t, c.Stale(t0.Add(consultations.IdleLimit+time.Second)))
	c.Status = consultations.Completed
	assert.False(t, c.Stale(t0.Add(consultations.IdleLimit+time.Hour)), "an ended consultation is never stale")
}

// The stored consultation_reason wins; one stored before the field existed
// is derived from the decision: the selected candidate's first matched
// skill.
func TestReasonIsStoredOrDerived(t *testing.T) {
	d := consultations.Decision{Selected: "backend", Candidates: []consultations.Candidate{
		{Slug: "security", Matched: []string{"auth-review"}}, {Slug: "backend", Matched: []string{"api-design", "sql"}}}}
	assert.Equal(t, "api-design", consultations.Consultation{Decision: d}.Reason())
	assert.Equal(t, "stored", consultations.Consultation{Decision: d, ConsultationReason: "stored"}.Reason())
}

// Near-identical means more similar than IdenticalThreshold: a question
// exactly at 0.95 to the earlier ones (as questions, as clarifications of
// other consultations, or as follow-ups of this one) is another question.
func TestAQuestionExactlyAtTheThresholdIsNotARepeat(t *testing.T) {
	ctx := context.Background()
	asked := "user user user api api model fields endpoint"
	// Term counts (3,2,1,1,1) and (4,2,1,1,1,1,1): a cosine of 19/20.
	now := "user user user user api api model fields endpoint schema database"
	require.Equal(t, consultations.IdenticalThreshold, consultations.Similarity(asked, now))
	unrelated := "Which database schema stores sessions?"

	t.Run("as questions", func(t *testing.T) {
		svc, _, _ := fixture(t)
		for range 2 {
			_, err := svc.Request(ctx, team, ask("frontend", asked))
			require.NoError(t, err)
		}
		c, err := svc.Request(ctx, team, ask("frontend", now))
		require.NoError(t, err)
		assert.Equal(t, consultations.Completed, c.Status)
	})
	t.Run("as clarifications", func(t *testing.T) {
		svc, _, _ := fixture(t)
		for range 2 {
			c, err := svc.Request(ctx, team, ask("frontend", unrelated))
			require.NoError(t, err)
			_, err = svc.Exchange(ctx, team, c.ID, consultations.ExchangeInput{Message: asked})
			require.NoError(t, err)
		}
		c, err := svc.Request(ctx, team, ask("frontend", now))
		require.NoError(t, err)
		assert.Equal(t, consultations.Completed, c.Status)
	})
	t.Run("as follow-ups", func(t *testing.T) {
		svc, _, _ := fixture(t)
		c, err := svc.Request(ctx, team, ask("frontend", unrelated))
		require.NoError(t, err)
		for range 2 {
			c, err = svc.Exchange(ctx, team, c.ID, consultations.ExchangeInput{Message: asked})
			require.NoError(t, err)
			require.Equal(t, consultations.Completed, c.Status)
		}
		c, err = svc.Exchange(ctx, team, c.ID, consultations.ExchangeInput{Message: now})
		require.NoError(t, err)
		assert.Equal(t, consultations.Completed, c.Status)
	})
}

// pagedEscalations serves the two listings from fixed lists, a page at a
// time (the token is the offset), refusing a page of 0 as DynamoDB does.
type pagedEscalations struct {
	*memstore.Store
	open, resolved []consultations.Escalation
}

func (s pagedEscalations) ListEscalations(_ context.Context, _ string, st consultations.EscalationStatus, p paging.Page) ([]consultations.Escalation, string, error) {
	if p.Limit < 1 {
		return nil, "", errors.New("ValidationException: Limit must be at least 1") // as DynamoDB's Query
	}
	list := s.open
	if st == consultations.EscalationResolved {
		list = s.resolved
	}
	off := 0
	if p.Token != "" {
		off, _ = strconv.Atoi(p.Token)
	}
	end := min(off+p.Limit, len(list))
	next := ""
	if end < len(list) {
		next = strconv.Itoa(end)
	}
	return list[off:end], next, nil
}

// Both listings: the open escalations first, page by page, then the
// resolved ones, no page longer than asked.
func TestEscalationsListOpenThenResolvedAcrossPages(t *testing.T) {
	ctx := context.Background()
	esc := func(ids ...string) []consultations.Escalation {
		var out []consultations.Escalation
		for _, id := range ids {
			out = append(out, consultations.Escalation{ID: id})
		}
		return out
	}
	idsOf := func(list []consultations.Escalation) []string {
		out := []string{}
		for _, e := range list {
			out = append(out, e.ID)
		}
		return out
	}
	svc, store, _ := fixture(t)
	svc.Store = pagedEscalations{Store: store, open: esc("o1", "o2", "o3"), resolved: esc("r1", "r2")}
	var pages [][]string
	token := ""
	for range 5 {
		list, next, err := svc.Escalations(ctx, team, "", paging.Page{Limit: 2, Token: token})
		require.NoError(t, err)
		pages = append(pages, idsOf(list))
		if next == "" {
			break
		}
		token = next
	}
	assert.Equal(t, [][]string{{"o1", "o2"}, {"o3", "r1"}, {"r2"}}, pages)

	// Exactly a page of open ones: the next page starts the resolved.
	svc.Store = pagedEscalations{Store: store, open: esc("o1", "o2"), resolved: esc("r1")}
	list, next, err := svc.Escalations(ctx, team, "", paging.Page{Limit: 2})
	require.NoError(t, err)
	assert.Equal(t, []string{"o1", "o2"}, idsOf(list))
	list, next, err = svc.Escalations(ctx, team, "", paging.Page{Limit: 2, Token: next})
	require.NoError(t, err)
	assert.Equal(t, []string{"r1"}, idsOf(list))
	assert.Empty(t, next)
}

// A human's answer may be exactly MaxAnswer characters and resolved_by
// exactly 200; an escalation resolved without a name is the human's.
func TestResolveAcceptsItsBounds(t *testing.T) {
	ctx := context.Background()
	escalated := func(t *testing.T, svc *consultations.Service) string {
		t.Helper()
		var c consultations.Consultation
		for range 3 {
			var err error
			c, err = svc.Request(ctx, team, ask("frontend", "What fields does the User model API return?"))
			require.NoError(t, err)
		}
		require.Equal(t, consultations.Escalated, c.Status)
		return c.EscalationID
	}
	svc, _, _ := fixture(t)
	_, err := svc.Resolve(ctx, team, escalated(t, svc), consultations.ResolveInput{Answer: strings.Repeat("é", consultations.MaxAnswer+1)})
	assert.Equal(t, "answer", fieldOf(err))
	_, err = svc.Resolve(ctx, team, escalated(t, svc), consultations.ResolveInput{Answer: "ok", ResolvedBy: strings.Repeat("é", 201)})
	assert.Equal(t, "resolved_by", fieldOf(err))

	svc, _, _ = fixture(t)
	e, err := svc.Resolve(ctx, team, escalated(t, svc), consultations.ResolveInput{Answer: strings.Repeat("é", consultations.MaxAnswer), ResolvedBy: strings.Repeat("é", 200)})
	require.NoError(t, err)
	assert.Equal(t, consultations.EscalationResolved, e.Status)

	svc, _, _ = fixture(t)
	e, err = svc.Resolve(ctx, team, escalated(t, svc), consultations.ResolveInput{Answer: "use the schema"})
	require.NoError(t, err)
	assert.Equal(t, "human", e.ResolvedBy)
}

func fieldOf(err error) string {
	ae, ok := apperr.As(err)
	if !ok {
		return ""
	}
	return ae.Field
}

// A follow-up may be exactly MaxQuestion characters long, not one more.
func TestAFollowUpAtTheLengthLimit(t *testing.T) {
	svc, _, _ := fixture(t)
	ctx := context.Background()
	c, err := svc.Request(ctx, team, ask("frontend", "What fields does the User model API return?"))
	require.NoError(t, err)
	_, err = svc.Exchange(ctx, team, c.ID, consultations.ExchangeInput{Message: strings.Repeat("é", consultations.MaxQuestion+1)})
	assert.Equal(t, "message", fieldOf(err))
	_, err = svc.Exchange(ctx, team, c.ID, consultations.ExchangeInput{Message: "And the avatar? " + strings.Repeat("é", consultations.MaxQuestion-16)})
	assert.NoError(t, err)
}

// An outcome is rated 1 to 5, both included, with lessons of at most
// MaxLessons characters.
func TestAnOutcomeAtItsBounds(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		in    consultations.OutcomeInput
		field string
	}{
		{consultations.OutcomeInput{Rating: 0}, "rating"},
		{consultations.OutcomeInput{Rating: 6}, "rating"},
		{consultations.OutcomeInput{Rating: 3, LessonsLearned: strings.Repeat("é", consultations.MaxLessons+1)}, "lessons_learned"},
		{consultations.OutcomeInput{Rating: 1}, ""},
		{consultations.OutcomeInput{Rating: 5, LessonsLearned: strings.Repeat("é", consultations.MaxLessons)}, ""},
	} {
		svc, _, _ := fixture(t)
		cons, err := svc.Request(ctx, team, ask("frontend", "What fields does the User model API return?"))
		require.NoError(t, err)
		_, err = svc.RecordOutcome(ctx, team, cons.ID, c.in)
		if c.field == "" {
			assert.NoError(t, err, c.in.Rating)
			continue
		}
		assert.Equal(t, c.field, fieldOf(err), c.in.Rating)
	}
}

// The requester's context lists hold at most MaxListItems items of at most
// MaxListItem characters each, both bounds included.
func TestARequestsContextListsAtTheirBounds(t *testing.T) {
	ctx := context.Background()
	items := func(n, size int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = strings.Repeat("é", size)
		}
		return out
	}
	svc, _, _ := fixture(t)
	in := ask("frontend", "What fields does the User model API return?")
	in.Context.RelevantFiles = items(consultations.MaxListItems+1, 5)
	_, err := svc.Request(ctx, team, in)
	assert.Equal(t, "context.relevant_files", fieldOf(err))
	in.Context.RelevantFiles = items(1, consultations.MaxListItem+1)
	_, err = svc.Request(ctx, team, in)
	assert.Equal(t, "context.relevant_files", fieldOf(err))
	in.Context.RelevantFiles = items(consultations.MaxListItems, consultations.MaxListItem)
	_, err = svc.Request(ctx, team, in)
	assert.NoError(t, err)
}

// recordingGate answers every question with one specialist and records
// that it was asked.
type recordingGate struct {
	asked []string
	best  string
	fail  bool
}

func (g *recordingGate) Score(_ context.Context, req expertgate.Request) (expertgate.Response, error) {
	g.asked = append(g.asked, req.Query)
	if g.fail {
		return expertgate.Response{}, apperr.New(apperr.EINTERNAL, "the expert gate failed")
	}
	return expertgate.Response{Scores: []routing.ExpertScore{{AgentSlug: g.best, AgentName: g.best, Overall: 0.9, Confidence: 0.9, SkillMatch: 0.9}}}, nil
}

// A consultation's specialist is ranked by the gate it is given (the
// expert-gate function's client in every function, as for a chat turn),
// not by a gate of its own.
func TestAConsultationRanksWithTheGateItIsGiven(t *testing.T) {
	store := memstore.New()
	seedTeam(t, store, team)
	gate := &recordingGate{best: "frontend"} // by words, security would answer
	svc := consultations.New(store, gate, localmodelwiring.New(store), &memstore.Publisher{}, nil, nil)
	c, err := svc.Request(context.Background(), team, ask("backend", "Is this authentication token handling a security vulnerability?"))
	require.NoError(t, err)
	assert.Len(t, gate.asked, 1)
	assert.Equal(t, "frontend", c.ConsultedAgent)

	// A gate that fails: the specialist is ranked in process, by words.
	gate.fail = true
	c, err = svc.Request(context.Background(), team, ask("backend", "Is this authentication token handling a security vulnerability?"))
	require.NoError(t, err)
	assert.Len(t, gate.asked, 2)
	assert.Equal(t, "security", c.ConsultedAgent)
}
