package consultations_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/team/messaging"
	ct "github.com/conclave-ai/conclave/shared/testkit/consultationstest"
	"github.com/conclave-ai/conclave/shared/testkit/memstore"
	"github.com/conclave-ai/conclave/shared/work/consultations"
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

// freeSlots is how many more consultations agent's counter admits: it
// fills them with probes (so it ends a test's use of agent).
func freeSlots(t *testing.T, store consultations.Store, teamID, agent string) int {
	t.Helper()
	now := time.Now().UTC()
	for n := 0; ; n++ {
		probe := consultations.Consultation{TeamID: teamID, ID: fmt.Sprintf("cons_probe%02d", n), Status: consultations.Pending, RequestingAgent: agent,
			ConsultedAgent: "backend", Question: "probe", Version: 1, CreatedAt: now, UpdatedAt: now}
		err := store.CreateConsultation(context.Background(), probe, consultations.MaxActivePerAgent)
		if errors.Is(err, consultations.ErrActiveLimit) {
			return n
		}
		require.NoError(t, err)
		require.Less(t, n, consultations.MaxActivePerAgent, "the counter admits more than the limit")
	}
}

// holdRequests asks one question of frontend's per q, each answer held
// by h, and waits until h holds want answers in all.
func holdRequests(t *testing.T, svc *consultations.Service, h *ct.Specialist, want int, qs ...string) []<-chan ct.Outcome {
	t.Helper()
	var out []<-chan ct.Outcome
	for _, q := range qs {
		out = append(out, ct.Background(func() (consultations.Consultation, error) {
			return svc.Request(context.Background(), team, ask("frontend", ct.Hold+" "+q))
		}))
	}
	h.Held(t, want)
	return out
}

// requireCompleted waits for each outcome: answered, completed.
func requireCompleted(t *testing.T, outcomes ...<-chan ct.Outcome) {
	t.Helper()
	for _, ch := range outcomes {
		o := <-ch
		require.NoError(t, o.Err)
		assert.Equal(t, consultations.Completed, o.Consultation.Status)
	}
}

// An answered consultation is completed and holds no slot: three answered
// ones leave all three slots to consultations being answered, and the
// fourth of those is the one refused. Rating stays possible after
// completion, once, and a rated consultation takes no follow-up.
func TestAnAnswerCompletesTheConsultationAndGivesItsSlotBack(t *testing.T) {
	svc, store, _ := fixture(t)
	ctx := context.Background()
	h := ct.NewSpecialist()
	svc.Model = h
	var done []consultations.Consultation
	for _, q := range frontendQuestions[:3] {
		c, err := svc.Request(ctx, team, ask("frontend", q))
		require.NoError(t, err)
		require.Equal(t, consultations.Completed, c.Status, q)
		require.NotNil(t, c.CompletedAt)
		assert.Equal(t, "specialist", c.ResolvedBy)
		done = append(done, c)
	}
	ids, err := store.ActiveConsultations(ctx, team, "frontend")
	require.NoError(t, err)
	assert.Empty(t, ids, "completed consultations hold no slot")

	pending := holdRequests(t, svc, h, 3, frontendQuestions[3:6]...)
	fourth, err := svc.Request(ctx, team, ask("frontend", "Which css grid fits the react profile card?"))
	require.NoError(t, err)
	assert.Equal(t, consultations.Escalated, fourth.Status, "three answers being written hold the three slots")
	require.NotNil(t, fourth.Loop)
	assert.Equal(t, consultations.LoopTooManyActive, fourth.Loop.Type)
	assert.Len(t, fourth.Loop.Evidence["active_consultations"], consultations.MaxActivePerAgent)
	h.LetGo()
	requireCompleted(t, pending...)

	rated, err := svc.RecordOutcome(ctx, team, done[0].ID, consultations.OutcomeInput{Rating: 4, LessonsLearned: "read the schema first"})
	require.NoError(t, err)
	assert.Equal(t, consultations.Completed, rated.Status)
	require.NotNil(t, rated.CompletedAt)
	assert.True(t, done[0].CompletedAt.Equal(*rated.CompletedAt), "rating does not complete it again")
	_, err = svc.RecordOutcome(ctx, team, done[0].ID, consultations.OutcomeInput{Rating: 2})
	assert.Equal(t, "OutcomeRecorded", ct.Reason(err))
	_, err = svc.Exchange(ctx, team, done[0].ID, consultations.ExchangeInput{Message: "One more thing?"})
	assert.Equal(t, "NotOpen", ct.Reason(err))
	assert.Equal(t, consultations.MaxActivePerAgent, freeSlots(t, store, team, "frontend"), "every slot came back, once")
}

