package tasktools_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/consultations"
	"github.com/conclave-ai/conclave/shared/conversations"
	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/models/localmodel"
	"github.com/conclave-ai/conclave/shared/paging"
	"github.com/conclave-ai/conclave/shared/tasktools"
	"github.com/conclave-ai/conclave/shared/toolset"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

var consultedRE = regexp.MustCompile(`^consultation (cons_\S+) with ([a-z-]+) is (in_progress|escalated)`)

// consult_specialist is the API's service with the working agent as the
// requester: the gate chooses (never the caller), and the tool is offered
// only when the service is wired.
func TestConsultSpecialistAsksThroughTheService(t *testing.T) {
	f := newFixture(t)
	kyra, err := f.store.GetAgent(context.Background(), team, "kyra")
	require.NoError(t, err)
	names := func() []string {
		var out []string
		for _, sp := range f.tools.Specs(kyra) {
			out = append(out, sp.Name)
		}
		return out
	}
	assert.NotContains(t, names(), toolset.ConsultSpecialist, "not wired: not offered")
	svc := consultations.New(f.store, localmodel.New(f.store), f.bus, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	f.tools.Consultations = svc
	assert.Contains(t, names(), toolset.ConsultSpecialist)

	p := f.working(t, "kyra")
	out := f.call(t, p, toolset.ConsultSpecialist, map[string]any{"question": "Is our JWT authentication vulnerable to token replay attacks?", "suggested_agent": "kyra",
		"context": map[string]any{"current_task": "auth review", "error_messages": []string{"token=abc123secretvalue rejected"}}})
	m := consultedRE.FindStringSubmatch(out)
	require.NotNil(t, m, out)
	assert.NotEqual(t, "kyra", m[2], "never the caller")
	assert.Contains(t, out, "Answer:")
	list, _, err := svc.List(context.Background(), team, consultations.Filter{Agent: "kyra"}, paging.Page{})
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, "kyra", list[0].RequestingAgent)
	assert.NotContains(t, list[0].Context.ErrorMessages[0], "abc123secretvalue")
	assert.Contains(t, f.call(t, p, toolset.ConsultSpecialist, map[string]any{"question": ""}), "rejected: question")
}

