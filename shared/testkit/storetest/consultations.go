package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/team/messaging"
	"github.com/conclave-ai/conclave/shared/work/consultations"
)

// escalation is a new open escalation of c's (not stored).
func (f *fixture) escalation(c consultations.Consultation) consultations.Escalation {
	return consultations.Escalation{TeamID: f.team, ID: ids.New("esc"), ConsultationID: c.ID, RequestingAgent: c.RequestingAgent,
		ConsultedAgent: c.ConsultedAgent, Question: c.Question, Type: "consultation", Evidence: map[string]any{"rounds": 3.0},
		Status: consultations.EscalationOpen, CreatedAt: time.Now().UTC().Truncate(time.Millisecond)}
}

// escalated creates a consultation of requester's escalated from the
// start, with its open escalation.
func (f *fixture) escalated(t *testing.T, requester string) (consultations.Consultation, consultations.Escalation) {
	t.Helper()
	c := f.consultation(requester)
	c.Status = consultations.Escalated
	e := f.escalation(c)
	c.EscalationID = e.ID
	require.NoError(t, f.Consultations.CreateEscalated(context.Background(), c, e))
	return c, e
}

func consultationIDs(list []consultations.Consultation) []string {
	out := []string{}
	for _, c := range list {
		out = append(out, c.ID)
	}
	return out
}

// consultationsListed: a consultation created escalated is stored with its
// escalation once (ids taken refuse it whole) and holds no slot; the
// team's consultations are listed newest first, a page at a time, by
// status and by agent (asking or asked); escalations by status; another
// team reads none.
func consultationsListed(t *testing.T, f *fixture) {
	ctx := context.Background()
	c1 := f.consultation("ann")
	require.NoError(t, f.Consultations.CreateConsultation(ctx, c1, consultations.MaxActivePerAgent))
	c2 := f.consultation("bob")
	require.NoError(t, f.Consultations.CreateConsultation(ctx, c2, consultations.MaxActivePerAgent))
	c3, e3 := f.escalated(t, "ann")
	again := c3
	again.Question = "written twice"
	refused(t, f.Consultations.CreateEscalated(ctx, again, e3), apperr.ECONFLICT, "")
	fresh := f.escalation(c3)
	refused(t, f.Consultations.CreateEscalated(ctx, again, fresh), apperr.ECONFLICT, "")
	_, err := f.Consultations.GetEscalation(ctx, f.team, fresh.ID)
	refused(t, err, apperr.ENOTFOUND, "") // a refused create writes no escalation
	got, err := f.Consultations.GetConsultation(ctx, f.team, c3.ID)
	require.NoError(t, err)
	assert.Equal(t, c3.Question, got.Question, "as first written")
	assert.Equal(t, consultations.Escalated, got.Status)
	active, err := f.Consultations.ActiveConsultations(ctx, f.team, "ann")
	require.NoError(t, err)
	assert.Equal(t, []string{c1.ID}, active, "an escalated consultation holds no slot")

	esc, err := f.Consultations.GetEscalation(ctx, f.team, e3.ID)
	require.NoError(t, err)
	assert.Equal(t, f.team, esc.TeamID)
	assert.Equal(t, []any{c3.ID, "ann", "cat", consultations.EscalationOpen}, []any{esc.ConsultationID, esc.RequestingAgent, esc.ConsultedAgent, esc.Status})
	assert.Equal(t, e3.Evidence, esc.Evidence)

	list := func(filter consultations.Filter) func(paging.Page) ([]consultations.Consultation, string, error) {
		return func(p paging.Page) ([]consultations.Consultation, string, error) {
			return f.Consultations.ListConsultations(ctx, f.team, filter, p)
		}
	}
	key := func(c consultations.Consultation) string { return c.ID }
	for _, tc := range []struct {
		name   string
		filter consultations.Filter
		want   []string
	}{
		{"all", consultations.Filter{}, []string{c3.ID, c2.ID, c1.ID}},
		{"a status", consultations.Filter{Status: consultations.Pending}, []string{c2.ID, c1.ID}},
		{"an asking agent", consultations.Filter{Agent: "ann"}, []string{c3.ID, c1.ID}},
		{"an asked agent, with a status", consultations.Filter{Agent: "cat", Status: consultations.Escalated}, []string{c3.ID}},
	} {
		assert.Equal(t, tc.want, pages(t, 1, list(tc.filter), key), "%s, newest first, a page at a time", tc.name)
	}
	theirs, _, err := f.Consultations.ListConsultations(ctx, f.otherTeam(), consultations.Filter{}, paging.Page{Limit: 10})
	require.NoError(t, err)
	assert.Empty(t, theirs)
	boundToken(t, list(consultations.Filter{}), func(p paging.Page) ([]consultations.Consultation, string, error) {
		return f.Consultations.ListConsultations(ctx, f.otherTeam(), consultations.Filter{}, p)
	})
	resolved, _, err := f.Consultations.ListEscalations(ctx, f.team, consultations.EscalationResolved, paging.Page{Limit: 10})
	require.NoError(t, err)
	assert.Empty(t, resolved)
	_, err = f.Consultations.GetEscalation(ctx, f.otherTeam(), e3.ID)
	refused(t, err, apperr.ENOTFOUND, "")
}