// A follow-up reopens a completed consultation to in_progress, holding a
// slot while its answer is written, and the answer completes it again,
// giving the slot back.
func TestAFollowUpReopensAndHoldsASlotUntilAnswered(t *testing.T) {
	svc, store, _ := fixture(t)
	ctx := context.Background()
	h := ct.NewSpecialist()
	svc.Model = h
	c, err := svc.Request(ctx, team, ask("frontend", frontendQuestions[0]))
	require.NoError(t, err)
	require.Equal(t, consultations.Completed, c.Status)

	follow := ct.Background(func() (consultations.Consultation, error) {
		return svc.Exchange(ctx, team, c.ID, consultations.ExchangeInput{Message: ct.Hold + " Is created_at in UTC?"})
	})
	h.Held(t, 1)
	open, err := svc.Get(ctx, team, c.ID)
	require.NoError(t, err)
	assert.Equal(t, consultations.InProgress, open.Status)
	assert.Nil(t, open.CompletedAt)
	ids, err := store.ActiveConsultations(ctx, team, "frontend")
	require.NoError(t, err)
	assert.Equal(t, []string{c.ID}, ids)
	_, err = svc.Exchange(ctx, team, c.ID, consultations.ExchangeInput{Message: "And the avatar URL?"})
	assert.Equal(t, "NotOpen", ct.Reason(err), "one follow-up at a time")

	// A long-poll waits for the follow-up's answer.
	waited := ct.Background(func() (consultations.Consultation, error) { return svc.Wait(ctx, team, c.ID, 5*time.Second) })
	select {
	case w := <-waited:
		t.Fatalf("the wait ended while the answer was being written: %s", w.Consultation.Status)
	case <-time.After(300 * time.Millisecond):
	}

	h.LetGo()
	o := <-follow
	require.NoError(t, o.Err)
	assert.Equal(t, consultations.Completed, o.Consultation.Status)
	require.Len(t, o.Consultation.Exchanges, 2)
	w := <-waited
	require.NoError(t, w.Err)
	assert.Equal(t, consultations.Completed, w.Consultation.Status, "the wait ended with the answer")
	assert.Len(t, w.Consultation.Exchanges, 2)
	assert.Equal(t, "clarification", o.Consultation.Exchanges[1].Type)
	require.NotNil(t, o.Consultation.CompletedAt)
	ids, err = store.ActiveConsultations(ctx, team, "frontend")
	require.NoError(t, err)
	assert.Empty(t, ids)

	// Again, then rated.
	c, err = svc.Exchange(ctx, team, c.ID, consultations.ExchangeInput{Message: "Are preferences versioned?"})
	require.NoError(t, err)
	assert.Equal(t, consultations.Completed, c.Status)
	assert.Len(t, c.Exchanges, 3)
	_, err = svc.RecordOutcome(ctx, team, c.ID, consultations.OutcomeInput{Rating: 5})
	require.NoError(t, err)
	assert.Equal(t, consultations.MaxActivePerAgent, freeSlots(t, store, team, "frontend"))
}