// consultVia wires the consultation service into f's tools.
func (f *fixture) consultVia(tb testing.TB) *consultations.Service {
	tb.Helper()
	svc := consultations.New(f.store, localmodel.New(f.store), f.bus, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	f.tools.Consultations = svc
	return svc
}

// The tool follows up on and closes the caller's consultations: each
// closed one gives its slot back, so an agent that closes what it asked
// can keep asking (without closing, the fourth would escalate as
// too_many_concurrent), and the specialist may then ask it back (no
// circular wait).
func TestConsultSpecialistFollowsUpAndCloses(t *testing.T) {
	f := newFixture(t)
	svc := f.consultVia(t)
	ctx := context.Background()
	p := f.working(t, "kyra")
	questions := []string{
		"Please review the retry function in worker.go for a bug",
		"Is this refactor of the parser code readable?",
		"Does this pull request need more tests for the cache function?",
		"Review the error handling code in the uploader for bugs",
	}
	var consulted string
	for i, q := range questions {
		out := f.call(t, p, toolset.ConsultSpecialist, map[string]any{"question": q})
		m := consultedRE.FindStringSubmatch(out)
		require.NotNil(t, m, out)
		require.Equal(t, "in_progress", m[3], "consultation %d: %s", i, out)
		assert.Contains(t, out, `"resolved": true`, "the answer tells how to close it")
		id := m[1]
		consulted = m[2]

		// Distinct follow-ups: the same one thrice would be a loop.
		follow := []string{"And what about the tests?", "Which naming would you pick?", "Should the timeout be configurable?", "Is the logging enough?"}[i]
		out = f.call(t, p, toolset.ConsultSpecialist, map[string]any{"consultation_id": id, "message": follow})
		assert.Contains(t, out, "consultation "+id+" with "+consulted+" is in_progress", out)
		c, err := svc.Get(ctx, team, id)
		require.NoError(t, err)
		require.Len(t, c.Exchanges, 2)
		assert.Equal(t, "clarification", c.Exchanges[1].Type)

		out = f.call(t, p, toolset.ConsultSpecialist, map[string]any{"consultation_id": id, "resolved": true, "rating": 4, "lessons_learned": fmt.Sprintf("lesson %d: retries need jitter", i)})
		assert.Contains(t, out, "is completed", out)
		assert.Contains(t, out, "Closed with your rating 4")
		c, err = svc.Get(ctx, team, id)
		require.NoError(t, err)
		assert.Equal(t, consultations.Completed, c.Status)
		require.NotNil(t, c.Outcome)
		assert.Equal(t, 4, c.Outcome.Rating)
		assert.NotEmpty(t, c.Outcome.MemoryID, "the lesson became a shared memory")
	}
	out := f.call(t, p, toolset.ConsultSpecialist, map[string]any{"question": "Is the new logging function easy to review?"})
	m := consultedRE.FindStringSubmatch(out)
	require.NotNil(t, m, out)
	assert.Equal(t, "in_progress", m[3], "closed consultations hold no slot: %s", out)
	open, consulted := m[1], m[2]

	// The specialist asks kyra back: a circular wait while kyra's
	// consultation of it is open, none once kyra closed it.
	askBack := func() []string {
		t.Helper()
		back := f.call(t, f.working(t, consulted), toolset.ConsultSpecialist, map[string]any{"question": "Can you help explain and plan this question for me?", "suggested_agent": "kyra"})
		m := consultedRE.FindStringSubmatch(back)
		require.NotNil(t, m, back)
		require.Equal(t, "kyra", m[2], back)
		return m
	}
	assert.Equal(t, "escalated", askBack()[3])
	f.call(t, p, toolset.ConsultSpecialist, map[string]any{"consultation_id": open, "resolved": true, "rating": 5})
	assert.Equal(t, "in_progress", askBack()[3])
}

// Follow-ups and outcomes are only for the caller's own consultations,
// one at a time, with a rating.
func TestConsultSpecialistRefusesWhatItCannotDo(t *testing.T) {
	f := newFixture(t)
	svc := f.consultVia(t)
	p := f.working(t, "kyra")
	out := f.call(t, p, toolset.ConsultSpecialist, map[string]any{"question": "Please review the retry function in worker.go for a bug"})
	m := consultedRE.FindStringSubmatch(out)
	require.NotNil(t, m, out)
	id := m[1]
	other := "dana"
	if m[2] == other {
		other = "wren"
	}
	for name, tc := range map[string]struct {
		caller workflow.TaskInput
		input  map[string]any
		want   string
	}{
		"no id":         {p, map[string]any{"message": "more?"}, "rejected: consultation_id is required"},
		"both":          {p, map[string]any{"consultation_id": id, "message": "more?", "resolved": true, "rating": 3}, "rejected: send a follow-up message or close"},
		"not yours":     {f.working(t, other), map[string]any{"consultation_id": id, "resolved": true, "rating": 5}, "rejected: consultation " + id + " is not one you asked"},
		"no rating":     {p, map[string]any{"consultation_id": id, "resolved": true}, "rejected: rating must be 1 to 5"},
		"unknown":       {p, map[string]any{"consultation_id": "cons_nope", "message": "hi"}, "rejected"},
		"empty follow":  {p, map[string]any{"consultation_id": id, "message": "   "}, "rejected: message must be"},
		"rating alone":  {p, map[string]any{"consultation_id": id, "rating": 5}, "rejected: rating and lessons_learned close a consultation"},
		"lessons alone": {p, map[string]any{"consultation_id": id, "lessons_learned": "x"}, "rejected: rating and lessons_learned close a consultation"},
		"new question":  {p, map[string]any{"consultation_id": id, "question": "and another thing?"}, "rejected: a question starts a new consultation"},
	} {
		assert.Contains(t, f.call(t, tc.caller, toolset.ConsultSpecialist, tc.input), tc.want, name)
	}
	c, err := svc.Get(context.Background(), team, id)
	require.NoError(t, err)
	assert.Equal(t, consultations.InProgress, c.Status, "nothing changed it")
	assert.Len(t, c.Exchanges, 1)
	assert.Nil(t, c.Outcome)
	// Reading it is allowed.
	assert.Contains(t, f.call(t, p, toolset.ConsultSpecialist, map[string]any{"consultation_id": id}), "consultation "+id+" with "+m[2]+" is in_progress")
}

// In a chat turn the tool asks within the turn's bound: answered in time,
// the answer is the tool's output; a specialist still thinking when the
// bound passes leaves the consultation escalated (specialist_failed) with
// its slot free, not pending.
func TestConsultSpecialistFromAChatTurn(t *testing.T) {
	f := newFixture(t)
	svc := f.consultVia(t)
	ctx := context.Background()
	kyra, err := f.store.GetAgent(ctx, team, "kyra")
	require.NoError(t, err)
	chat := tasktools.Chat{Tools: f.tools}
	offered := chat.Specs(kyra)
	require.Contains(t, names(offered), toolset.ConsultSpecialist)
	turn := func(waitUntil time.Time, q string) string {
		t.Helper()
		res, err := chat.Call(ctx, conversations.ToolCaller{TeamID: team, ConversationID: "conv_1", Agent: "kyra", WaitUntil: waitUntil, Offered: offered},
			models.ToolCall{ID: "call-1", Name: toolset.ConsultSpecialist, Input: fmt.Sprintf(`{"question": %q}`, q)})
		require.NoError(t, err)
		return res.Text
	}

	out := turn(time.Now().Add(time.Minute), "Please review the retry function in worker.go for a bug")
	m := consultedRE.FindStringSubmatch(out)
	require.NotNil(t, m, out)
	assert.Equal(t, "in_progress", m[3])
	assert.Contains(t, out, "Answer:")

	svc.Model = blockingModel{}
	svc.Store = ctxSaves{f.store}
	out = turn(time.Now().Add(1200*time.Millisecond), "Is this refactor of the parser code readable?")
	m = consultedRE.FindStringSubmatch(out)
	require.NotNil(t, m, out)
	assert.Equal(t, "escalated", m[3], out)
	assert.Contains(t, out, consultations.EscalSpecialistError)
	c, err := svc.Get(ctx, team, m[1])
	require.NoError(t, err)
	assert.Equal(t, consultations.Escalated, c.Status, "stored escalated, not pending")
	active, _, err := svc.List(ctx, team, consultations.Filter{Status: consultations.Pending, Agent: "kyra"}, paging.Page{})
	require.NoError(t, err)
	assert.Empty(t, active)
}

// blockingModel answers only when its caller gives up.
type blockingModel struct{}

func (blockingModel) Converse(ctx context.Context, _ models.Request) (models.Response, error) {
	<-ctx.Done()
	return models.Response{}, ctx.Err()
}

// ctxSaves fails a consultation's save on a done context, as the DynamoDB
// client does.
type ctxSaves struct{ consultations.Store }

func (s ctxSaves) SaveConsultation(ctx context.Context, sv consultations.Save) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.Store.SaveConsultation(ctx, sv)
}