// consultationSaved: a save is conditioned on the version read
// (ErrChanged), moves the requester's counter as it says (a release never
// below zero, an acquire below its limit: ErrActiveLimit) and creates the
// escalation and memory it brings (ids taken refuse it); a memory ends
// its author's cached context; a refused save writes nothing.
func consultationSaved(t *testing.T, f *fixture) {
	ctx := context.Background()
	c := f.consultation("ann")
	require.NoError(t, f.Consultations.CreateConsultation(ctx, c, consultations.MaxActivePerAgent))
	save := func(sv consultations.Save) error { return f.Consultations.SaveConsultation(ctx, sv) }
	next := func(from consultations.Consultation, st consultations.Status) consultations.Consultation {
		from.Version++
		from.Status, from.UpdatedAt = st, time.Now().UTC()
		return from
	}
	active := func() []string {
		t.Helper()
		list, err := f.Consultations.ActiveConsultations(ctx, f.team, "ann")
		require.NoError(t, err)
		return list
	}
	started := next(c, consultations.InProgress)
	require.NoError(t, save(consultations.Save{Consultation: started}))
	assert.ErrorIs(t, save(consultations.Save{Consultation: next(c, consultations.Completed)}), consultations.ErrChanged, "from a stale read")
	assert.ErrorIs(t, save(consultations.Save{Consultation: next(f.consultation("ann"), consultations.InProgress)}), consultations.ErrChanged,
		"a consultation never created")

	f.cacheContext(t, "ann")
	epoch, err := f.Memories.MemoryEpoch(ctx, f.team)
	require.NoError(t, err)
	lesson := f.memory("ann", "ask cat early")
	done := next(started, consultations.Completed)
	require.NoError(t, save(consultations.Save{Consultation: done, Release: true, Memory: &lesson}))
	assert.Empty(t, active(), "completed: its slot given back")
	assert.Contains(t, f.memoryIDs(t), lesson.ID)
	_, hit, err := f.Memories.GetContext(ctx, f.team, "ann")
	require.NoError(t, err)
	assert.False(t, hit, "the lesson's author's context ended")
	now, err := f.Memories.MemoryEpoch(ctx, f.team)
	require.NoError(t, err)
	assert.Greater(t, now, epoch)

	refused(t, save(consultations.Save{Consultation: next(done, consultations.Completed), Release: true}), apperr.ECONFLICT, "")
	reopened := next(done, consultations.InProgress)
	require.NoError(t, save(consultations.Save{Consultation: reopened, Acquire: 1}))
	assert.Equal(t, []string{c.ID}, active(), "reopened: a slot again")
	other := f.consultation("ann")
	require.NoError(t, f.Consultations.CreateConsultation(ctx, other, consultations.MaxActivePerAgent))
	otherStarted := next(other, consultations.InProgress)
	assert.ErrorIs(t, save(consultations.Save{Consultation: otherStarted, Acquire: 2}), consultations.ErrActiveLimit, "two held, two the limit")

	e := f.escalation(reopened)
	escalated := next(reopened, consultations.Escalated)
	require.NoError(t, save(consultations.Save{Consultation: escalated, Release: true, Escalation: &e}))
	stored, err := f.Consultations.GetEscalation(ctx, f.team, e.ID)
	require.NoError(t, err)
	assert.Equal(t, consultations.EscalationOpen, stored.Status)
	taken := lesson
	for _, sv := range []consultations.Save{
		{Consultation: next(escalated, consultations.Escalated), Escalation: &e},
		{Consultation: next(escalated, consultations.Escalated), Memory: &taken},
	} {
		refused(t, save(sv), apperr.ECONFLICT, "")
	}
	got, err := f.Consultations.GetConsultation(ctx, f.team, c.ID)
	require.NoError(t, err)
	assert.Equal(t, escalated.Version, got.Version, "no refused save wrote the consultation")
	assert.Equal(t, []string{other.ID}, active())
}