// A follow-up when its requester already has three answers being written
// is refused (409 ConcurrencyLimit, naming the limit and the holders) and
// changes nothing; once one is answered, the same follow-up goes through.
func TestAFollowUpAtTheLimitIsRefused(t *testing.T) {
	svc, store, _ := fixture(t)
	ctx := context.Background()
	h := ct.NewSpecialist()
	svc.Model = h
	c, err := svc.Request(ctx, team, ask("frontend", frontendQuestions[0]))
	require.NoError(t, err)
	pending := holdRequests(t, svc, h, 3, frontendQuestions[1:4]...)
	calls := h.Calls()

	_, err = svc.Exchange(ctx, team, c.ID, consultations.ExchangeInput{Message: "Is created_at in UTC?"})
	require.Error(t, err)
	ae, ok := apperr.As(err)
	require.True(t, ok, err)
	assert.Equal(t, apperr.ECONFLICT, ae.Code)
	assert.Equal(t, consultations.ReasonActiveLimit, ae.Reason)
	assert.Equal(t, consultations.MaxActivePerAgent, ae.Details["limit"])
	assert.Len(t, ae.Details["active_consultations"], consultations.MaxActivePerAgent)
	assert.NotContains(t, ae.Details["active_consultations"], c.ID)
	got, err := svc.Get(ctx, team, c.ID)
	require.NoError(t, err)
	assert.Equal(t, c.Version, got.Version, "nothing changed")
	assert.Equal(t, consultations.Completed, got.Status)
	assert.Len(t, got.Exchanges, 1)
	assert.Equal(t, calls, h.Calls(), "the specialist was not asked")

	h.LetGo()
	requireCompleted(t, pending...)
	c, err = svc.Exchange(ctx, team, c.ID, consultations.ExchangeInput{Message: "Is created_at in UTC?"})
	require.NoError(t, err)
	assert.Equal(t, consultations.Completed, c.Status)
	assert.Len(t, c.Exchanges, 2)
	assert.Equal(t, consultations.MaxActivePerAgent, freeSlots(t, store, team, "frontend"))
}

// Two follow-ups at once on one consultation take one slot: the version
// condition lets one reopen it, and the other is refused.
func TestTwoFollowUpsAtOnceTakeOneSlot(t *testing.T) {
	svc, store, _ := fixture(t)
	ctx := context.Background()
	h := ct.NewSpecialist()
	svc.Model = h
	c, err := svc.Request(ctx, team, ask("frontend", frontendQuestions[0]))
	require.NoError(t, err)
	// Both read the completed consultation before either reopens it.
	svc.Store = ct.NewReadGate(store, c.ID, 2)
	follow := func(m string) <-chan ct.Outcome {
		return ct.Background(func() (consultations.Consultation, error) {
			return svc.Exchange(ctx, team, c.ID, consultations.ExchangeInput{Message: ct.Hold + " " + m})
		})
	}
	a, b := follow("Is created_at in UTC?"), follow("Are preferences versioned?")
	h.Held(t, 1)
	refused, admitted := ct.First(t, a, b)
	assert.Equal(t, "ConsultationChanged", ct.Reason(refused.Err), refused.Err)
	ids, err := store.ActiveConsultations(ctx, team, "frontend")
	require.NoError(t, err)
	assert.Equal(t, []string{c.ID}, ids)

	h.LetGo()
	o := <-admitted
	require.NoError(t, o.Err)
	assert.Equal(t, consultations.Completed, o.Consultation.Status)
	assert.Len(t, o.Consultation.Exchanges, 2)
	assert.Equal(t, consultations.MaxActivePerAgent, freeSlots(t, store, team, "frontend"), "one slot was taken, and given back")
}

// Two consultations reopened at once for a requester with two answers
// being written: the counter's condition admits exactly one, so three
// are active and the fourth is refused.
func TestTwoReopensAtOnceStopAtTheLimit(t *testing.T) {
	svc, store, _ := fixture(t)
	ctx := context.Background()
	h := ct.NewSpecialist()
	svc.Model = h
	var done []consultations.Consultation
	for _, q := range frontendQuestions[:2] {
		c, err := svc.Request(ctx, team, ask("frontend", q))
		require.NoError(t, err)
		done = append(done, c)
	}
	pending := holdRequests(t, svc, h, 2, frontendQuestions[2:4]...)
	reopen := func(c consultations.Consultation, m string) <-chan ct.Outcome {
		return ct.Background(func() (consultations.Consultation, error) {
			return svc.Exchange(ctx, team, c.ID, consultations.ExchangeInput{Message: ct.Hold + " " + m})
		})
	}
	a, b := reopen(done[0], "And the avatar URL format?"), reopen(done[1], "Which signing algorithm?")
	h.Held(t, 3)
	refused, admitted := ct.First(t, a, b)
	assert.Equal(t, consultations.ReasonActiveLimit, ct.Reason(refused.Err), refused.Err)
	ids, err := store.ActiveConsultations(ctx, team, "frontend")
	require.NoError(t, err)
	assert.Len(t, ids, consultations.MaxActivePerAgent)

	h.LetGo()
	requireCompleted(t, append(pending, admitted)...)
	assert.Equal(t, consultations.MaxActivePerAgent, freeSlots(t, store, team, "frontend"))
}

