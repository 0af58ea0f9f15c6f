package consultations_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/agents"
	"github.com/conclave-ai/conclave/shared/apperr"
	"github.com/conclave-ai/conclave/shared/consultations"
	"github.com/conclave-ai/conclave/shared/memory"
	"github.com/conclave-ai/conclave/shared/memstore"
	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/models/localmodel"
	"github.com/conclave-ai/conclave/shared/paging"
	"github.com/conclave-ai/conclave/shared/teams"
)

const team = "team_c"

func agent(slug, name string, status string, skill agents.Skill) agents.Agent {
	return agents.Agent{TeamID: team, Slug: slug, Name: name, Status: status, Skills: []agents.Skill{skill}, Version: 1}
}

// fixture is a team of four: a frontend developer who asks, a backend
// developer (APIs, models), a security expert (auth, tokens) and a paused
// devops engineer.
func fixture(t *testing.T) (*consultations.Service, *memstore.Store, *memstore.Publisher) {
	t.Helper()
	store := memstore.New()
	ctx := context.Background()
	require.NoError(t, store.CreateTeam(ctx, teams.Team{ID: team, Name: "c"}, teams.APIKey{ID: "key_c", TeamID: team, Status: "active"}, "hash-c"))
	for _, a := range []agents.Agent{
		agent("frontend", "Fran", agents.StatusActive, agents.Skill{Name: "ui", Description: "user interfaces", Keywords: []string{"ui", "react", "css"}}),
		agent("backend", "Ben", agents.StatusActive, agents.Skill{Name: "api-design", Description: "APIs, database schema, models", Keywords: []string{"api", "model", "database", "schema", "endpoint", "fields"}}),
		agent("security", "Sec", agents.StatusActive, agents.Skill{Name: "security-review", Description: "authentication, vulnerabilities", Keywords: []string{"auth", "authentication", "security", "vulnerability", "token", "jwt"}}),
		agent("devops", "Dev", agents.StatusPaused, agents.Skill{Name: "deploy", Description: "deployment", Keywords: []string{"docker", "deploy"}}),
	} {
		require.NoError(t, store.CreateAgent(ctx, a))
	}
	bus := &memstore.Publisher{}
	svc := consultations.New(store, localmodel.New(store), bus, nil, nil)
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
	assert.Equal(t, consultations.InProgress, c.Status)
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
	in := ask("frontend", "Why does the API reject me? I send Authorization: Bearer abcdefghijklmnop123456 and password=hunter22")
	in.Context = consultations.RequestContext{
		CurrentTask:   "connect to postgres://admin:s3cret@db.internal:5432/app",
		ErrorMessages: []string{"AKIAIOSFODNN7EXAMPLE rejected", "-----BEGIN RSA PRIVATE KEY-----\nMIIEabc\n-----END RSA PRIVATE KEY-----"},
	}
	c, err := svc.Request(context.Background(), team, in)
	require.NoError(t, err)
	for _, secret := range []string{"abcdefghijklmnop123456", "hunter22", "s3cret", "AKIAIOSFODNN7EXAMPLE", "MIIEabc"} {
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

func TestIdenticalQuestionsEscalateTheThirdTime(t *testing.T) {
	svc, _, bus := fixture(t)
	ctx := context.Background()
	q := "What fields does the User model API return?"
	var ids []string
	for i := range 2 {
		c, err := svc.Request(ctx, team, ask("frontend", q))
		require.NoError(t, err)
		require.Equal(t, consultations.InProgress, c.Status, i)
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

func TestCircularWaitEscalates(t *testing.T) {
	svc, _, _ := fixture(t)
	ctx := context.Background()
	a, err := svc.Request(ctx, team, ask("frontend", "What fields does the User model API endpoint return?"))
	require.NoError(t, err)
	require.Equal(t, "backend", a.ConsultedAgent)
	// backend, consulted by frontend and not done with it, now asks
	// frontend: they would wait on each other.
	b, err := svc.Request(ctx, team, ask("backend", "Which react ui css component shows the profile?"))
	require.NoError(t, err)
	assert.Equal(t, "frontend", b.ConsultedAgent)
	assert.Equal(t, consultations.Escalated, b.Status)
	require.NotNil(t, b.Loop)
	assert.Equal(t, consultations.LoopCircular, b.Loop.Type)
	assert.Equal(t, a.ID, b.Loop.Evidence["open_consultation"])
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
		require.Equal(t, consultations.InProgress, c.Status)
	}
	require.Len(t, c.Exchanges, consultations.MaxExchanges)
	c, err = svc.Exchange(ctx, team, c.ID, consultations.ExchangeInput{Message: "What about the deleted_at field?"})
	require.NoError(t, err)
	assert.Equal(t, consultations.Escalated, c.Status)
	assert.Equal(t, consultations.LoopStall, c.Loop.Type)
	assert.Len(t, c.Exchanges, consultations.MaxExchanges, "the sixth message is not sent")
	_, err = svc.Exchange(ctx, team, c.ID, consultations.ExchangeInput{Message: "hello?"})
	assert.True(t, apperr.Is(err, apperr.ECONFLICT))
}

func TestAtMostThreeActiveConsultationsUnderConcurrency(t *testing.T) {
	svc, _, _ := fixture(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	results := make([]consultations.Consultation, 8)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := svc.Request(ctx, team, ask("frontend", []string{"api model fields", "jwt auth token", "database schema", "endpoint errors", "security review", "css layout", "api pagination", "auth session"}[i]))
			assert.NoError(t, err)
			results[i] = c
		}()
	}
	wg.Wait()
	active, limited := 0, 0
	for _, c := range results {
		switch {
		case c.Status == consultations.InProgress:
			active++
		case c.Loop != nil && c.Loop.Type == consultations.LoopTooManyActive:
			limited++
		}
	}
	assert.Equal(t, consultations.MaxActivePerAgent, active)
	assert.Equal(t, len(results)-consultations.MaxActivePerAgent, limited)
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
}

func TestMetricsAddUp(t *testing.T) {
	svc, _, _ := fixture(t)
	ctx := context.Background()
	a, err := svc.Request(ctx, team, ask("frontend", "What fields does the User model API return?"))
	require.NoError(t, err)
	_, err = svc.RecordOutcome(ctx, team, a.ID, consultations.OutcomeInput{Rating: 5})
	require.NoError(t, err)
	b, err := svc.Request(ctx, team, ask("frontend", "Is the JWT auth token secure?"))
	require.NoError(t, err)
	_, err = svc.RecordOutcome(ctx, team, b.ID, consultations.OutcomeInput{Rating: 2})
	require.NoError(t, err)
	_, err = svc.Request(ctx, team, ask("security", "Which database schema fields hold the API token?"))
	require.NoError(t, err)

	m, err := svc.Metrics(ctx, team)
	require.NoError(t, err)
	assert.Equal(t, 3, m.Total)
	sum := 0
	for _, p := range m.Pairs {
		sum += p.Count
		states := p.ByOutcome["successful"] + p.ByOutcome["unsuccessful"] + p.ByOutcome["answered"] + p.ByOutcome["human_resolved"] + p.ByOutcome["open"]
		assert.Equal(t, p.Count, states)
		assert.Positive(t, p.AvgExchanges)
	}
	assert.Equal(t, m.Total, sum)
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

type failing struct{}

func (failing) Converse(context.Context, models.Request) (models.Response, error) {
	return models.Response{}, models.ErrModel
}
