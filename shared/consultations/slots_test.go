package consultations_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/consultations"
	"github.com/conclave-ai/conclave/shared/memstore"
	"github.com/conclave-ai/conclave/shared/messaging"
	"github.com/conclave-ai/conclave/shared/models"
)

// Distinct questions of frontend's, none near-identical to another, each
// for the backend developer or the security expert.
var frontendQuestions = []string{
	"What fields does the User model API return?",
	"Is the JWT auth token secure?",
	"Which database schema stores sessions?",
	"Which endpoint paginates the orders?",
	"Is the login vulnerable to replay?",
	"Which API model holds the preferences?",
}

// An answered consultation its requester never closes holds its slot only
// while it is fresh: once idle longer than IdleLimit, it is closed when
// the requester needs the slot, and exactly its slot is given back. A
// follow-up keeps it fresh.
func TestAnAbandonedConsultationGivesItsSlotBack(t *testing.T) {
	svc, _, _ := fixture(t)
	ctx := context.Background()
	clk, t0 := withClock(svc)
	var held []consultations.Consultation
	for _, q := range frontendQuestions[:3] {
		c, err := svc.Request(ctx, team, ask("frontend", q))
		require.NoError(t, err)
		require.Equal(t, consultations.InProgress, c.Status)
		held = append(held, c)
	}
	clk.Set(t0.Add(20 * time.Minute))
	_, err := svc.Exchange(ctx, team, held[2].ID, consultations.ExchangeInput{Message: "And the avatar URL format?"})
	require.NoError(t, err)
	c, err := svc.Request(ctx, team, ask("frontend", frontendQuestions[3]))
	require.NoError(t, err)
	require.Equal(t, consultations.Escalated, c.Status, "three fresh consultations hold the three slots")
	require.Equal(t, consultations.LoopTooManyActive, c.Loop.Type)

	// Past the idle limit for the first two; the third was followed up.
	clk.Set(t0.Add(consultations.IdleLimit + time.Minute))
	for _, q := range frontendQuestions[4:6] {
		c, err := svc.Request(ctx, team, ask("frontend", q))
		require.NoError(t, err)
		assert.Equal(t, consultations.InProgress, c.Status, q)
	}
	for i, h := range held[:2] {
		got, err := svc.Get(ctx, team, h.ID)
		require.NoError(t, err)
		assert.Equal(t, consultations.Completed, got.Status, i)
		assert.Equal(t, consultations.ClosedIdle, got.ClosedReason, i)
		require.NotNil(t, got.CompletedAt)
	}
	kept, err := svc.Get(ctx, team, held[2].ID)
	require.NoError(t, err)
	assert.Equal(t, consultations.InProgress, kept.Status, "followed up 11 minutes ago: not idle")

	// Two slots were given back, not more.
	c, err = svc.Request(ctx, team, ask("frontend", "Which css grid fits the react profile card?"))
	require.NoError(t, err)
	assert.Equal(t, consultations.Escalated, c.Status)
	require.NotNil(t, c.Loop)
	assert.Equal(t, consultations.LoopTooManyActive, c.Loop.Type)
	assert.Len(t, c.Loop.Evidence["active_consultations"], consultations.MaxActivePerAgent)
	assert.Contains(t, c.Loop.Evidence["active_consultations"], held[2].ID)

	// An abandoned one can still be rated; it gives no slot back twice.
	_, err = svc.RecordOutcome(ctx, team, held[0].ID, consultations.OutcomeInput{Rating: 4})
	require.NoError(t, err)
	m, err := svc.Metrics(ctx, team)
	require.NoError(t, err)
	found := false
	for _, p := range m.Pairs {
		if p.RequestingAgent == "frontend" && p.ConsultedAgent == held[1].ConsultedAgent {
			found = true
			assert.Equal(t, 1, p.ByOutcome["abandoned"], "%+v", p)
		}
	}
	assert.True(t, found)
}

// An abandoned consultation is not a wait: the specialist may ask its
// requester back once it is idle (a fresh one is a circular wait), and
// once it is closed with its outcome.
func TestAnAbandonedOrClosedConsultationIsNotACircularWait(t *testing.T) {
	svc, _, _ := fixture(t)
	ctx := context.Background()
	clk, t0 := withClock(svc)
	a, err := svc.Request(ctx, team, ask("frontend", "What fields does the User model API endpoint return?"))
	require.NoError(t, err)
	require.Equal(t, "backend", a.ConsultedAgent)
	back := func(q string) consultations.Consultation {
		t.Helper()
		c, err := svc.Request(ctx, team, ask("backend", q))
		require.NoError(t, err)
		require.Equal(t, "frontend", c.ConsultedAgent)
		return c
	}

	clk.Set(t0.Add(10 * time.Minute))
	fresh := back("Which react ui css component shows the profile?")
	assert.Equal(t, consultations.Escalated, fresh.Status)
	require.NotNil(t, fresh.Loop)
	assert.Equal(t, consultations.LoopCircular, fresh.Loop.Type)

	clk.Set(t0.Add(consultations.IdleLimit + time.Minute))
	idle := back("Which react css layout renders the avatar?")
	assert.Equal(t, consultations.InProgress, idle.Status)
	assert.Nil(t, idle.Loop)

	// Closed with its outcome: frontend may ask backend again, though
	// backend's consultation of frontend is fresh.
	_, err = svc.RecordOutcome(ctx, team, idle.ID, consultations.OutcomeInput{Rating: 5})
	require.NoError(t, err)
	again := back("Which react ui css theme does the settings page use?")
	require.Equal(t, consultations.InProgress, again.Status)
	_, err = svc.RecordOutcome(ctx, team, again.ID, consultations.OutcomeInput{Rating: 5})
	require.NoError(t, err)
	c, err := svc.Request(ctx, team, ask("frontend", "Which database schema holds the user preferences?"))
	require.NoError(t, err)
	assert.Equal(t, consultations.InProgress, c.Status)
}