// An escalation gives back the slot its consultation held, once: a
// follow-up whose specialist fails gives back the slot the reopen took;
// a follow-up caught as a loop before it reopened the consultation took
// none and gives none back (another consultation's slot stays held).
func TestEscalationsGiveTheSlotBackOnce(t *testing.T) {
	svc, store, _ := fixture(t)
	ctx := context.Background()
	h := ct.NewSpecialist()
	svc.Model = h
	other := holdRequests(t, svc, h, 1, frontendQuestions[5])

	failed, err := svc.Request(ctx, team, ask("frontend", frontendQuestions[0]))
	require.NoError(t, err)
	svc.Model = failing{}
	failed, err = svc.Exchange(ctx, team, failed.ID, consultations.ExchangeInput{Message: "Is created_at in UTC?"})
	require.NoError(t, err)
	assert.Equal(t, consultations.Escalated, failed.Status)
	require.NotNil(t, failed.Loop)
	assert.Equal(t, consultations.EscalSpecialistError, failed.Loop.Type)

	svc.Model = h
	stall, err := svc.Request(ctx, team, ask("frontend", frontendQuestions[1]))
	require.NoError(t, err)
	for _, m := range []string{"Which signing algorithm?", "How long do tokens live?", "Is refresh rotation on?", "Where is the key kept?"} {
		stall, err = svc.Exchange(ctx, team, stall.ID, consultations.ExchangeInput{Message: m})
		require.NoError(t, err)
		require.Equal(t, consultations.Completed, stall.Status)
	}
	stall, err = svc.Exchange(ctx, team, stall.ID, consultations.ExchangeInput{Message: "And the audience claim?"})
	require.NoError(t, err)
	assert.Equal(t, consultations.Escalated, stall.Status)
	assert.Equal(t, consultations.LoopStall, stall.Loop.Type)

	ids, err := store.ActiveConsultations(ctx, team, "frontend")
	require.NoError(t, err)
	assert.Len(t, ids, 1, "only the answer still being written holds a slot")
	assert.Equal(t, consultations.MaxActivePerAgent-1, freeSlots(t, store, team, "frontend"))
	h.LetGo()
	requireCompleted(t, other...)
}