// escalationResolved: an escalation is resolved once, with its
// consultation at the version read and the answer delivered to the
// requester in the same write; a second resolution (ECONFLICT, reason
// Resolved) or one from a stale read of the consultation (ErrChanged)
// writes nothing.
func escalationResolved(t *testing.T, f *fixture) {
	ctx := context.Background()
	c, e := f.escalated(t, "ann")
	at := time.Now().UTC().Truncate(time.Millisecond)
	answer := f.agentMessage("ann", "the answer")
	answer.From, answer.Type = "user:key_contract", "consultation_answer"
	resolve := func(e consultations.Escalation, c consultations.Consultation, msg messaging.Message) error {
		e.Status, e.Resolution, e.ResolvedBy, e.ResolvedAt, e.MessageID = consultations.EscalationResolved, "do it", "user:key_contract", &at, msg.ID
		c.Version++
		c.Status = consultations.Completed
		return f.Consultations.ResolveEscalation(ctx, e, c, msg)
	}
	require.NoError(t, resolve(e, c, answer))
	got, err := f.Consultations.GetEscalation(ctx, f.team, e.ID)
	require.NoError(t, err)
	assert.Equal(t, consultations.EscalationResolved, got.Status)
	assert.Equal(t, "do it", got.Resolution)
	cons, err := f.Consultations.GetConsultation(ctx, f.team, c.ID)
	require.NoError(t, err)
	assert.Equal(t, consultations.Completed, cons.Status)
	msg, err := f.Messages.GetAgentMessage(ctx, f.team, answer.ID)
	require.NoError(t, err)
	assert.Equal(t, "the answer", msg.Content)
	inbox, _, err := f.Messages.ListInbox(ctx, f.team, "ann", true, paging.Page{Limit: 10})
	require.NoError(t, err)
	assert.Equal(t, []string{answer.ID}, []string{inbox[0].ID}, "delivered unread")

	err = resolve(e, cons, f.agentMessage("ann", "again"))
	refused(t, err, apperr.ECONFLICT, "Resolved")
	c2, e2 := f.escalated(t, "bob")
	late := f.agentMessage("bob", "too late")
	stale := c2
	stale.Version = 7
	assert.True(t, errors.Is(resolve(e2, stale, late), consultations.ErrChanged), "a stale read of the consultation")
	open, err := f.Consultations.GetEscalation(ctx, f.team, e2.ID)
	require.NoError(t, err)
	assert.Equal(t, consultations.EscalationOpen, open.Status, "a refused resolution writes nothing")
	_, err = f.Messages.GetAgentMessage(ctx, f.team, late.ID)
	refused(t, err, apperr.ENOTFOUND, "")
	bobs, _, err := f.Messages.ListInbox(ctx, f.team, "bob", false, paging.Page{Limit: 10})
	require.NoError(t, err)
	assert.Empty(t, bobs)
	list, _, err := f.Consultations.ListEscalations(ctx, f.team, consultations.EscalationOpen, paging.Page{Limit: 10})
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, e2.ID, list[0].ID, "the open ones only")
}