// A caller whose deadline passes while the specialist thinks (a chat
// turn's tool bound) still leaves the consultation escalated and its slot
// free: the writes after the call do not use the expired context.
func TestATimedOutAnswerEscalatesAndFreesTheSlot(t *testing.T) {
	svc, store, bus := fixture(t)
	svc.Store = ctxStore{store}
	svc.Bus = ctxBus{bus}
	svc.Model = blocking{}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	c, err := svc.Request(ctx, team, ask("frontend", frontendQuestions[0]))
	require.NoError(t, err)
	require.Error(t, ctx.Err(), "the caller's deadline passed")
	assert.Equal(t, consultations.Escalated, c.Status)
	require.NotNil(t, c.Loop)
	assert.Equal(t, consultations.EscalSpecialistError, c.Loop.Type)

	bg := context.Background()
	got, err := svc.Get(bg, team, c.ID)
	require.NoError(t, err)
	assert.Equal(t, consultations.Escalated, got.Status, "stored escalated, not left pending")
	assert.NotEmpty(t, bus.OfType(consultations.DetailType), "announced")

	// Its slot is free: three more fit.
	svc.Model = priced{}
	for _, q := range frontendQuestions[1:4] {
		c, err := svc.Request(bg, team, ask("frontend", q))
		require.NoError(t, err)
		assert.Equal(t, consultations.InProgress, c.Status, q)
	}
}

// blocking is a specialist that answers only when the caller gives up.
type blocking struct{}

func (blocking) Converse(ctx context.Context, _ models.Request) (models.Response, error) {
	<-ctx.Done()
	return models.Response{}, ctx.Err()
}

// ctxStore fails writes on a done context, as the DynamoDB client does.
type ctxStore struct{ consultations.Store }

func (s ctxStore) CreateConsultation(ctx context.Context, c consultations.Consultation, limit int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.Store.CreateConsultation(ctx, c, limit)
}

func (s ctxStore) CreateEscalated(ctx context.Context, c consultations.Consultation, e consultations.Escalation) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.Store.CreateEscalated(ctx, c, e)
}

func (s ctxStore) SaveConsultation(ctx context.Context, sv consultations.Save) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.Store.SaveConsultation(ctx, sv)
}

func (s ctxStore) ResolveEscalation(ctx context.Context, e consultations.Escalation, c consultations.Consultation, msg messaging.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.Store.ResolveEscalation(ctx, e, c, msg)
}

// ctxBus fails a publish on a done context.
type ctxBus struct{ *memstore.Publisher }

func (b ctxBus) Publish(ctx context.Context, detailType string, detail any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return b.Publisher.Publish(ctx, detailType, detail)
}

// A consultation closed idle before the specialist ever answered (its
// request was cut off after the create) has nothing to rate: an outcome
// is refused, so it counts as no specialist's success or failure.
func TestAConsultationClosedWithoutAnAnswerCannotBeRated(t *testing.T) {
	svc, store, _ := fixture(t)
	ctx := context.Background()
	now := time.Now().UTC()
	cut := consultations.Consultation{TeamID: team, ID: "cons_cut", Status: consultations.Pending, RequestingAgent: "frontend",
		ConsultedAgent: "backend", Question: "What fields does the User model API return?", Version: 1, CreatedAt: now, UpdatedAt: now}
	require.NoError(t, store.CreateConsultation(ctx, cut, consultations.MaxActivePerAgent))
	cut.Status, cut.ClosedReason, cut.CompletedAt, cut.Version = consultations.Completed, consultations.ClosedIdle, &now, 2
	require.NoError(t, store.SaveConsultation(ctx, consultations.Save{Consultation: cut, Release: true}))

	_, err := svc.RecordOutcome(ctx, team, cut.ID, consultations.OutcomeInput{Rating: 5, LessonsLearned: "nothing"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "closed without an answer")
	got, err := svc.Get(ctx, team, cut.ID)
	require.NoError(t, err)
	assert.Nil(t, got.Outcome, "nothing written")
}