// A consultation whose request was cut off holds its slot only while it is
// fresh: once idle longer than IdleLimit, it is closed when its requester
// needs the slot, and exactly its slot is given back. A reopen keeps it
// fresh; rating one left in_progress gives its slot back.
func TestACutOffConsultationGivesItsSlotBack(t *testing.T) {
	svc, store, _ := fixture(t)
	ctx := context.Background()
	clk, t0 := withClock(svc)
	kept, err := svc.Request(ctx, team, ask("frontend", frontendQuestions[0]))
	require.NoError(t, err)
	svc.Store = ct.CutOff{Store: store}
	for _, q := range frontendQuestions[1:3] {
		_, err := svc.Request(ctx, team, ask("frontend", q))
		require.Error(t, err)
	}
	list, _, err := svc.List(ctx, team, consultations.Filter{Status: consultations.Pending}, paging.Page{})
	require.NoError(t, err)
	require.Len(t, list, 2, "left pending")
	cut := []string{list[0].ID, list[1].ID}
	clk.Set(t0.Add(20 * time.Minute))
	_, err = svc.Exchange(ctx, team, kept.ID, consultations.ExchangeInput{Message: "And the avatar URL format?"})
	require.Error(t, err)
	svc.Store = store
	got, err := svc.Get(ctx, team, kept.ID)
	require.NoError(t, err)
	require.Equal(t, consultations.InProgress, got.Status, "reopened, its answer never saved")

	c, err := svc.Request(ctx, team, ask("frontend", frontendQuestions[3]))
	require.NoError(t, err)
	require.Equal(t, consultations.Escalated, c.Status, "three fresh active consultations hold the three slots")
	require.Equal(t, consultations.LoopTooManyActive, c.Loop.Type)
	assert.ElementsMatch(t, append([]string{kept.ID}, cut...), c.Loop.Evidence["active_consultations"])

	// Past the idle limit for the two cut off; the reopened one is fresh.
	clk.Set(t0.Add(consultations.IdleLimit + time.Minute))
	for _, q := range frontendQuestions[4:6] {
		c, err := svc.Request(ctx, team, ask("frontend", q))
		require.NoError(t, err)
		assert.Equal(t, consultations.Completed, c.Status, q)
	}
	for _, id := range cut {
		got, err := svc.Get(ctx, team, id)
		require.NoError(t, err)
		assert.Equal(t, consultations.Completed, got.Status, id)
		assert.Equal(t, consultations.ClosedIdle, got.ClosedReason, id)
		require.NotNil(t, got.CompletedAt)
		_, err = svc.RecordOutcome(ctx, team, id, consultations.OutcomeInput{Rating: 3})
		assert.Equal(t, "NotAnswered", ct.Reason(err), "closed without an answer: nothing to rate")
	}
	ids, err := store.ActiveConsultations(ctx, team, "frontend")
	require.NoError(t, err)
	assert.Equal(t, []string{kept.ID}, ids, "followed up 11 minutes ago: not idle")

	// Rated while in_progress: completed, its slot given back once.
	rated, err := svc.RecordOutcome(ctx, team, kept.ID, consultations.OutcomeInput{Rating: 4})
	require.NoError(t, err)
	assert.Equal(t, consultations.Completed, rated.Status)
	m, err := svc.Metrics(ctx, team)
	require.NoError(t, err)
	abandoned := 0
	for _, p := range m.Pairs {
		abandoned += p.ByOutcome["abandoned"]
	}
	assert.Equal(t, 2, abandoned)
	assert.Equal(t, consultations.MaxActivePerAgent, freeSlots(t, store, team, "frontend"))
}

// Only an answer being written is a wait: the specialist asking its
// requester back is a circular wait while the requester's question is
// being answered, not once it is answered (completed), and not once the
// requester's request was cut off and left idle past IdleLimit.
func TestOnlyAnAnswerBeingWrittenIsACircularWait(t *testing.T) {
	svc, store, _ := fixture(t)
	ctx := context.Background()
	clk, t0 := withClock(svc)
	h := ct.NewSpecialist()
	svc.Model = h
	back := func(q string) consultations.Consultation {
		t.Helper()
		c, err := svc.Request(ctx, team, ask("backend", q))
		require.NoError(t, err)
		require.Equal(t, "frontend", c.ConsultedAgent)
		return c
	}

	asking := ct.Background(func() (consultations.Consultation, error) {
		return svc.Request(ctx, team, ask("frontend", ct.Hold+" What fields does the User model API endpoint return?"))
	})
	h.Held(t, 1)
	circ := back("Which react ui css component shows the profile?")
	assert.Equal(t, consultations.Escalated, circ.Status)
	require.NotNil(t, circ.Loop)
	assert.Equal(t, consultations.LoopCircular, circ.Loop.Type)
	h.LetGo()
	a := <-asking
	require.NoError(t, a.Err)
	require.Equal(t, "backend", a.Consultation.ConsultedAgent)
	assert.Equal(t, a.Consultation.ID, circ.Loop.Evidence["open_consultation"])
	answered := back("Which react css layout renders the avatar?")
	assert.Equal(t, consultations.Completed, answered.Status, "frontend has its answer: no wait")
	assert.Nil(t, answered.Loop)

	// Cut off: a wait while fresh, none once idle.
	svc.Store = ct.CutOff{Store: store}
	_, err := svc.Request(ctx, team, ask("frontend", "Which database schema holds the user preferences?"))
	require.Error(t, err)
	svc.Store = store
	clk.Set(t0.Add(10 * time.Minute))
	assert.Equal(t, consultations.Escalated, back("Which react ui css theme does the settings page use?").Status)
	clk.Set(t0.Add(consultations.IdleLimit + time.Minute))
	idle := back("Which react hook loads the ui state?")
	assert.Equal(t, consultations.Completed, idle.Status)
	assert.Nil(t, idle.Loop)
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
	assert.Equal(t, consultations.MaxActivePerAgent, freeSlots(t, store, team, "frontend"), "its slot is free")
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
	_, err = svc.Exchange(ctx, team, cut.ID, consultations.ExchangeInput{Message: "still there?"})
	assert.Equal(t, "NotOpen", ct.Reason(err))
}

// refuseFirst refuses the first write that takes a slot as if the counter
// were full: the slot it wanted came free between that write and the
// reads that follow a refusal (another answer was saved).
type refuseFirst struct {
	consultations.Store
	mu      sync.Mutex
	refused bool
}

func (s *refuseFirst) once() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	first := !s.refused
	s.refused = true
	return first
}

func (s *refuseFirst) CreateConsultation(ctx context.Context, c consultations.Consultation, limit int) error {
	if s.once() {
		return consultations.ErrActiveLimit
	}
	return s.Store.CreateConsultation(ctx, c, limit)
}

func (s *refuseFirst) SaveConsultation(ctx context.Context, sv consultations.Save) error {
	if sv.Acquire > 0 && s.once() {
		return consultations.ErrActiveLimit
	}
	return s.Store.SaveConsultation(ctx, sv)
}

// A refused slot that is free by the time the holders are read is taken:
// the request is answered, the follow-up goes through, rather than
// escalated or refused.
func TestASlotFreedMeanwhileIsTaken(t *testing.T) {
	svc, store, _ := fixture(t)
	ctx := context.Background()
	svc.Store = &refuseFirst{Store: store}
	c, err := svc.Request(ctx, team, ask("frontend", frontendQuestions[0]))
	require.NoError(t, err)
	assert.Equal(t, consultations.Completed, c.Status)
	svc.Store = &refuseFirst{Store: store}
	c, err = svc.Exchange(ctx, team, c.ID, consultations.ExchangeInput{Message: "Is created_at in UTC?"})
	require.NoError(t, err)
	assert.Equal(t, consultations.Completed, c.Status)
	assert.Len(t, c.Exchanges, 2)
}

// legacyCounter is a store whose agents' counters were written before
// they recorded the ids of the consultations holding them.
type legacyCounter struct{ *memstore.Store }

func (legacyCounter) ActiveConsultations(context.Context, string, string) ([]string, error) {
	return nil, nil
}

// With a counter that records no ids, the requester's idle consultations
// are found in its history and closed to free its slots; another agent's
// idle consultations are not its to close.
func TestIdleConsultationsAreFoundInTheRequestersHistory(t *testing.T) {
	svc, store, _ := fixture(t)
	ctx := context.Background()
	clk, t0 := withClock(svc)
	idle := func(id, agent string) {
		c := consultations.Consultation{TeamID: team, ID: id, Status: consultations.Pending, RequestingAgent: agent,
			ConsultedAgent: "backend", Question: "probe " + id, Version: 1, CreatedAt: t0, UpdatedAt: t0}
		require.NoError(t, store.CreateConsultation(ctx, c, consultations.MaxActivePerAgent))
	}
	for i := range consultations.MaxActivePerAgent {
		idle(fmt.Sprintf("cons_mine%d", i), "frontend")
	}
	idle("cons_theirs", "security")
	clk.Set(t0.Add(consultations.IdleLimit + time.Minute))
	svc.Store = legacyCounter{store}

	c, err := svc.Request(ctx, team, ask("frontend", frontendQuestions[0]))
	require.NoError(t, err)
	assert.Equal(t, consultations.Completed, c.Status, "a slot was freed")
	mine, err := svc.Get(ctx, team, "cons_mine0")
	require.NoError(t, err)
	assert.Equal(t, consultations.ClosedIdle, mine.ClosedReason)
	theirs, err := svc.Get(ctx, team, "cons_theirs")
	require.NoError(t, err)
	assert.Equal(t, consultations.Pending, theirs.Status, "another agent's consultation is left alone")
}
